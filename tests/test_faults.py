"""Fault scenarios on `tiny`. crash-mid-write: every pyiceberg writer SIGKILLed at each point, the
table judged after. bad-source: every writer fed a set whose middle file is broken (on the
local-services stack for writers that need a REST catalog).

The table holds the replacement set (10,000 rows) before the append of the base set (5 batches
of 2,000 rows). What must be there afterwards is stated here from what each writer does, not
taken from the worker's note, so a wrong note cannot excuse a wrong table.
"""

from pathlib import Path

import pytest

from harness.base.caps import format_size
from harness.engines.spark import missing_jars
from harness.engines.worker import run
from harness.engines.writers import Operation, StepTimer, WriteJob, Writer, writers
from harness.model import KillNote, WorkerSpec
from harness.run import runner as runner_module
from harness.run.matrix import MatrixConfig
from harness.run.runner import RunPlan
from harness.services.launcher import Launch
from harness.services.stacks import close_catalog
from harness.services.stacks.embedded import EmbeddedStack
from reports.summary import verdict_text
from reports.verdict import reason_of
from scenarios import get_scenario, scenarios
from scenarios.crash_mid_write import read_kill_note

CRASH_SCENARIOS = {
    cls.kill_point: name for name, cls in scenarios().items() if getattr(cls, "kill_point", None)
}
# The crash scenarios append: upsert-only writers are recorded unsupported (test_upsert_add_files.py
# kills them during an upsert).
PYICEBERG_WRITERS = [
    n
    for n, w in writers().items()
    if w.__module__.startswith("harness.engines.writers.pyiceberg_") and w.supports(Operation.APPEND)
]
# They write data files (and stage manifests) before their catalog commit: a kill before it
# strands them. The others write inside the commit call (or, commit-per-batch, commit each batch).
STAGE_FILES_BEFORE_COMMIT = {
    "pyiceberg-add-files",
    "pyiceberg-fast-append",
    "pyiceberg-fast-append-naive",
    "pyiceberg-txn-batches",
}


def rows_committed_at_kill(writer: str, point: str, batch_rows: int, rows: int) -> int:
    if point == "after-commit":
        return rows
    if point == "data-files" and writer == "pyiceberg-commit-per-batch":
        return batch_rows  # its first step ends with the first batch's own commit
    return 0


def test_three_crash_points_are_scenarios_outside_the_default_matrix():
    assert set(CRASH_SCENARIOS) == {"data-files", "before-commit", "after-commit"}
    assert MatrixConfig().resolved().scenarios == ["append", "replace", "schema-evolution-upsert", "upsert"]
    assert MatrixConfig(scenarios=["crash-before-commit"]).resolved().scenarios == ["crash-before-commit"]


@pytest.mark.parametrize("point", list(CRASH_SCENARIOS))
@pytest.mark.parametrize("writer", PYICEBERG_WRITERS)
def test_killed_writer_leaves_the_last_committed_snapshot(runner, tiny_sets, expected_outcome, writer, point):
    scenario = CRASH_SCENARIOS[point]
    batch_rows = runner.settings.batch_rows
    record = runner.run(RunPlan(scenario, writer, "tiny", tiny_sets, batch_rows, cap_bytes=1 << 30))
    checks = {c.name: c for c in record.verdict.checks}
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    status, passed = expected_outcome(scenario, writer)

    assert record.status == status == "error"
    assert record.error.startswith(f"killed by SIGKILL at {point} as the scenario asked"), record.error
    assert checks["killed_at_point"].passed
    assert checks["at_last_committed_snapshot"].passed, checks["at_last_committed_snapshot"]
    initial_rows = tiny_sets["replacement"].manifest.rows
    committed = rows_committed_at_kill(writer, point, batch_rows, tiny_sets["base"].manifest.rows)
    assert checks["row_count"].actual == initial_rows + committed
    assert (record.snapshots_added > 0) == (committed > 0)
    assert record.verdict.passed is passed, failed
    if not passed:  # the naive trap committed one file name five times: the duplicates are the evidence
        duplicated = {"keys_unique", "content_checksum", "data_files_listed_once"}
        assert duplicated <= {c.name for c in record.verdict.failed}

    # Orphans: counted, never deleted. A commit that returned leaves nothing unreachable.
    if point == "after-commit":
        assert record.orphan_files == record.orphan_bytes == 0
    else:
        assert (record.orphan_files > 0) == (writer in STAGE_FILES_BEFORE_COMMIT), record.orphan_files
        assert (record.orphan_bytes > 0) == (record.orphan_files > 0)


