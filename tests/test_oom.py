"""An OOM kill under the cap is a result, and the next run goes on."""

import re
from pathlib import Path

import pytest

from harness.base.caps import cgroup_parent
from harness.base.progress import Progress
from harness.engines.writers.dlt import DltWriter
from harness.judge.oracle import OPERATION_COMPLETED, failed_check
from harness.model import Feed, Operation
from harness.run.classify import classify
from harness.run.matrix import prepare_data
from harness.run.runner import RunPlan
from harness.services.launcher import Launch

CAP = 450 * 2**20  # above what a streaming writer needs on `small`, below a whole-table materialisation


@pytest.mark.skipif(cgroup_parent() is None, reason="the kernel OOM killer needs a cgroup memory cap")
def test_materialising_writer_is_oom_killed_and_the_streaming_one_passes(runner, settings):
    sets = prepare_data(settings, "small", ["base"])
    killed = runner.run(RunPlan("append", "pyiceberg-table", "small", sets, 10_000, CAP))
    assert killed.status == "oom"
    assert killed.oom_kills >= 1
    assert "OOM-killed" in killed.error
    assert re.search(r"(with [\d,]+ of|after all) 200,000 rows (were )?fed to the writer", killed.error), (
        killed.error
    )
    assert killed.peak_memory_bytes <= CAP
    checks = {c.name: c for c in killed.verdict.checks}
    assert not checks["operation_completed"].passed
    assert checks["table_unchanged_after_failure"].passed and checks["row_count"].passed

    survived = runner.run(RunPlan("append", "pyiceberg-add-files", "small", sets, 10_000, CAP))
    assert survived.status == "ok" and survived.verdict.passed


def _oom_reason(
    fed: tuple[int, ...] | None, cause: str | None = DltWriter.oom_after_feed_cause.named()
) -> str:
    """The error of a dlt worker the kernel killed at 3.7 GiB rss, its progress file saying `fed`."""
    killed = Launch(returncode=-9, wall_s=70.0, peak_memory_bytes=4 << 30, oom_kills=1, timed_out=False)
    killed.enforced_cap_bytes = 4 << 30
    killed.timeline = [(60.0, 4 << 30, int(3.7 * 2**30))]
    feed = Feed(name="a", source_set="base", operation=Operation.APPEND)
    outcome = classify(
        feed, 1_000_000, killed, None, Path("worker.log"), isolation="cgroup", timeout_s=900,
        consumes_batches=False, fed=Progress(*fed) if fed else None, oom_after_feed_cause=cause,
    )  # fmt: skip
    assert outcome.status == "oom"
    return outcome.error


def test_an_oom_after_every_row_was_fed_names_the_writers_known_cause():
    """dlt 1.31 reads the whole load into one Arrow table (measured at `wide`: OOM at 4 GiB once
    all 1,000,000 rows were fed): the failed check names it and links the upstream issue."""
    error = _oom_reason((1_000_000, 1_000_000))
    assert error.startswith(
        "OOM-killed by the kernel at a 4.0 GiB cap (oom_kill count 1), after all 1,000,000"
    )
    assert "arrow_dataset.to_table()" in error
    assert failed_check(OPERATION_COMPLETED, error).upstream == "dlt-hub/dlt#3752"


def test_an_oom_while_rows_were_still_fed_blames_nothing_upstream():
    """Killed while it still took rows (or with no progress file), the writer's known cause is not
    claimed: the reason says how far the source got, and links no issue."""
    error = _oom_reason((980_000, 1_000_000))
    assert error.endswith("with 980,000 of 1,000,000 rows fed to the writer")
    assert failed_check(OPERATION_COMPLETED, error).upstream is None
    assert _oom_reason(None) == "OOM-killed by the kernel at a 4.0 GiB cap (oom_kill count 1)"


def test_a_known_cause_is_named_only_on_the_releases_it_was_seen_in():
    """A cause read in dlt 1.21.0-1.31.0 does not follow the writer's name onto a build of a branch
    (`1.23.0+dc01193`), a later release or a run whose version is unknown."""
    cause = DltWriter.oom_after_feed_cause
    assert cause.seen_in({"dlt": "1.21.0"}) and cause.seen_in({"dlt": "1.31.0"})
    assert not cause.seen_in({"dlt": "1.23.0+dc01193"})
    assert not cause.seen_in({"dlt": "1.23.0+dc01193.dirty"})
    assert not cause.seen_in({"dlt": "1.32.0"}) and not cause.seen_in({"dlt": "1.20.0"})
    assert not cause.seen_in({"dlt": "missing"}) and not cause.seen_in({})
    assert cause.named().endswith("(seen in dlt >=1.21.0,<=1.31.0)")


def test_the_runner_names_the_cause_from_the_version_its_worker_reported(runner):
    from harness.model import WorkerResult

    def reported(version: str) -> WorkerResult:
        return WorkerResult(status="error", versions={"dlt": version})

    assert runner._known_cause(DltWriter, reported("1.31.0")) == DltWriter.oom_after_feed_cause.named()
    assert runner._known_cause(DltWriter, reported("1.23.0+dc01193")) is None


def test_where_the_memory_grew_is_measured_on_the_build_that_ran():
    """The worker's rss as it fed the last row against its peak: the phase comes from this run,
    whether or not a cause is known for its version (a branch's build: none)."""
    error = _oom_reason((1_000_000, 1_000_000, 800 * 2**20), cause=None)
    assert error.endswith(
        "after all 1,000,000 rows were fed to the writer (its rss 800.0 MiB as the last row was fed, "
        "3.7 GiB at the kill: the memory grew after the feed)"
    )
