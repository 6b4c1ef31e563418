"""The commands a user types, end to end on `tiny`."""

import json
import re

import pytest

from generators.presets import PRESETS
from harness.base.results import read_calibration, read_runs
from harness.cli.main import main
from harness.engines.writers import writers
from harness.model import Check, RunRecord, Verdict
from reports.baseline import build_baseline, newest_results_folder
from reports.fits import fits
from reports.verdict import VerdictsFailed, require_passed
from scenarios import scenarios

pytestmark = pytest.mark.usefixtures("cli_settings")


def test_writers_lists_every_backend_with_its_operations(capsys):
    assert main(["writers"]) == 0
    out = capsys.readouterr().out
    for name in writers():
        assert name in out
    assert "unsupported" in out
    spark_row = next(line for line in out.splitlines() if line.startswith("│ spark "))
    assert spark_row.count("yes") >= 3, spark_row  # embedded, local-services and external
    duckdb_row = next(line for line in out.splitlines() if line.startswith("│ duckdb "))
    assert duckdb_row.count("no (") == 1, duckdb_row  # embedded's SQLite catalog
    number = duckdb_row.split("no (")[1].split(")")[0]
    assert f"({number}) DuckDB's iceberg extension writes only through a REST catalog" in out


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
    # The machine's speed, sampled as the round began and after it: what the gate divides times by.
    samples = read_calibration(folder)
    assert len(samples) == 2 and all(sample.cpu_s > 0 and sample.wall_s > 0 for sample in samples)
    assert build_baseline([folder]).machine is not None


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


def test_version_names_the_package_and_the_commit(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert re.fullmatch(
        r"icebench \d+\.\d+\.\d+(, commit [0-9a-f]{12}( \(modified\))?)?\n", capsys.readouterr().out
    )


def test_summary_without_a_folder_shows_the_newest(capsys, settings, tiny_sets):
    assert main(["run", "--scenario", "append", "--writer", "pyiceberg-fast-append", "--preset", "tiny"]) == 0
    newest = newest_results_folder(settings.results_dir)
    capsys.readouterr()
    assert main(["summary"]) == 0
    assert f"icebench {newest.name}" in capsys.readouterr().out


def test_summary_with_no_results_anywhere_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ICEBENCH_RESULTS_DIR", str(tmp_path / "none"))
    assert main(["summary"]) == 2
    missing = tmp_path / "none"
    err = capsys.readouterr().err
    assert (
        err == f"icebench: error: no results folder under {missing}: name one, or run icebench matrix first\n"
    )


@pytest.mark.parametrize(
    ("flags", "near"),
    [
        (
            ["--scenario", "apend", "--writer", "pyiceberg-table"],
            "unknown scenario 'apend' (did you mean append?)",
        ),
        (
            ["--scenario", "append", "--writer", "pyiceberg-fast-apend"],
            "unknown writer 'pyiceberg-fast-apend' (did you mean pyiceberg-fast-append?)",
        ),
        (
            ["--scenario", "append", "--writer", "pyiceberg-table", "--preset", "smal"],
            "unknown preset 'smal' (did you mean small?)",
        ),
        (
            ["--scenario", "append", "--writer", "pyiceberg-table", "--stack", "embeded"],
            "unknown stack 'embeded' (did you mean embedded?)",
        ),
    ],
)
def test_a_near_miss_of_a_name_is_suggested(capsys, flags, near):
    assert main(["run", *flags]) == 2
    err = capsys.readouterr().err
    # the flag named first, then the near miss (argparse's own line)
    assert err.startswith("icebench: error: argument --") and err.count("\n") == 1
    assert f"{near}; choose from " in err


def test_help_lists_the_names_whole(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")  # narrow: argparse wraps every help text
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    words = set(out.split())
    for name in [*writers(), *scenarios(), *PRESETS]:
        assert name in words or f"{name}," in words, name  # never split at a hyphen
    assert not [line for line in out.splitlines() if line.rstrip().endswith("-")]


def test_run_names_the_upstream_issue_of_a_failed_check(capsys, tiny_sets):
    """pyiceberg's upsert after add_column (#2467): `run` prints the issue beside the failed check
    (once swallowed by rich, which read `[apache/...]` as a style tag)."""
    main(["run", "--scenario", "schema-evolution-upsert", "--writer", "pyiceberg-table"])
    out = capsys.readouterr().out
    assert "failed operation_completed" in out and "[apache/iceberg-python#2467]" in out, out


def test_exit_code_policy_failed_runs_are_results_unless_asked(capsys, tiny_sets):
    """Default exit 0 whatever the verdict; --fail-on-verdict: 3 when a run did not pass, naming
    it; 0 when every run passed."""
    naive = ["run", "--scenario", "append", "--writer", "pyiceberg-fast-append-naive", "--batch-rows", "2000"]
    assert main([*naive, "--fail-on-verdict"]) == 3
    err = capsys.readouterr().err
    assert err == (
        "icebench: error: 1 of 1 runs did not pass: append x pyiceberg-fast-append-naive "
        "(FAIL keys_unique, key_set, content_checksum +2)\n"
    )
    passing = ["run", "--scenario", "append", "--writer", "pyiceberg-add-files", "--fail-on-verdict"]
    assert main(passing) == 0
    assert (
        main(["run", "--scenario", "append", "--writer", "duckdb", "--fail-on-verdict"]) == 0
    )  # unsupported: REST catalogs only


def test_fail_on_verdict_counts_every_way_a_run_can_fail():
    ok = _record("pyiceberg-table", "ok", passed=True)
    with pytest.raises(VerdictsFailed) as raised:
        require_passed(
            [
                ok,
                _record("a", "oom"),
                _record("b", "error"),
                _record("c", "ok", passed=False),
                _record("d", "ok"),
                _record("e", "unsupported"),
            ]
        )
    assert raised.value.exit_code == 3
    assert str(raised.value) == (
        "4 of 5 runs did not pass: append x a (OOM), append x b (error), append x c (FAIL keys_unique)"
        " and 1 more"
    )
    require_passed([ok, _record("e", "unsupported")])  # nothing raised


def _record(writer: str, status: str, passed: bool | None = None) -> RunRecord:
    """A record as a run leaves it; `passed` None: the oracle did not judge the table."""
    verdict = None
    if passed is not None:
        verdict = Verdict(
            passed=passed,
            checks=[Check(name="keys_unique", passed=passed, reason=None if passed else "2 duplicate keys")],
        )
    return RunRecord(
        run_id="synthetic", scenario="append", writer=writer, preset="tiny", stack="embedded",
        operation="append", status=status, rows=10, batch_rows=10, isolation="cgroup",
        started_at="2026-01-01T00:00:00+00:00", verdict=verdict,
    )  # fmt: skip