def test_a_write_killed_mid_way_records_what_it_left_and_the_verdict_says_so(runner, tiny_sets):
    """Killed before its commit, add-files has staged its data files: garbage no metadata reaches,
    counted in files and bytes, shown in the verdict's reason and the summary's verdict cell."""
    plan = RunPlan("crash-before-commit", "pyiceberg-add-files", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30)
    record = runner.run(plan)
    assert record.status == "error" and record.orphan_files > 0 and record.orphan_bytes > 0
    left = f"left {record.orphan_files} files, {format_size(record.orphan_bytes)}"
    assert reason_of(record).startswith(f"{left}; killed by SIGKILL at before-commit")
    assert verdict_text(record, markup=False).endswith(f"; {left}")


def test_what_a_failed_write_left_is_counted_even_when_the_oracle_cannot_judge(
    runner, tiny_sets, monkeypatch
):
    def unreadable(*args, **kwargs):
        raise OSError("the read-back broke")

    monkeypatch.setattr(runner_module, "judge", unreadable)
    plan = RunPlan("crash-before-commit", "pyiceberg-add-files", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30)
    record = runner.run(plan)
    assert [check.name for check in record.verdict.failed] == ["operation_completed", "table_readable"]
    assert record.orphan_files > 0 and record.orphan_bytes > 0
    assert reason_of(record).startswith(f"left {record.orphan_files} files")


