"""Maintenance phases of the rounds workload (compact, expire, orphans): each a run under the cap on
the table a writer left, judged by the oracle (the rows unchanged, every live snapshot readable,
what the step promises); and the checks that catch a maintenance step that breaks a table, each
beside a legal variant that passes."""

import pyarrow as pa
import pytest

from generators.checksum import Checksum
from harness.base.errors import IcebenchError
from harness.base.results import ResultsStore
from harness.base.table_files import live_files, table_files
from harness.judge.maintenance import maintenance_checks
from harness.judge.oracle import LIVE_FILES_CHECK, capture_state, judge, live_files_check
from harness.model import Expectation, Maintenance
from harness.run.config import MatrixConfig
from harness.run.matrix import run_matrix
from harness.run.rounds import RoundsConfig, run_rounds
from harness.services.stacks import started
from harness.services.stacks.embedded import EmbeddedStack
from reports.rounds import maintenance_rows
from reports.summary import scenario_text
from reports.verdict import verdict_groups

PHASES = ["append", "append", "compact", "expire", "orphans"]
# The writer of many small files; the matrix's test below keeps another's table.
WRITERS = ["pyiceberg-fast-append"]
ROUNDS = 2
MAINTENANCE = {step.value for step in Maintenance}


@pytest.fixture(scope="module")
def maintained(settings):
    """Two rounds of two appends, a compaction, an expiry and an orphan removal on `day(c017_ts)`:
    each append leaves a file per day, two of them make a partition worth compacting here."""
    tuned = settings.model_copy(update={"engines": {"pyiceberg-maintenance": {"min_input_files": 2}}})
    config = RoundsConfig(
        preset="tiny", writers=WRITERS, rounds=ROUNDS, phases=PHASES, partitions=["day(c017_ts)"]
    )
    return run_rounds(tuned, config, ResultsStore(settings.results_dir), EmbeddedStack(settings))


def runs_of(records, writer):
    return [record for record in records if record.writer == writer]


@pytest.mark.parametrize("writer", WRITERS)
def test_every_maintenance_step_is_a_run_judged_on_the_writers_table(maintained, writer):
    runs = runs_of(maintained, writer)
    assert [(r.round, r.phase) for r in runs] == [
        (n, phase) for n in range(1, ROUNDS + 1) for phase in PHASES
    ]
    for record in runs:
        failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else record.error
        assert record.status == "ok" and record.verdict.passed, (record.round, record.phase, failed)
        assert record.layout.label == "day(c017_ts)"
        assert record.maintainer == ("pyiceberg" if record.phase in MAINTENANCE else None)
    # Every append adds a block of its own: the second round's appends add blocks 3 and 4.
    appends = [r for r in runs if r.phase == "append"]
    assert [r.rows for r in appends] == [appends[0].rows] * 4


@pytest.mark.parametrize("writer", WRITERS)
def test_compaction_rewrites_small_files_in_one_snapshot_and_expire_frees_them(maintained, writer):
    runs = {(r.round, r.phase): r for r in runs_of(maintained, writer)}
    compact = runs[(1, "compact")]
    assert compact.operation == "compact" and compact.snapshots_added == 1
    assert compact.data_files < compact.data_files_before  # two files a day became one
    assert compact.snapshot_summary["operation"] == "overwrite"  # pyiceberg commits no `replace`
    assert compact.full_scan_files == compact.data_files  # the scans read the compacted table
    expire = runs[(1, "expire")]
    assert expire.snapshots_added == 0 and expire.snapshots == 1 and expire.snapshots_removed >= 2
    assert expire.data_files == compact.data_files
    orphans = runs[(1, "orphans")]
    assert orphans.orphan_files == 0 and orphans.snapshots_added == 0


