"""Upserts by a copy-on-write delete plus add_files (harness/engines/writers/pyiceberg_delete_add_files.py):
what they refuse before writing anything, which files they rewrite, and what a failed, broken or
killed upsert leaves behind. Their plain runs are in tests/test_runs.py with every writer."""

from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table
from pyiceberg.transforms import BucketTransform

from generators.checksum import Checksum
from generators.faults import damaged_copy
from generators.manifest import DatasetManifest
from generators.source import ParquetSource
from harness.base.errors import IcebenchError
from harness.base.results import read_runs
from harness.engines.writers import Operation, StepTimer, WriteJob, get_writer, writers
from harness.engines.writers.pyiceberg_delete_add_files import ChangeKeys
from harness.judge.oracle import read_content
from harness.model import Expectation, KillPoint
from harness.run.runner import RunPlan
from scenarios import scenarios
from scenarios.base import DataSet, DataSets, Scenario
from scenarios.crash_mid_write import KilledMidWrite
from scenarios.upsert import Upsert

UPSERT_WRITERS = [n for n, w in writers().items() if w.__module__.endswith(".pyiceberg_delete_add_files")]
BATCH_ROWS = 2_000


def test_both_are_upsert_only_single_commit_writers():
    assert UPSERT_WRITERS == ["pyiceberg-delete-add-files", "pyiceberg-rewrite-add-files"]
    for name in UPSERT_WRITERS:
        assert {op for op in Operation if writers()[name].supports(op)} == {Operation.UPSERT}
        assert writers()[name].single_commit


def upsert_table(tmp_path: Path, sets: DataSets) -> Table:
    """The upsert scenario's starting table (the base set), in a catalog of this test's own."""
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    return Upsert().prepare(catalog, "bench", sets)


def table_files(table: Table) -> set[str]:
    """Every file under the table's location: data, manifests, metadata."""
    return {str(p) for p in Path(urlparse(table.location()).path).rglob("*") if p.is_file()}


def source(data: DataSet, **manifest_changes: object) -> ParquetSource:
    manifest = data.manifest.model_copy(update=manifest_changes) if manifest_changes else data.manifest
    return ParquetSource(data.directory, manifest, BATCH_ROWS)


@pytest.mark.parametrize("writer", UPSERT_WRITERS)
def test_duplicate_keys_fail_before_anything_is_written(tmp_path, tiny_sets, writer):
    table = upsert_table(tmp_path, tiny_sets)
    before, snapshot = table_files(table), table.metadata.current_snapshot_id
    changes = tiny_sets["changes"].manifest
    twice = source(tiny_sets["changes"], files=changes.files * 2, rows=changes.rows * 2)
    with pytest.raises(ValueError, match=f"repeats {changes.rows:,} keys of id: no upsert executed"):
        get_writer(writer)().write(WriteJob(table, twice, Operation.UPSERT, ["id"]), StepTimer())
    assert table.refresh().metadata.current_snapshot_id == snapshot
    assert table_files(table) == before


@pytest.mark.parametrize(
    ("writer", "case", "message"),
    [
        *((writer, "partitioned", "needs an unpartitioned table") for writer in UPSERT_WRITERS),
        ("pyiceberg-delete-add-files", "two keys", r"matches one key column, not id, c001_int32"),
    ],
)
def test_what_add_files_cannot_do_is_refused_up_front(tmp_path, tiny_sets, writer, case, message):
    table = upsert_table(tmp_path, tiny_sets)
    if case == "partitioned":
        with table.update_spec() as spec:
            spec.add_field("id", BucketTransform(4), "id_bucket")
    before = table_files(table)
    keys = {"two keys": ["id", "c001_int32"]}.get(case, ["id"])
    with pytest.raises(ValueError, match=message):
        get_writer(writer)().write(
            WriteJob(table, source(tiny_sets["changes"]), Operation.UPSERT, keys), StepTimer()
        )
    assert table_files(table) == before


