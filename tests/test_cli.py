"""The commands a user types, end to end on `tiny`."""

import json

import pytest

from harness.base.results import read_runs
from harness.cli import main
from harness.engines.writers import writers
from reports.baseline import newest_results_folder
from reports.fits import fits

pytestmark = pytest.mark.usefixtures("cli_settings")


def test_writers_lists_every_backend_with_its_operations(capsys):
    assert main(["writers"]) == 0
    out = capsys.readouterr().out
    for name in writers():
        assert name in out
    assert "unsupported" in out
    spark_row = next(line for line in out.splitlines() if line.startswith("│ spark "))
    assert spark_row.count("no (") == 2, spark_row  # external and local-services; embedded: yes
    number = spark_row.split("no (")[1].split(")")[0]
    assert f"({number}) Spark needs the embedded stack's SQLite catalog, not a rest catalog" in out


def test_matrix_prints_a_summary_and_writes_runs_and_environment(capsys, settings, tiny_sets):
    code = main(
        [
            "matrix",
            "--preset",
            "tiny",
            "--scenarios",
            "append,upsert",
            "--batch-rows",
            "2500",
            "--writers",
            "pyiceberg-add-files,pyiceberg-table",
            "--memory",
            "1g",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "icebench matrix" in out and "pyiceberg-add-files" in out
    folder = newest_results_folder(settings.results_dir)
    runs = read_runs(folder)
    assert [(r.scenario, r.writer, r.status) for r in runs] == [
        ("append", "pyiceberg-add-files", "ok"),
        ("append", "pyiceberg-table", "ok"),
        ("upsert", "pyiceberg-add-files", "unsupported"),
        ("upsert", "pyiceberg-table", "ok"),
    ]
    environment = json.loads((folder / "environment.json").read_text())
    assert environment["versions"]["pyiceberg"] == "0.12.0"
    assert environment["isolation"] in ("cgroup", "rlimit")


def test_matrix_config_file(capsys, settings, tiny_sets, tmp_path):
    config = tmp_path / "bench.toml"
    config.write_text(
        '[settings]\nmemory = "1g"\nbatch_rows = 5000\n\n'
        '[matrix]\npresets = ["tiny"]\nscenarios = ["replace"]\nwriters = ["pyiceberg-reader"]\n'
    )
    assert main(["matrix", "--config", str(config)]) == 0
    (run,) = read_runs(newest_results_folder(settings.results_dir))
    assert (run.scenario, run.writer, run.batch_rows, run.cap_bytes) == (
        "replace",
        "pyiceberg-reader",
        5000,
        2**30,
    )
    assert run.verdict.passed


def test_matrix_config_with_unknown_key_is_one_line(capsys, tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('[matrix]\nwritter = ["x"]\n')
    assert main(["matrix", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(config) in err and len(err.splitlines()) == 1


def test_scale_fits_a_growth_exponent(capsys, settings, tiny_sets):
    code = main(
        [
            "scale",
            "--writer",
            "pyiceberg-add-files",
            "--preset",
            "tiny",
            "--batches",
            "2,4,8",
            "--memory",
            "1g",
        ]
    )
    assert code == 0
    assert "growth_exponent" in capsys.readouterr().out
    runs = read_runs(newest_results_folder(settings.results_dir))
    (result,) = fits(runs)  # computed from the points in runs.jsonl
    assert [p.batches for p in result.points] == [2, 4, 8]
    assert result.key.batch_rows == 10_000 // 8
    assert result.growth_exponent is not None and result.tail_exponent is not None
    assert all(r.verdict.passed for r in runs)  # prefixes of the set, judged against their own checksum
    assert [r.batches for r in runs] == [2, 4, 8]
    assert main(["summary", str(newest_results_folder(settings.results_dir))]) == 0
    assert "growth_exponent" in capsys.readouterr().out
    assert main(["summary", str(newest_results_folder(settings.results_dir)), "--markdown"]) == 0
    # Scale points are labelled as such: prefixes of the set, not the whole set a matrix run writes.
    assert "| append (scale, 2 batches) | pyiceberg-add-files | ok |" in capsys.readouterr().out


def test_generate_writes_a_set_with_manifest(capsys, tmp_path):
    out = tmp_path / "set"
    assert (
        main(
            [
                "generate",
                "--rows",
                "3000",
                "--columns",
                "12",
                "--files",
                "2",
                "--seed",
                "7",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rows"] == 3000 and manifest["columns"] == 12 and len(manifest["files"]) == 2
    changes = tmp_path / "changes"
    assert main(["generate", "--changes-of", str(out), "--out", str(changes)]) == 0
    assert json.loads((changes / "manifest.json").read_text())["kind"] == "changes"


def test_a_worker_over_its_time_limit_is_a_recorded_timeout_and_the_table_is_untouched(settings, tiny_sets):
    code = main(["run", "--scenario", "replace", "--writer", "pyiceberg-txn-batches", "--timeout", "0.5"])
    assert code == 0
    (record,) = read_runs(newest_results_folder(settings.results_dir))
    assert (record.status, record.error) == ("error", "worker timed out after 0.5 s")
    checks = {check.name: check for check in record.verdict.checks}
    assert checks["table_unchanged_after_failure"].passed and checks["content_checksum"].passed