def test_the_maintenance_table_shows_the_table_before_and_after_compaction_and_what_it_costs(maintained):
    headers, rows, _ = maintenance_rows(maintained)
    by_writer = {row[0]: dict(zip(headers, row, strict=True)) for row in rows}
    assert sorted(by_writer) == sorted(WRITERS)
    for writer in WRITERS:
        runs = runs_of(maintained, writer)
        before, after = runs[-4], runs[-1]  # before the last compact; after the last orphans
        assert by_writer[writer]["data files"] == f"{before.data_files} → {after.data_files}"
        assert after.data_files < before.data_files
        for column, steps, table in (
            ("owned, last compaction skipped", runs[:-3], before),
            ("owned, at the end", runs, after),
        ):
            owned = sum(r.write_s for r in steps) + 10 * (table.full_scan_s + table.selective_scan_s)
            assert by_writer[writer][column] == f"{owned:.1f} s (10 reads)"


def test_spark_maintains_its_own_tables_with_icebergs_procedures(settings):
    """Spark's tables are kept by Spark: rewrite_data_files + rewrite_manifests, expire_snapshots,
    and orphan removal through Iceberg's action (its procedure refuses an age under 24 hours); here
    after a matrix pair's write (the rounds' phases run the same maintainer)."""
    steps = ["compact", "expire", "orphans"]
    config = MatrixConfig(presets=["tiny"], scenarios=["append"], writers=["spark"], maintenance=steps)
    records = run_matrix(settings, config, ResultsStore(settings.results_dir), EmbeddedStack(settings))
    assert [(record.phase, record.maintainer) for record in records] == [
        (None, None),
        *((step, "spark") for step in steps),
    ]
    for record in records:
        failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else record.error
        assert record.status == "ok" and record.verdict.passed, (record.phase, failed)
    compact, expire, orphans = records[1:]
    assert expire.snapshots == 1 and expire.snapshots_removed == compact.snapshots - 1
    assert orphans.orphan_files == 0


def test_spark_removes_orphans_on_s3(services_settings):
    """On S3 the orphan listing goes through the table's FileIO: Hadoop's FileSystem has no `s3`
    scheme here (the step failed with UnsupportedFileSystemException before)."""
    config = MatrixConfig(presets=["tiny"], scenarios=["append"], writers=["spark"], maintenance=["orphans"])
    store = ResultsStore(services_settings.results_dir)
    with started(services_settings, store.folder / "services") as stack:
        write, orphans = run_matrix(services_settings, config, store, stack)
    assert write.verdict.passed and orphans.phase == "orphans"
    assert orphans.status == "ok" and orphans.verdict.passed, orphans.error
    assert orphans.orphan_files == 0


def test_a_phase_list_with_repeats_and_maintenance_reads_well():
    config = RoundsConfig(rounds=2, phases=["append", "append", "upsert", "compact"])
    assert config.blocks() == [1, 2, 2, 2, 3, 4, 4, 4]
    assert config.set_names() == [
        *("round-1", "round-2", "round-3", "round-4"),
        *("round-2-changes", "round-4-changes"),
    ]
    assert RoundsConfig(rounds=2, phases=["upsert", "expire"]).blocks() == [1, 1, 2, 2]
    with pytest.raises(ValueError, match="a phase that writes"):
        RoundsConfig(phases=["compact", "expire"])
    with pytest.raises(ValueError, match="phases are names from"):
        RoundsConfig(phases=["append", "vacuum"])
    with pytest.raises(IcebenchError, match="unknown maintainer 'nope'"):
        RoundsConfig(phases=["append", "compact"], maintainer="nope").resolved()


# --- Damaged tables: the checks fire; a legal variant passes ---------------------------------


