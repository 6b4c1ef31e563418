"""Bad input: one line naming the culprit, a non-zero exit, and the table where it was."""

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from generators.manifest import DatasetManifest, file_entry
from harness.base.results import read_runs
from harness.cli.main import main


def run_cli(capsys, settings, *args: str) -> tuple[int, str]:
    code = main(
        [
            "run",
            "--batch-rows",
            str(settings.batch_rows),
            "--results",
            str(settings.results_dir),
            "--memory",
            "1g",
            *args,
        ]
    )
    err = capsys.readouterr().err.strip()
    return code, err


def last_record(settings):
    newest = max(settings.results_dir.iterdir(), key=lambda p: p.stat().st_mtime)
    return read_runs(newest)[-1]


@pytest.fixture(autouse=True)
def _isolated_data(settings, monkeypatch):
    monkeypatch.setenv("ICEBENCH_DATA_DIR", str(settings.data_dir))


def corrupt_middle(path: Path) -> None:
    """Overwrites the column data between the magic bytes and the footer; the footer stays valid."""
    footer_start = path.stat().st_size - 8 - pq.ParquetFile(path).metadata.serialized_size
    with path.open("r+b") as handle:
        handle.seek(4)
        handle.write(b"\xff" * (footer_start - 4))


def restamp(directory: Path) -> None:
    """The manifest lists the files as they now are: a set its maker broke, not a cache that
    changed behind its manifest (which is refused before any run: test_cache_integrity.py)."""
    manifest = DatasetManifest.load(directory)
    entries = [file_entry(path, pq.read_metadata(path).num_rows) for path in manifest.file_paths(directory)]
    manifest.model_copy(update={"files": entries}).save(directory)


def copy_set(tiny_sets, name: str, target: Path) -> Path:
    shutil.copytree(tiny_sets[name].directory, target)
    return target


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (["--scenario", "append", "--writer", "no-such-writer"], "unknown writer 'no-such-writer'"),
        (
            ["--scenario", "no-such-scenario", "--writer", "pyiceberg-table"],
            "unknown scenario 'no-such-scenario'",
        ),
        (
            ["--scenario", "append", "--writer", "pyiceberg-table", "--preset", "huge"],
            "unknown preset 'huge'",
        ),
        (["--scenario", "append", "--writer", "pyiceberg-table", "--source", "/no/such/dir"], "/no/such/dir"),
    ],
)
def test_unknown_names_and_missing_source(capsys, settings, tiny_sets, args, culprit):
    code, err = run_cli(capsys, settings, *args)
    assert code == 2
    assert culprit in err
    assert len(err.splitlines()) == 1


def test_impossible_cap_is_rejected_before_any_work(capsys, settings, tiny_sets):
    code, err = run_cli(
        capsys, settings, "--scenario", "append", "--writer", "pyiceberg-table", "--memory", "1k"
    )
    assert code == 2 and "memory cap '1k'" in err


def test_cap_too_small_for_the_worker_to_start(capsys, settings, tiny_sets):
    code, err = run_cli(
        capsys, settings, "--scenario", "append", "--writer", "pyiceberg-table", "--memory", "24m"
    )
    assert code == 2
    assert "too small for the worker to start" in err and len(err.splitlines()) == 1
    assert "OOM-killed" in err  # what happened, not a pointer to an empty log
    assert ("logged nothing" in err) != ("worker.log" in err)  # a log is named only if it holds something


def test_truncated_parquet_file_is_named_before_the_table_is_touched(capsys, settings, tiny_sets, tmp_path):
    source = copy_set(tiny_sets, "base", tmp_path / "truncated")
    victim = source / "part-00001.parquet"
    victim.write_bytes(victim.read_bytes()[:1000])
    code, err = run_cli(
        capsys, settings, "--scenario", "append", "--writer", "pyiceberg-table", "--source", str(source)
    )
    assert code == 2
    assert str(victim) in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("writer", ["pyiceberg-txn-batches", "pyiceberg-add-files", "pyiceberg-fast-append"])
def test_corrupt_file_mid_replace_leaves_the_table_at_its_previous_snapshot(
    capsys, settings, tiny_sets, tmp_path, writer
):
    # The first file is fine, so the writer has staged data files before it meets the bad one.
    source = copy_set(tiny_sets, "replacement", tmp_path / "corrupt")
    victim = source / "part-00001.parquet"
    corrupt_middle(victim)
    restamp(source)
    code, err = run_cli(
        capsys,
        settings,
        "--scenario",
        "replace",
        "--writer",
        writer,
        "--source",
        str(source),
        "--base",
        str(tiny_sets["base"].directory),
    )
    assert code == 2
    assert str(victim) in err and len(err.splitlines()) == 1
    record = last_record(settings)
    assert record.status == "error"
    checks = {c.name: c for c in record.verdict.checks}
    assert checks["table_unchanged_after_failure"].passed
    assert checks["content_checksum"].passed and checks["row_count"].passed  # still the base set


def run_upsert(capsys, settings, source, base) -> tuple[int, str]:
    return run_cli(
        capsys, settings, "--scenario", "upsert", "--writer", "pyiceberg-txn-batches",
        "--source", str(source.directory), "--base", str(base.directory),
    )  # fmt: skip


def test_source_whose_schema_does_not_match_the_table(capsys, settings, tiny_sets):
    # A change set carrying an extra column, upserted into a table that never got that column.
    code, err = run_upsert(capsys, settings, tiny_sets["changes-evolved"], tiny_sets["base"])
    assert code == 2
    assert "column evolved_note is not in table bench.upsert" in err
    record = last_record(settings)
    assert {c.name: c for c in record.verdict.checks}["table_unchanged_after_failure"].passed


def test_file_of_another_schema_inside_a_set(capsys, settings, tiny_sets, tmp_path):
    source = copy_set(tiny_sets, "base", tmp_path / "mixed")
    shutil.copy(tiny_sets["changes-evolved"].directory / "part-00000.parquet", source / "part-00001.parquet")
    restamp(source)
    code, err = run_cli(
        capsys, settings, "--scenario", "append", "--writer", "pyiceberg-table", "--source", str(source)
    )
    assert code == 2
    assert "part-00001.parquet" in err and "evolved_note" in err


def test_change_set_of_another_base_is_refused(capsys, settings, tiny_sets):
    code, err = run_upsert(capsys, settings, tiny_sets["changes"], tiny_sets["replacement"])
    assert code == 2 and "was not made from base set" in err