def test_a_bug_of_the_oracle_is_the_harness_error_not_the_writers_fail(runner, tiny_sets, monkeypatch):
    """A programming error raised in icebench's own code while it judges: status `error` naming the
    harness and where, no verdict charged to the writer. (A library's error reading the table
    stays the writer's table_readable FAIL: the test above.)"""
    from harness.judge import oracle

    # A builtin called wrongly: the innermost frame of the traceback is the oracle's own.
    monkeypatch.setattr(oracle, "manifest_stats_check", {}.__getitem__)
    record = runner.run(RunPlan("append", "pyiceberg-add-files", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    assert record.status == "error" and record.verdict is None, record.verdict
    assert record.error.startswith("the harness failed judging the table (harness/judge/oracle.py:"), (
        record.error
    )
    assert "TypeError" in record.error


# Writers that write at all (a writer with no operation would be refused before any scenario).
@pytest.mark.parametrize(
    "writer",
    [n for n, w in writers().items() if not w.consumes_batches and any(w.supports(op) for op in Operation)],
)
def test_engines_without_batch_steps_are_recorded_unsupported_with_the_reason(runner, tiny_sets, writer):
    plan = RunPlan("crash-before-commit", writer, "tiny", tiny_sets, 2_000, cap_bytes=1 << 30)
    record = runner.run(plan)
    assert record.status == "unsupported" and record.verdict is None
    assert "does not support crash-before-commit" in record.error and "not batches" in record.error


class NoTimerWriter(Writer):
    """Appends without telling the timer anything: no kill point can be reached."""

    name = "no-timer"
    description = "table.append of the whole source, no steps, no commits reported"
    single_commit = True

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        job.table.append(job.source.read_all())


def test_a_kill_point_the_writer_never_reaches_is_reported_not_faked(
    runner, tiny_sets, tmp_path, monkeypatch
):
    def must_not_kill(pid: int, sig: int) -> None:
        raise AssertionError("the worker tried to kill itself")

    monkeypatch.setattr("harness.engines.worker.os.kill", must_not_kill)  # this runs inside pytest
    monkeypatch.setattr("harness.engines.worker.get_writer", lambda name: NoTimerWriter)
    scenario = get_scenario("crash-before-commit")()
    run_catalog = runner.stack.catalog_for_run(tmp_path, "never")
    catalog = run_catalog.open()
    scenario.prepare(catalog, run_catalog.namespace, tiny_sets)
    close_catalog(catalog)
    spec = WorkerSpec(
        catalog=run_catalog.properties,
        table=scenario.table_identifier(run_catalog.namespace),
        writer="no-timer",
        operation=scenario.operation,
        key_columns=["id"],
        source_dir=tiny_sets["base"].directory,
        batch_rows=2_000,
        started_marker=tmp_path / "started",
        result_path=tmp_path / "result.json",
        kill_at="before-commit",
        kill_note_path=tmp_path / "kill-note.json",
    )
    result = run(spec)
    assert result.status == "ok" and result.error is None
    assert result.kill_missed.startswith("kill point before-commit never reached")
    assert "never entered timer.commit()" in result.kill_missed
    assert not spec.kill_note_path.exists()


@pytest.mark.parametrize(("returncode", "believed"), [(-9, True), (137, True), (0, False), (1, False)])
def test_a_kill_note_counts_only_with_the_sigkill_exit_code(tmp_path: Path, returncode: int, believed: bool):
    note_path = tmp_path / "kill-note.json"
    note_path.write_text(KillNote(point="before-commit", rows=10).model_dump_json())
    spec = WorkerSpec(
        catalog={}, table="t", writer="w", operation=Operation.APPEND, key_columns=[], source_dir=tmp_path,
        batch_rows=1, started_marker=tmp_path / "s", result_path=tmp_path / "r", kill_note_path=note_path,
    )  # fmt: skip
    launch = Launch(returncode=returncode, wall_s=1.0, peak_memory_bytes=None, oom_kills=0, timed_out=False)
    assert (read_kill_note(spec.kill_note_path, launch.returncode, launch.oom_kills) is not None) is believed


BAD_SOURCES = [name for name, cls in scenarios().items() if cls.expects_bad_input]
# Spark starts a JVM per run: one damage is enough to show it fails cleanly too.
BAD_SOURCE_RUNS = [
    (scenario, writer)
    for scenario in BAD_SOURCES
    for writer, cls in writers().items()
    # the damaged set is appended, on the embedded stack
    if "pyspark" not in cls.libraries
    and "ray" not in cls.libraries  # a Ray cluster per run: tests/test_ray_writers.py
    and cls.supports(Operation.APPEND)
    and not cls.supports_catalog(EmbeddedStack.catalog_shape)
] + [("bad-source-corrupt-page", "spark")]


@pytest.mark.parametrize(("scenario", "writer"), BAD_SOURCE_RUNS)
def test_a_broken_source_fails_the_write_cleanly(
    request, runner, tiny_sets, expected_outcome, scenario, writer
):
    """A clear error naming the broken file, the table at its snapshot with its content; what a
    streaming writer staged before it met the damage is reported as orphans, never committed."""
    if writer == "spark" and missing_jars():
        pytest.skip("Spark jars missing: run make spark-jars")
    if writers()[writer].supports_catalog(runner.stack.catalog_shape):  # DuckDB: a REST catalog only
        runner = request.getfixturevalue("services_runner")
    record = runner.run(RunPlan(scenario, writer, "tiny", tiny_sets, 2_000, cap_bytes=2 << 30))
    outcome = expected_outcome(scenario, writer, runner.stack.name)
    assert (record.status, record.verdict.passed) == outcome, record.error
    assert "part-00001.parquet" in record.error  # the broken file is named
    checks = {check.name: check for check in record.verdict.checks}
    if writer == "pyiceberg-commit-per-batch" and scenario == "bad-source-corrupt-page":
        # Not atomic: the batches of the first file were committed before the damage showed,
        # and the oracle says so with the evidence.
        assert not checks["table_unchanged_after_failure"].passed and record.snapshots_added == 2
        assert not checks["row_count"].passed
        return
    assert checks["table_unchanged_after_failure"].passed
    assert checks["content_checksum"].passed and checks["row_count"].passed  # the replacement set, intact
    assert record.snapshots_added == 0
