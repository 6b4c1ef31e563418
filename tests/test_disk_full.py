"""A full disk is a recorded error with its reason, never a crash: results on a small tmpfs make
every run an error naming ENOSPC and the matrix finishes; a disk that fills after the write still
gets the table judged; a record that cannot be written is said and fails the command; a full data
cache leaves no partial set."""

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.base import results
from harness.base.results import read_runs, write_whole
from harness.cli.main import main
from harness.run import runner
from harness.run.runner import Runner

NO_SPACE = "No space left on device"


def tmpfs(mount_point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `mount_point` while the test runs (skipped where none can be)."""
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    yield from tmpfs(tmp_path / "small-disk", "256k")


def test_every_run_on_a_full_disk_is_a_recorded_error_and_the_matrix_finishes(
    capsys, cli_settings, tiny_sets, small_disk
):
    code = main(
        ["matrix", "--preset", "tiny", "--scenarios", "append,upsert,replace",
         "--writers", "pyiceberg-table,pyiceberg-commit-per-batch", "--memory", "1g",
         "--results", str(small_disk / "results")]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    (folder,) = (small_disk / "results").iterdir()
    records = read_runs(folder)
    assert len(records) == 6
    for record in records:
        assert record.status == "error", record
        assert NO_SPACE in (record.error or ""), record.error
    assert not list(folder.glob("work/*/warehouse"))  # each run's files removed: the space came back


def test_a_full_data_cache_is_one_line_and_leaves_no_partial_set(capsys, small_disk, tmp_path, monkeypatch):
    monkeypatch.setenv("ICEBENCH_DATA_DIR", str(small_disk / "data"))
    code = main(
        ["run", "--scenario", "append", "--writer", "pyiceberg-table", "--preset", "tiny",
         "--results", str(tmp_path / "results")]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and NO_SPACE in err and len(err.splitlines()) == 1, err
    assert str(small_disk / "data") in err  # where the set was going: Arrow's error names no file
    leftovers = [p for p in (small_disk / "data").rglob("*") if p.is_dir() and "partial" in p.name]
    assert not leftovers
    assert not [p for p in (small_disk / "data").rglob("*.parquet")]


def test_a_report_that_does_not_fit_leaves_no_partial_file(small_disk):
    filler = small_disk / "filler"
    with pytest.raises(OSError, match="No space left"):
        filler.write_bytes(b"x" * (1 << 20))  # the disk is full now
    with pytest.raises(OSError, match="No space left"):
        write_whole(small_disk / "result.json", "x" * (1 << 16))
    assert sorted(path.name for path in small_disk.iterdir()) == ["filler"]


@pytest.fixture
def roomy_disk(tmp_path: Path) -> Iterator[Path]:
    """Room for a tiny run, until a test fills it."""
    yield from tmpfs(tmp_path / "roomy-disk", "64m")


def run_tiny_append(results: Path) -> int:
    return main(
        ["run", "--scenario", "append", "--writer", "pyiceberg-table", "--preset", "tiny",
         "--memory", "1g", "--results", str(results)]
    )  # fmt: skip


def fill(disk: Path) -> None:
    with (disk / "filler").open("wb") as filler, contextlib.suppress(OSError):
        while True:
            filler.write(b"\0" * (1 << 20))
            filler.flush()


def test_a_disk_that_fills_after_the_write_still_gets_the_table_judged(
    capsys, cli_settings, tiny_sets, roomy_disk, monkeypatch
):
    """The worker wrote its table, then the disk filled: the verdict stands, the scans that need
    a file of the harness's are the recorded error, and nothing blames the writer."""
    judge = Runner._judge

    def judge_on_a_full_disk(self: Runner, *args: Any, **kwargs: Any) -> Any:
        fill(roomy_disk)
        return judge(self, *args, **kwargs)

    monkeypatch.setattr(Runner, "_judge", judge_on_a_full_disk)
    code = run_tiny_append(roomy_disk / "results")
    assert code == 0, capsys.readouterr().err
    (record,) = read_runs(next((roomy_disk / "results").iterdir()))
    assert record.status == "ok" and record.verdict is not None and record.verdict.passed, record
    assert "the harness could not run the scans" in (record.scan_error or ""), record.scan_error
    assert NO_SPACE in (record.scan_error or "")


def test_a_record_that_cannot_be_written_is_said_and_fails_the_command(
    capsys, cli_settings, tiny_sets, tmp_path, monkeypatch
):
    def full(path: Path, line: str) -> None:
        raise OSError(errno.ENOSPC, NO_SPACE, str(path))

    monkeypatch.setattr(results, "append_line", full)
    code = run_tiny_append(tmp_path / "results")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    said = [line for line in err if "could not be written" in line]
    assert len(said) == 2, err
    assert "append x pyiceberg-table" in said[0] and NO_SPACE in said[0] and "it was PASS" in said[0]
    assert said[1].startswith("icebench: error: 1 run records could not be written to ")


def test_a_judge_that_cannot_write_its_own_files_blames_no_writer(
    capsys, cli_settings, tiny_sets, tmp_path, monkeypatch
):
    """A verifier's spec file on a full disk: the run is the harness's error, the worker's figures
    kept, never a writer's FAIL table_readable."""

    def full(*_: Any, **__: Any) -> Any:
        raise OSError(errno.ENOSPC, NO_SPACE, "verifier-spec.json")

    monkeypatch.setattr(runner, "judge", full)
    code = run_tiny_append(tmp_path / "results")
    assert code == 0, capsys.readouterr().err
    (record,) = read_runs(next((tmp_path / "results").iterdir()))
    assert record.status == "error" and record.verdict is None
    assert record.error.startswith("the harness could not judge the table: OSError: [Errno 28]"), record.error
    assert record.write_s is not None and record.peak_memory_bytes