def test_change_keys_match_nulls_never_and_prune_files_by_their_key_bounds():
    from pyiceberg.types import LongType

    keys = ChangeKeys.of_keys(pa.table({"id": pa.array([20, 3, 7], pa.int64())}), 1, LongType())
    found = keys.members(pa.table({"id": pa.array([1, 3, None, 7, 21, 20])}))
    assert found.tolist() == [False, True, False, True, False, True]
    assert keys.members(pa.table({"id": pa.chunked_array([[7], [8]], pa.int32())})).tolist() == [True, False]

    class Bounds:
        def __init__(self, low: int, high: int) -> None:
            self.lower_bounds = {1: low.to_bytes(8, "little")}
            self.upper_bounds = {1: high.to_bytes(8, "little")}

    assert keys.may_be_in(Bounds(0, 3)) and keys.may_be_in(Bounds(8, 100)) and keys.may_be_in(Bounds(7, 7))
    assert not keys.may_be_in(Bounds(8, 19)) and not keys.may_be_in(Bounds(21, 99))


def test_the_rewrite_skips_files_without_a_change_key(tmp_path, tiny_sets):
    """The first 1,000 base rows upserted onto the base set: only the first of its two files
    holds their keys (its bounds say so), so only it is rewritten; the content is unchanged."""
    table = upsert_table(tmp_path, tiny_sets)
    untouched = sorted(task.file.file_path for task in table.scan().plan_files())[1:]
    first_rows = ParquetSource(tiny_sets["base"].directory, tiny_sets["base"].manifest, BATCH_ROWS, 1_000)
    get_writer("pyiceberg-rewrite-add-files")().write(
        WriteJob(table, first_rows, Operation.UPSERT, ["id"]), StepTimer()
    )
    table = table.refresh()
    summary = table.current_snapshot().summary
    assert (summary.operation.value, summary["deleted-data-files"], summary["added-data-files"]) == (
        "overwrite",
        "1",
        "2",  # the rewritten file (4,000 rows) and the one change file (1,000 rows)
    )
    live = {task.file.file_path for task in table.scan().plan_files()}
    assert set(untouched) <= live and len(table.history()) == 2
    content = read_content(table)
    base = tiny_sets["base"].manifest
    assert (content.rows, content.checksum) == (base.rows, base.checksum)


