"""concurrent-writers: two workers append disjoint sets to one table at once.

Both load the table and wait for each other before writing, so whichever commits second holds a
stale snapshot: pyiceberg 0.12 retries that commit and both land; 0.9.1 has no retries, and the
second append must fail without leaving a row behind.
"""

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from generators.checksum import Checksum
from generators.source import ParquetSource
from harness.base.results import ResultsStore
from harness.engines.writers import Operation, writers
from harness.judge.oracle import capture_state, judge
from harness.model import Check, Feed, Rendezvous, RendezvousMissed, Status, Verdict, WorkerEnd, WorkerOutcome
from harness.run.matrix import prepare_data
from harness.run.runner import Runner, RunPlan, run_error
from harness.services.envs import Variant
from harness.services.stacks.embedded import EmbeddedStack
from reports.summary import worker_rows
from scenarios import get_scenario
from scenarios.base import register_set

SCENARIO = "concurrent-writers"
# Both workers append: writers that only upsert have no part in this race. Every writer whose
# commits pyiceberg makes (and retries), its own calls or an engine's (polars, daft, dlt) underneath,
# that runs on this module's embedded stack (dlt-iceberg takes REST catalogs only).
PYICEBERG_WRITERS = [
    n
    for n, w in writers().items()
    if w.pyiceberg_commits
    and "ray" not in w.libraries  # a Ray cluster per run: tests/test_ray_writers.py
    and w.supports(Operation.APPEND)
    and w.supports_catalog(EmbeddedStack.catalog_shape) is None
]
# dlt loads the table from the catalog in its own load stage, after the rendezvous: whether its
# commit meets a stale snapshot (and retries) depends on how the two workers' stages interleave.
LOADS_ITS_OWN_TABLE = {"dlt"}
NO_RETRIES = "0.9.1"  # pyiceberg retries commit conflicts from 0.12.0 on


def checks_of(record) -> dict:
    return {check.name: check for check in record.verdict.checks}


