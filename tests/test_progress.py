"""Progress inside a run: the rows a worker's source has fed, seen by the harness while it waits."""

from harness.base.progress import ProgressFile, read_progress, watching
from harness.base.results import ResultsStore
from harness.run.runner import Runner, RunPlan
from harness.services.stacks.embedded import EmbeddedStack

CAP = 2**30


def test_a_long_run_reports_the_rows_fed_as_it_goes(settings, tiny_sets):
    """A commit per 200-row batch: long enough for several reports, each within the source."""
    seen: list[tuple[int, int]] = []
    runner = Runner(
        settings,
        ResultsStore(settings.results_dir),
        EmbeddedStack(settings),
        on_progress=lambda *p: seen.append(p),
    )
    record = runner.run(RunPlan("append", "pyiceberg-commit-per-batch", "tiny", tiny_sets, 200, CAP))
    assert record.status == "ok", record.error
    assert seen, "no progress reported during a run of many commits"
    fed = [f for f, _ in seen]
    assert fed == sorted(fed) and 0 < fed[-1] <= record.rows
    assert {rows for _, rows in seen} == {record.rows}


def test_the_worker_writes_at_most_once_a_second(tmp_path):
    path = tmp_path / "worker.progress"
    progress = ProgressFile(path, rows=1000)
    progress.fed(10)
    progress.fed(20)  # within the second: not written
    assert read_progress(path)[:2] == (10, 1000)
    progress.fed(1000)  # the last count always: an OOM's reason tells whether every row was fed
    assert read_progress(path)[:2] == (1000, 1000)


def test_a_progress_file_that_cannot_be_written_stops_nothing(tmp_path):
    ProgressFile(tmp_path / "no-such-folder" / "worker.progress", rows=10).fed(5)  # no exception


def test_nothing_is_reported_before_the_worker_writes(tmp_path):
    seen: list[tuple[int, int]] = []
    with watching(tmp_path / "absent", lambda *p: seen.append(p)):
        pass
    assert seen == [] and read_progress(tmp_path / "absent") is None