@pytest.fixture
def two_snapshots(runner, tmp_path):
    """A table of two appends, then an overwrite that drops the first file: three snapshots, the
    first still needing the file the current one no longer lists."""
    catalog = runner.stack.catalog_for_run(tmp_path, "maintained").open()
    catalog.create_namespace_if_not_exists("bench")
    table = catalog.create_table("bench.maintained", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    first = _data_files(table)
    table.append(pa.table({"id": pa.array([3, 4], pa.int64())}))
    table.delete("id <= 2")  # drops the first file whole
    return table.refresh(), first


def _data_files(table):
    return set(table.inspect.files()["file_path"].to_pylist())


def _expect_ids(*ids):
    checksum = Checksum()
    checksum.update(pa.record_batch({"id": pa.array(ids, pa.int64())}))
    return Expectation(rows=len(ids), checksum=checksum.hex, key_ranges=[(min(ids), max(ids))])


def _judge_step(table, before, step, expected):
    verdict, metrics = judge(
        table.refresh(),
        expected=expected,
        error=None,
        before=before,
        single_commit=False,
        outcome_checks=lambda evidence: maintenance_checks(evidence, step, "test"),
    )
    return {check.name: check for check in verdict.checks}, metrics


def test_a_file_a_live_snapshot_needs_deleted_fails_though_the_current_one_reads(two_snapshots):
    """Damage: the first file deleted while the first snapshot, which lists it, is kept (an expiry
    that deleted files before, or without, expiring their snapshots). The current snapshot reads
    well: only the live-files check sees it."""
    table, first = two_snapshots
    before = capture_state(table)
    for path in first:
        table.io.delete(path)
    checks, _ = _judge_step(table, before, Maintenance.EXPIRE, _expect_ids(3, 4))
    live = checks[LIVE_FILES_CHECK]
    assert not live.passed and live.actual == {"missing": 1, "snapshots": 1}
    assert "needed by snapshot" in live.reason and "is missing" in live.reason
    assert checks["row_count"].passed and checks["data_files_exist"].passed


def test_an_expiry_that_frees_only_what_no_live_snapshot_needs_passes(two_snapshots):
    """The legal variant: the snapshots that listed the first file expired, then every file that
    only they needed deleted (their manifest lists and manifests too, or they would be orphans)."""
    table, first = two_snapshots
    before = capture_state(table)
    needed_before = set(live_files(table))
    current = table.current_snapshot().snapshot_id
    table.maintenance.expire_snapshots().by_ids(
        [s.snapshot_id for s in table.snapshots() if s.snapshot_id != current]
    ).commit()
    table = table.refresh()
    freed = needed_before - set(live_files(table))
    assert first <= freed  # no snapshot left lists it
    for path in freed:
        table.io.delete(path)
    checks, metrics = _judge_step(table, before, Maintenance.EXPIRE, _expect_ids(3, 4))
    assert all(check.passed for check in checks.values()), [c for c in checks.values() if not c.passed]
    assert metrics["snapshots"] == 1 and metrics["snapshots_removed"] == 2


def test_an_expiry_that_deletes_a_file_of_the_current_snapshot_fails(two_snapshots):
    """The current snapshot's file gone: the read-back cannot open it (the runner records the table
    unreadable), and the live-files check names it."""
    table, _ = two_snapshots
    before = capture_state(table)
    current = table.current_snapshot().snapshot_id
    table.maintenance.expire_snapshots().by_ids(
        [s.snapshot_id for s in table.snapshots() if s.snapshot_id != current]
    ).commit()
    table = table.refresh()
    gone = next(iter(_data_files(table)))
    table.io.delete(gone)
    check = live_files_check(table_files(table))
    assert not check.passed and gone.rsplit("/", 1)[1] in check.reason
    with pytest.raises(FileNotFoundError):
        _judge_step(table, before, Maintenance.EXPIRE, _expect_ids(3, 4))


def test_a_compaction_that_drops_or_doubles_rows_fails(two_snapshots):
    """Damage: a 'compaction' that rewrites the live file without one of its rows; then one that
    adds the rewrite but keeps the original. The legal rewrite passes."""
    table, _ = two_snapshots
    for rows, keep_original, passes in (([3], False, False), ([3, 4], True, False), ([3, 4], False, True)):
        before = capture_state(table)
        live = [task.file for task in table.scan().plan_files()]
        with table.transaction() as txn, txn.update_snapshot().overwrite() as rewrite:
            if not keep_original:
                for data_file in live:
                    rewrite.delete_data_file(data_file)
            for data_file in _written(table, txn, rows):
                rewrite.append_data_file(data_file)
        checks, metrics = _judge_step(table, before, Maintenance.COMPACT, _expect_ids(3, 4))
        failed = {name for name, check in checks.items() if not check.passed}
        assert (not failed) == passes, failed
        if not passes:
            assert failed & {"row_count", "content_checksum", "keys_unique"}, failed
        assert metrics["snapshots_added"] == 1
        if not passes:  # put the table back for the next variant
            table = table.refresh()
            table.manage_snapshots().rollback_to_snapshot(before.current_snapshot_id).commit()
            table = table.refresh()


def _written(table, txn, ids):
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    data = pa.table({"id": pa.array(ids, pa.int64())})
    return list(_dataframe_to_data_files(table_metadata=txn.table_metadata, df=data, io=table.io))


def test_maintenance_steps_that_break_their_promise_fail(two_snapshots):
    """An orphan removal that commits, an expiry that moves the table: their checks fire."""
    table, _ = two_snapshots
    before = capture_state(table)
    table.append(pa.table({"id": pa.array([9], pa.int64())}))
    checks, _ = _judge_step(table, before, Maintenance.ORPHANS, _expect_ids(3, 4, 9))
    assert not checks["no_commit"].passed
    checks, _ = _judge_step(table, before, Maintenance.EXPIRE, _expect_ids(3, 4, 9))
    assert not checks["current_snapshot_kept"].passed and not checks["expire_adds_no_snapshot"].passed


def test_an_orphan_is_found_and_a_listed_file_is_not_one(two_snapshots):
    table, first = two_snapshots
    stray = f"{table.location()}/data/stray.parquet"
    with table.io.new_output(stray).create() as stream:
        stream.write(b"not committed")
    files = table_files(table)
    assert [path.rsplit("/", 1)[1] for path in files.orphans] == ["stray.parquet"]
    assert not files.missing and first <= set(live_files(table))


def test_the_matrix_maintains_each_pairs_table_and_counts_it_in_the_total_cost(settings):
    """`matrix --maintenance compact,expire`: after each write that passed, each step a run of its
    own on that write's table, judged against what the write had to leave; the verdict's total
    cost is the write, the steps and the reads of the table the last step left. A write that
    failed (the naive trap) gets no steps."""
    tuned = settings.model_copy(update={"engines": {"pyiceberg-maintenance": {"min_input_files": 2}}})
    config = MatrixConfig(
        presets=["tiny"], scenarios=["append"], partitions=["day(c017_ts)"],
        maintenance=["compact", "expire"],
        writers=["pyiceberg-commit-per-batch", "pyiceberg-fast-append-naive"],
    )  # fmt: skip
    tuned = tuned.model_copy(update={"batch_rows": 2000})  # five commits: files to compact
    records = run_matrix(tuned, config, ResultsStore(settings.results_dir), EmbeddedStack(settings))
    kept = runs_of(records, "pyiceberg-commit-per-batch")
    assert [(r.scenario, r.phase, r.maintainer) for r in kept] == [
        ("append", None, None), ("append", "compact", "pyiceberg"), ("append", "expire", "pyiceberg"),
    ]  # fmt: skip
    for record in kept:
        failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed]
        assert record.status == "ok" and record.verdict.passed, (record.phase, failed)
    write, compact, expire = kept
    assert compact.data_files < write.data_files  # the day's small files became one
    assert [r.writer for r in records].count("pyiceberg-fast-append-naive") == 1  # FAILed: not kept
    (group,) = verdict_groups(records)
    (row,) = group.ranked
    owned = sum(r.write_s for r in kept) + expire.reads * (expire.full_scan_s + expire.selective_scan_s)
    assert row.writer == "pyiceberg-commit-per-batch" and row.total_cost == f"{owned:.1f} s"
    assert scenario_text(compact) == "append compact"


def test_an_unknown_maintenance_step_is_refused_in_one_line():
    with pytest.raises(ValueError, match="compact"):
        MatrixConfig(maintenance=["defrag"])