def fail_every_commit(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """Every catalog commit raises `error` (pyiceberg retries CommitFailedException first)."""

    def refuse(self: Table, *args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(Table, "_do_commit", refuse)
    monkeypatch.setattr("pyiceberg.table.TableProperties.COMMIT_MIN_RETRY_WAIT_MS_DEFAULT", 1)


WRITES = [(name, Operation.UPSERT, "changes") for name in UPSERT_WRITERS] + [
    ("pyiceberg-add-files", Operation.APPEND, "replacement")  # the same staged-files helper
]


@pytest.mark.parametrize(("writer", "operation", "set_name"), WRITES)
def test_a_refused_commit_leaves_not_a_single_file(
    tmp_path, tiny_sets, monkeypatch, writer, operation, set_name
):
    """The catalog refuses the commit (a conflict, retried, then given up): the change files, the
    rewritten files (pyiceberg's own, for delete-add-files) and the manifests are all gone."""
    table = upsert_table(tmp_path, tiny_sets)
    before, snapshot = table_files(table), table.metadata.current_snapshot_id
    fail_every_commit(monkeypatch, CommitFailedException("the table moved on"))
    timer = StepTimer()
    with pytest.raises(CommitFailedException):
        get_writer(writer)().write(WriteJob(table, source(tiny_sets[set_name]), operation, ["id"]), timer)
    assert len(timer.steps) == (2 if set_name == "changes" else 5)  # the files were written...
    assert table_files(table) == before  # ...and removed
    assert table.refresh().metadata.current_snapshot_id == snapshot


@pytest.mark.parametrize("writer", ["pyiceberg-rewrite-add-files", "pyiceberg-add-files"])
def test_a_commit_of_unknown_outcome_keeps_the_files(tmp_path, tiny_sets, monkeypatch, writer):
    """The request may have landed (here it did not): deleting its files could break the table, so
    they stay; at worst they are orphans."""
    table = upsert_table(tmp_path, tiny_sets)
    before = table_files(table)
    fail_every_commit(monkeypatch, OSError("connection reset after the request was sent"))
    appends = writer == "pyiceberg-add-files"
    operation, set_name = (Operation.APPEND, "replacement") if appends else (Operation.UPSERT, "changes")
    with pytest.raises(OSError, match="connection reset"):
        get_writer(writer)().write(
            WriteJob(table, source(tiny_sets[set_name]), operation, ["id"]), StepTimer()
        )
    kept = [path for path in table_files(table) - before if "/data/" in path]
    assert len(kept) == (5 if appends else 4)  # the rewrite: 2 rewritten base files + 2 change files


class CrashedUpsert(KilledMidWrite, Upsert):
    """The upsert with the worker SIGKILLed at a point (harness/engines/worker.py does the killing): a
    single commit lands whole or not at all."""

    in_default_matrix = False

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        if limit_rows == 0:  # killed before its one commit returned
            return self.expected_before(sets)
        return super().expected_after(sets)


def crash_scenario(point: KillPoint) -> type[Scenario]:
    attributes = {
        "name": f"crash-upsert-{point}",
        "description": f"upsert killed at {point}",
        "kill_point": point,
    }
    return type(f"CrashedUpsert_{point.replace('-', '_')}", (CrashedUpsert,), attributes)


@pytest.mark.parametrize("point", ["data-files", "before-commit", "after-commit"])
@pytest.mark.parametrize("writer", UPSERT_WRITERS)
def test_killed_mid_upsert_the_table_is_before_or_after_never_between(
    runner, tiny_sets, monkeypatch, writer, point
):
    scenario = crash_scenario(point)
    monkeypatch.setitem(scenarios(), scenario.name, scenario)  # the runner finds scenarios by name
    record = runner.run(RunPlan(scenario.name, writer, "tiny", tiny_sets, BATCH_ROWS, cap_bytes=1 << 30))
    checks = {c.name: c for c in record.verdict.checks}
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed]

    assert record.status == "error" and record.error.startswith(f"killed by SIGKILL at {point}"), record.error
    assert record.verdict.passed, failed
    assert checks["killed_at_point"].passed and checks["at_last_committed_snapshot"].passed
    after = tiny_sets["changes"].manifest.expected_after_upsert
    expected_rows = after.rows if point == "after-commit" else tiny_sets["base"].manifest.rows
    assert checks["row_count"].actual == expected_rows
    if point == "after-commit":
        assert record.orphan_files == 0 and record.snapshots_added >= 1
    else:  # its staged change files (and rewrites, before the commit) are stranded, as add-files'
        assert record.orphan_files > 0 and record.snapshots_added == 0


@pytest.mark.parametrize("writer", UPSERT_WRITERS)
def test_a_broken_change_set_fails_before_anything_is_written(runner, tiny_sets, tmp_path, writer):
    """Its pages unreadable: the key column is read first, so the error comes before any file."""
    broken = tmp_path / "changes-corrupt-page"
    manifest: DatasetManifest = damaged_copy(tiny_sets["changes"].directory, broken, "corrupt-page")
    sets = {**tiny_sets, "changes": DataSet(broken, manifest)}
    with pytest.raises(IcebenchError, match=r"part-00000\.parquet is unreadable"):  # bad input: exit 2
        runner.run(RunPlan("upsert", writer, "tiny", sets, BATCH_ROWS, cap_bytes=1 << 30))
    record = read_runs(runner.store.folder)[-1]  # recorded and judged all the same
    checks = {c.name: c for c in record.verdict.checks}
    assert record.status == "error" and record.writer == writer
    assert checks["table_unchanged_after_failure"].passed and checks["content_checksum"].passed
    assert record.orphan_files == 0 and record.snapshots_added == 0 and record.step_latencies_s == []


@pytest.mark.parametrize("scenario", ["crash-before-commit", "bad-source-corrupt-page", "concurrent-writers"])
@pytest.mark.parametrize("writer", UPSERT_WRITERS)
def test_append_scenarios_record_them_unsupported(runner, tiny_sets, writer, scenario):
    record = runner.run(RunPlan(scenario, writer, "tiny", tiny_sets, BATCH_ROWS, cap_bytes=1 << 30))
    assert (record.status, record.verdict) == ("unsupported", None)
    assert record.error == f"{writer} does not support append"


@pytest.mark.parametrize("writer", UPSERT_WRITERS)
def test_data_files_pyiceberg_wrote_with_field_ids_are_rewritten_right(tmp_path, tiny_sets, writer):
    """The base set appended by pyiceberg (its files carry field ids), then the upsert: the rewritten
    files keep the ids, the change files have none (name mapping), the content is as promised."""
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("bench")
    base = ParquetSource.open(tiny_sets["base"].directory, BATCH_ROWS)
    table = catalog.create_table("bench.upsert", schema=base.schema)
    table.append(base.read_all())
    job = WriteJob(table, source(tiny_sets["changes"]), Operation.UPSERT, ["id"])
    get_writer(writer)().write(job, StepTimer())
    content = read_content(table.refresh())
    after = tiny_sets["changes"].manifest.expected_after_upsert
    assert (content.rows, content.checksum) == (after.rows, after.checksum)
    assert content.tally.distinct == content.tally.rows == after.rows
    ours = [path for path in content.data_files if "icebench-" in path]  # change and rewritten files
    rewritten = [path for path in ours if "-rewrite-" in path]
    assert bool(rewritten) == (writer == "pyiceberg-rewrite-add-files")
    assert all(has_field_ids(path) for path in rewritten)
    assert not any(has_field_ids(path) for path in ours if path not in rewritten)


def has_field_ids(path: str) -> bool:
    return pq.read_schema(urlparse(path).path).field("id").metadata is not None


@pytest.mark.parametrize("change", ["drop", "rename"])
@pytest.mark.parametrize("writer", UPSERT_WRITERS)
def test_a_column_dropped_or_renamed_since_the_files_were_written(tmp_path, tiny_sets, writer, change):
    """The base files still hold c019_bool, the table has dropped it or calls it `flag`: rewritten
    files carry the table's current columns under their current names, and the table reads back
    exactly the base rows not replaced plus the change rows, the column gone or renamed."""
    table = upsert_table(tmp_path, tiny_sets)
    with table.update_schema() as update:
        if change == "drop":
            update.delete_column("c019_bool")
        else:
            update.rename_column("c019_bool", "flag")

    def evolved(data: pa.Table) -> pa.Table:
        if change == "drop":
            return data.drop_columns(["c019_bool"])
        return data.rename_columns(["flag" if name == "c019_bool" else name for name in data.column_names])

    changes = evolved(source(tiny_sets["changes"]).read_all())
    folder = tmp_path / "changes"
    folder.mkdir()
    pq.write_table(changes, folder / "part-00000.parquet")
    job = WriteJob(
        table, ParquetSource(folder, tiny_sets["changes"].manifest, BATCH_ROWS), Operation.UPSERT, ["id"]
    )
    get_writer(writer)().write(job, StepTimer())

    base = evolved(source(tiny_sets["base"]).read_all())
    kept = base.filter(pc.invert(pc.is_in(base["id"], value_set=changes["id"])))
    expected = Checksum.of(kept) + Checksum.of(changes)
    content = read_content(table.refresh())
    assert (content.rows, content.checksum) == (expected.rows, expected.hex)


def test_change_keys_of_any_type_and_of_several_columns():
    from uuid import UUID

    from pyiceberg.types import StringType, UUIDType

    strings = ChangeKeys.of_keys(pa.table({"k": pa.array(["b", "a"], pa.large_string())}), 1, StringType())
    assert strings.members(pa.table({"k": ["a", "c", None, "b"]})).tolist() == [True, False, False, True]
    ids = pa.array([UUID(int=7).bytes, UUID(int=3).bytes], pa.uuid())
    uuids = ChangeKeys.of_keys(pa.table({"k": ids}), 1, UUIDType())
    probe = pa.array([UUID(int=3).bytes, UUID(int=4).bytes], pa.uuid())
    assert uuids.members(pa.table({"k": probe})).tolist() == [True, False]
    pairs = ChangeKeys.of_keys(pa.table({"r": ["eu", "us"], "n": [1, 1]}), 1, StringType())
    found = pairs.members(pa.table({"r": ["us", "us", "eu"], "n": [1, 2, None]}))
    assert found.tolist() == [True, False, False]
    with pytest.raises(ValueError, match="repeats 1 keys of r, n"):
        ChangeKeys.of_keys(pa.table({"r": ["eu", "eu"], "n": [1, 1]}), 1, StringType())