@pytest.mark.parametrize("writer", PYICEBERG_WRITERS)
def test_both_appends_land_after_pyiceberg_retries(
    runner, tiny_sets, expected_outcome, verdict_passed, writer
):
    record = runner.run(RunPlan(SCENARIO, writer, "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    status, passed = expected_outcome(SCENARIO, writer)

    assert (record.status, verdict_passed(record)) == (status, passed), (record.error, failed)
    assert [(w.name, w.source_set, w.status) for w in record.workers] == [
        ("a", "base", "ok"),
        ("b", "replacement", "ok"),
    ]
    # The rendezvous makes the race certain: someone's commit met the other's snapshot and retried.
    if writer not in LOADS_ITS_OWN_TABLE:
        assert sum(w.commit_retries for w in record.workers) >= 1
    assert record.wall_s == max(w.wall_s for w in record.workers)
    assert record.peak_memory_bytes == max(w.peak_memory_bytes for w in record.workers)
    assert checks_of(record)["a_worker_landed"].actual == "2 of 2"
    if passed:
        assert checks_of(record)["row_count"].actual == 20_000
    else:  # the trap: its own batches overwrite each other's file, whoever else writes
        assert {c.name for c in record.verdict.failed} >= {"keys_unique", "content_checksum"}


def test_without_retries_the_second_append_fails_cleanly(settings):
    sets = prepare_data(settings, "narrow", list(get_scenario(SCENARIO)().needs))
    store = ResultsStore(settings.results_dir)
    old = Runner(settings, store, EmbeddedStack(settings), Variant("pyiceberg", NO_RETRIES))
    record = old.run(RunPlan(SCENARIO, "pyiceberg-table", "narrow", sets, 20_000, cap_bytes=1 << 30))

    (loser,) = [w for w in record.workers if w.status == "error"]
    (winner,) = [w for w in record.workers if w.status == "ok"]
    assert record.status == "error" and record.error.startswith(f"worker {loser.name} ({loser.source_set}): ")
    assert "CommitFailedException" in loser.error and loser.commit_retries == 0
    # The table holds the winner's rows and none of the loser's: a clean failure, a passed verdict.
    assert record.verdict.passed, [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    assert checks_of(record)["row_count"].actual == sets[winner.source_set].manifest.rows
    assert checks_of(record)["a_worker_landed"].actual == "1 of 2"
    assert checks_of(record)["failed_workers_left_nothing"].passed
    assert record.snapshots_added == 1
    (row,) = [row for row in worker_rows([record])[1] if row[2] == loser.name]
    assert row[4].startswith("error: CommitFailedException") and row[5:7] == ["0", "0"]  # commits, retries


def test_a_worker_whose_peer_never_comes_gives_up_with_one_line(tmp_path):
    alone = Rendezvous(directory=tmp_path / "rendezvous", name="a", parties=2, timeout_s=0.2)
    with pytest.raises(RendezvousMissed, match=r"only 1 of 2 concurrent workers were ready within 0\.2 s"):
        alone.arrive()


def test_rows_of_a_worker_that_reported_failure_fail_the_verdict(tiny_sets, tmp_path):
    """A write that reports failure after its commit landed (a lost commit response, a client
    failing after the commit) is caught: the failed worker's rows are named."""
    catalog = SqlCatalog("check", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    scenario = get_scenario(SCENARIO)()
    table = scenario.prepare(catalog, "bench", tiny_sets)
    before = capture_state(table)
    for name in (feed.source_set for feed in scenario.feeds()):
        register_set(table, tiny_sets[name])
    error = "OSError: the connection was reset after the commit request was sent"
    a, b = scenario.feeds()
    verdict, checks = judged(scenario, table, before, tiny_sets, [ended(a, "ok"), ended(b, "error", error)])
    assert not verdict.passed
    assert checks["a_worker_landed"].passed
    leftover = checks["failed_workers_left_nothing"]
    assert not leftover.passed and leftover.reason.endswith(error)
    assert leftover.reason.startswith("10,000 rows of worker b (replacement) in the table, yet it failed: ")
    assert not checks["key_set"].passed and not checks["row_count"].passed
    # The sets were hard-linked into one table under names of their own: the cache is intact.
    for name in (feed.source_set for feed in scenario.feeds()):
        checksum = Checksum()
        for batch in ParquetSource.open(tiny_sets[name].directory, 65_536).batches():
            checksum.update(batch)
        assert checksum.hex == tiny_sets[name].manifest.checksum, f"the cached {name} set was overwritten"


def ended(feed: Feed, status: Status, error: str | None = None) -> WorkerEnd:
    """A worker's end as the runner would classify it."""
    outcome = WorkerOutcome(name=feed.name, source_set=feed.source_set, rows=0, status=status, error=error)
    return WorkerEnd(feed, outcome)


def judged(scenario, table, before, sets, ends: list[WorkerEnd]) -> tuple[Verdict, dict[str, Check]]:
    """The oracle's checks of `table` as the runner asks for them after these ends."""
    verdict, _ = judge(
        table.refresh(),
        expected=scenario.expectation(sets, ends, None),
        error=run_error(ends),
        before=before,
        single_commit=False,
        outcome_checks=lambda evidence: scenario.outcome_checks(evidence, ends, sets),
    )
    return verdict, {check.name: check for check in verdict.checks}


RACE = "upsert-racing-append"


def test_an_upsert_racing_an_append_lands_or_fails_cleanly(runner, tiny_sets):
    """pyiceberg's upsert validates what landed since its snapshot: meeting the append it may fail
    (a conservative conflict check, apache/iceberg-python#3319), never lose or resurrect rows."""
    record = runner.run(RunPlan(RACE, "pyiceberg-table", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    workers = {w.name: w for w in record.workers}

    assert [(w.source_set, w.operation) for w in workers.values()] == [
        ("changes", Operation.UPSERT),
        ("disjoint-2", Operation.APPEND),
    ]
    assert workers["b"].status == "ok"  # an append retried over an upsert conflicts with nothing
    assert workers["a"].status == "ok" or "ValidationException" in workers["a"].error
    assert record.verdict.passed, [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    landed = [w for w in workers.values() if w.status == "ok"]
    assert checks_of(record)["a_worker_landed"].actual == f"{len(landed)} of 2"
    upserted = tiny_sets["changes"].manifest.expected_after_upsert.rows
    base = tiny_sets["base"].manifest.rows
    rows = (upserted if workers["a"].status == "ok" else base) + tiny_sets["disjoint-2"].manifest.rows
    assert checks_of(record)["row_count"].actual == rows


def test_a_failed_upsert_whose_new_rows_landed_fails_the_verdict(tiny_sets, tmp_path):
    """The upsert reported failure, yet its new keys are in the table: caught, and named."""
    catalog = SqlCatalog("check", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    scenario = get_scenario(RACE)()
    table = scenario.prepare(catalog, "bench", tiny_sets)
    before = capture_state(table)
    table.upsert(ParquetSource.open(tiny_sets["changes"].directory, 65_536).read_all(), join_cols=["id"])
    register_set(table, tiny_sets["disjoint-2"])
    upsert, append = scenario.feeds()
    error = "ValidationException: the commit response was lost"
    ends = [ended(upsert, "error", error), ended(append, "ok")]
    verdict, checks = judged(scenario, table, before, tiny_sets, ends)

    inserted = tiny_sets["changes"].manifest.inserts
    assert not verdict.passed and checks["a_worker_landed"].passed
    leftover = checks["failed_workers_left_nothing"]
    assert not leftover.passed
    assert leftover.reason == f"{inserted:,} rows of worker a (changes) in the table, yet it failed: {error}"
    assert not checks["content_checksum"].passed


def test_a_retried_dlt_upsert_strands_its_first_attempts_files(runner, tiny_sets, verdict_passed):
    """dlt's upsert lands whichever way the race goes, its content right. dlt upserts per 1,000
    rows, so which of its commits meets the append varies: a retried commit that had rewritten base
    files leaves its first attempt's data files under the table, reachable from no metadata (43 of
    45 runs); an upsert that commits first, or whose retry strands nothing (1 each), passes. A
    commit that lost the catalog's compare-and-swap may leave a metadata file besides (timing:
    tests/conftest.py _passed), whichever worker it was."""
    record = runner.run(RunPlan(RACE, "dlt", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    upsert = record.workers[0]

    assert [w.status for w in record.workers] == ["ok", "ok"], [w.error for w in record.workers]
    assert checks_of(record)["content_checksum"].passed
    stranded = checks_of(record)["no_orphans_after_success"]
    files, lost_swaps = stranded.actual["files"], stranded.actual["lost_swap_metadata"]
    assert files == record.orphan_files
    if files == lost_swaps:  # no data file stranded
        assert verdict_passed(record), [f"{c.name}: {c.reason}" for c in record.verdict.failed]
        return
    assert upsert.commit_retries, "data files stranded without a retry"
    assert [c.name for c in record.verdict.failed] == ["no_orphans_after_success"]
    # each stranded file named by its place in the table: data files, and lost swaps' metadata
    parts = stranded.reason.split("; ")
    named = [part.split(" ", 1)[0] for part in parts if part.endswith("is reachable from no metadata")]
    assert named and all(path.startswith(("data/", "metadata/")) for path in named), stranded.reason
    assert sum(path.startswith("metadata/") for path in named) <= lost_swaps, stranded.reason


def test_duckdb_does_not_retry_a_conflict_and_its_loser_leaves_no_row(services_runner, tiny_sets):
    """DuckDB's iceberg extension 1.5.5 has no commit retry (duckdb/duckdb-iceberg#786): the second
    to commit gets the REST catalog's 409 and fails cleanly, unless it loaded the table only after
    the first landed (each DuckDB loads it when its statement starts, after the rendezvous). Both
    appends answered with success must both be in the table (tests/test_local_services.py pins the
    catalog's side: a transaction it accepts lands)."""
    record = services_runner.run(RunPlan(SCENARIO, "duckdb", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    workers = {w.name: w for w in record.workers}
    assert all(w.commit_retries is None for w in workers.values())  # not pyiceberg's to count
    landed = [w for w in workers.values() if w.status == "ok"]
    assert record.verdict.passed, [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    for loser in (w for w in workers.values() if w.status != "ok"):
        assert "409" in loser.error and "CommitFailedException" in loser.error, loser.error
    assert landed and checks_of(record)["row_count"].actual == 10_000 * len(landed)
