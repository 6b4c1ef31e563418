"""The oracle's metadata checks (harness/judge/metadata.py) against the Iceberg spec: each damage is
one a faulty writer could commit, written into the table's current metadata file (or a snapshot's
summary), with the rows left intact; the check named alone fails. Each legal variant, metadata the
spec allows that a writer other than pyiceberg may well write, passes."""

import json
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from test_oracle_checks import _append_table, _judge

from harness.base.errors import IcebenchError
from harness.judge.oracle import capture_state, judge
from harness.model import TableLayout
from scenarios import get_scenario
from scenarios.base import DataSets, expect_set, register_set

Metadata = dict[str, Any]


def _two_snapshot_table(tiny_sets: DataSets, tmp_path: Path) -> tuple[Table, object, object]:
    """A table whose first snapshot (an empty append) is the parent of the run's one: the base set."""
    table, scenario = _append_table(tmp_path, tiny_sets)
    with table.transaction() as txn, txn.update_snapshot().fast_append():
        pass
    table = table.refresh()
    assert len(table.snapshots()) == 1
    before = capture_state(table)
    register_set(table, tiny_sets["base"])
    return table.refresh(), scenario, before


def _rewrite(table: Table, damage: Callable[[Metadata], None]) -> Table:
    """The table's current metadata file, edited in place as a writer bug would have written it."""
    path = Path(table.metadata_location.removeprefix("file://"))
    metadata = json.loads(path.read_text())
    damage(metadata)
    path.write_text(json.dumps(metadata))
    return table.catalog.load_table(table.name())


def _judged(tiny_sets: DataSets, tmp_path: Path, damage: Callable[[Metadata], None]):
    table, scenario, before = _two_snapshot_table(tiny_sets, tmp_path)
    table = _rewrite(table, damage)
    return _judge(table, scenario, tiny_sets, before)


def _run_snapshot(metadata: Metadata) -> Metadata:
    return max(metadata["snapshots"], key=lambda snapshot: snapshot["sequence-number"])


def _only_failed(verdict, name: str) -> str:
    assert [check.name for check in verdict.failed] == [name], [
        f"{c.name}: {c.reason}" for c in verdict.failed
    ]
    return verdict.failed[0].reason


def _passes(verdict) -> None:
    assert verdict.passed, [f"{c.name}: {c.reason}" for c in verdict.failed]


def test_the_undamaged_table_passes_every_metadata_check(tiny_sets, tmp_path):
    verdict, checks = _judged(tiny_sets, tmp_path, lambda metadata: None)
    _passes(verdict)
    for name in ("refs_current", "snapshot_lineage", "snapshot_operations", "snapshot_summary_true"):
        assert checks[name].passed
    # Iceberg Java loaded it: its metadata, both manifest lists, the manifest and its two entries.
    assert checks["loads_in_reference"].actual == {
        "format_version": 2,
        "manifest_lists": 2,
        "manifests": 1,
        "entries": 2,
        "deletion_vectors": 0,
        "deleted_positions": 0,
    }


def test_refs_main_that_disagrees_with_the_current_snapshot_fails(tiny_sets, tmp_path):
    def point_main_at_the_parent(metadata: Metadata) -> None:
        parent = min(metadata["snapshots"], key=lambda snapshot: snapshot["sequence-number"])
        metadata["refs"]["main"]["snapshot-id"] = parent["snapshot-id"]

    verdict, checks = _judged(tiny_sets, tmp_path, point_main_at_the_parent)
    assert [check.name for check in verdict.failed] == ["refs_current", "loads_in_reference"]
    reason = checks["refs_current"].reason
    assert "refs.main names snapshot" in reason and "Iceberg Java refuses" in reason
    # The reference implementation, asked, says so itself.
    assert "Current snapshot ID does not match main branch" in checks["loads_in_reference"].reason


def test_a_tag_on_the_current_snapshot_is_legal(tiny_sets, tmp_path):
    def tag(metadata: Metadata) -> None:
        metadata["refs"]["release"] = {"snapshot-id": metadata["current-snapshot-id"], "type": "tag"}

    verdict, _ = _judged(tiny_sets, tmp_path, tag)
    _passes(verdict)


@pytest.mark.parametrize("label", ["replace", "delete"])
def test_an_append_labelled_replace_or_delete_fails(tiny_sets, tmp_path, label):
    def relabel(metadata: Metadata) -> None:
        _run_snapshot(metadata)["summary"]["operation"] = label

    verdict, _ = _judged(tiny_sets, tmp_path, relabel)
    reason = _only_failed(verdict, "snapshot_operations")
    assert f"labelled '{label}' but it" in reason
    assert ("only adds data files" if label == "replace" else "it adds data files") in reason


def test_an_append_labelled_overwrite_is_legal(tiny_sets, tmp_path):
    """The spec's overwrite adds and removes files; one that removes none is still one (pyiceberg's
    replace labels its adding snapshot so)."""

    def relabel(metadata: Metadata) -> None:
        _run_snapshot(metadata)["summary"]["operation"] = "overwrite"

    verdict, _ = _judged(tiny_sets, tmp_path, relabel)
    _passes(verdict)


def test_a_parent_that_never_existed_fails_lineage(tiny_sets, tmp_path):
    def orphan(metadata: Metadata) -> None:
        _run_snapshot(metadata)["parent-snapshot-id"] = 12345

    verdict, _ = _judged(tiny_sets, tmp_path, orphan)
    assert "parent 12345 does not exist and never did" in _only_failed(verdict, "snapshot_lineage")


def test_a_sequence_number_not_above_the_parents_fails_lineage(tiny_sets, tmp_path):
    def repeat_number(metadata: Metadata) -> None:
        run = _run_snapshot(metadata)
        run["sequence-number"] -= 1

    verdict, _ = _judged(tiny_sets, tmp_path, repeat_number)
    reason = _only_failed(verdict, "snapshot_lineage")
    assert "not above its parent's" in reason and "share sequence number" in reason


def test_a_snapshot_timestamped_before_its_parent_fails_but_clock_skew_under_a_minute_passes(
    tiny_sets, tmp_path
):
    def back(by_ms: int) -> Callable[[Metadata], None]:
        def damage(metadata: Metadata) -> None:
            parent = min(metadata["snapshots"], key=lambda snapshot: snapshot["sequence-number"])
            _run_snapshot(metadata)["timestamp-ms"] = parent["timestamp-ms"] - by_ms

        return damage

    (tmp_path / "hour").mkdir()
    (tmp_path / "skew").mkdir()
    verdict, _ = _judged(tiny_sets, tmp_path / "hour", back(3_600_000))
    assert "3,600,000 ms before its parent's" in _only_failed(verdict, "snapshot_lineage")
    skewed, _ = _judged(tiny_sets, tmp_path / "skew", back(30_000))
    _passes(skewed)


def test_a_snapshot_log_naming_a_missing_snapshot_fails(tiny_sets, tmp_path):
    def phantom(metadata: Metadata) -> None:
        metadata["snapshot-log"].insert(0, {"snapshot-id": 777, "timestamp-ms": 0})

    verdict, _ = _judged(tiny_sets, tmp_path, phantom)
    assert "snapshot-log names snapshot 777" in _only_failed(verdict, "snapshot_lineage")


def test_a_metadata_log_naming_a_missing_file_fails_naming_it(tiny_sets, tmp_path):
    def lost(metadata: Metadata) -> None:
        entry = metadata["metadata-log"][-1]
        entry["metadata-file"] = entry["metadata-file"].replace(".metadata.json", "-lost.metadata.json")

    verdict, checks = _judged(tiny_sets, tmp_path, lost)
    reason = checks["snapshot_lineage"].reason
    assert "metadata-log names metadata/" in reason and "-lost.metadata.json, which is not there" in reason
    # The file it should have named is then reachable from no metadata: those checks follow from it.
    assert {c.name for c in verdict.failed} == {
        "snapshot_lineage",
        "no_orphans_after_success",
        "single_commit",
    }


def test_summary_counts_that_lie_but_net_right_fail(tiny_sets, tmp_path):
    def lie(metadata: Metadata) -> None:
        summary = _run_snapshot(metadata)["summary"]
        summary["added-records"] = str(int(summary["added-records"]) + 10)
        summary["deleted-records"] = "10"

    verdict, _ = _judged(tiny_sets, tmp_path, lie)
    reason = _only_failed(verdict, "snapshot_summary_true")
    assert "says added-records 10,010, its manifests 10,000" in reason
    assert "says deleted-records 10, its manifests 0" in reason


def test_a_file_size_total_that_lies_fails(tiny_sets, tmp_path):
    def lie(metadata: Metadata) -> None:
        summary = _run_snapshot(metadata)["summary"]
        summary["added-files-size"] = str(int(summary["added-files-size"]) * 2)

    verdict, _ = _judged(tiny_sets, tmp_path, lie)
    assert "added-files-size" in _only_failed(verdict, "snapshot_summary_true")


def test_a_count_that_is_no_number_fails_the_summary_not_the_harness(tiny_sets, tmp_path):
    def garbled(metadata: Metadata) -> None:
        _run_snapshot(metadata)["summary"]["added-records"] = "many"

    verdict, _ = _judged(tiny_sets, tmp_path, garbled)
    assert "says added-records 'many', not a count" in _only_failed(verdict, "snapshot_summary_true")


def test_a_summary_of_the_operation_alone_is_legal(tiny_sets, tmp_path):
    """Every summary field but the operation is optional."""

    def strip(metadata: Metadata) -> None:
        run = _run_snapshot(metadata)
        run["summary"] = {"operation": run["summary"]["operation"]}

    verdict, _ = _judged(tiny_sets, tmp_path, strip)
    _passes(verdict)


# --- layout_in_force: what the run asked for is the table's after the write ---------------------

CODEC = "write.parquet.compression-codec"
BY_DAY = TableLayout(partition=("day(c017_ts)",), sort=("c001_int32",), properties=((CODEC, "zstd"),))


def _judged_layout(
    tiny_sets: DataSets, tmp_path: Path, write: Callable[[Table], None], layout: TableLayout = BY_DAY
):
    """The base set written by `write` into a table made as `layout` asks."""
    catalog = SqlCatalog("layout", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    scenario = get_scenario("append")()
    table = scenario.prepare(catalog, "bench", tiny_sets, layout)
    before = capture_state(table)
    write(table)
    verdict, _ = judge(
        table.refresh(),
        expected=expect_set(tiny_sets["base"]),
        expected_schema=scenario.expected_schema(tiny_sets),
        error=None,
        before=before,
        single_commit=False,
        layout=layout,
    )
    return verdict, {check.name: check for check in verdict.checks}


def test_the_asked_for_layout_written_as_asked_passes(tiny_sets, tmp_path):
    verdict, checks = _judged_layout(
        tiny_sets, tmp_path, lambda table: register_set(table, tiny_sets["base"])
    )
    _passes(verdict)
    assert checks["layout_in_force"].actual == "day(c017_ts)"


def test_a_format_version_asked_as_a_property_is_held_as_the_tables_own(tiny_sets, tmp_path):
    """Iceberg keeps it as a field of the metadata, not among the properties."""
    version_one = TableLayout(partition=BY_DAY.partition, properties=(("format-version", "1"),))
    verdict, checks = _judged_layout(
        tiny_sets, tmp_path, partial(register_set, data=tiny_sets["base"]), version_one
    )
    _passes(verdict)
    assert checks["loads_in_reference"].actual["format_version"] == 1


def test_a_writer_that_drops_the_partition_spec_and_writes_unpartitioned_fails(tiny_sets, tmp_path):
    def unpartitioned(table: Table) -> None:
        with table.update_spec() as update:
            update.remove_field(table.spec().fields[0].name)
        register_set(table.refresh(), tiny_sets["base"])

    verdict, _ = _judged_layout(tiny_sets, tmp_path, unpartitioned)
    reason = _only_failed(verdict, "layout_in_force")
    assert reason == "partitioned by [], asked for [day(c017_ts)]"


def test_a_writer_that_drops_an_asked_for_property_or_sort_order_fails(tiny_sets, tmp_path):
    def careless(table: Table) -> None:
        with table.transaction() as txn:
            txn.remove_properties(CODEC)
            txn.update_sort_order().desc("c002_int64", IdentityTransform()).commit()
        register_set(table.refresh(), tiny_sets["base"])

    verdict, _ = _judged_layout(tiny_sets, tmp_path, careless)
    reason = _only_failed(verdict, "layout_in_force")
    assert "sorted by [c002_int64 desc], asked for [c001_int32 asc]" in reason
    assert "property write.parquet.compression-codec is None, asked for 'zstd'" in reason


def test_a_renamed_partition_field_and_a_property_of_the_writers_own_are_legal(tiny_sets, tmp_path):
    def own_names(table: Table) -> None:
        with table.transaction() as txn:
            txn.set_properties({"written-by": "a writer of its own"})
            with txn.update_spec() as update:
                update.rename_field(table.spec().fields[0].name, "ts_day_renamed")
        register_set(table.refresh(), tiny_sets["base"])

    verdict, _ = _judged_layout(tiny_sets, tmp_path, own_names)
    _passes(verdict)


def test_without_the_reference_build_the_check_is_left_out_and_said_once(monkeypatch):
    from harness.judge import reference
    from harness.services import rest_catalog

    def not_built() -> str:
        raise IcebenchError("the REST catalog server is not built: run `make rest-catalog`")

    monkeypatch.setattr(rest_catalog, "classpath", not_built)
    judge_here = reference.ReferenceJudge()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert judge_here.check(None) is None and judge_here.check(None) is None  # no table is touched
    assert [str(warning.message) for warning in said] == [
        "loads_in_reference is not checked: the REST catalog server is not built: run `make rest-catalog`"
    ]


def test_a_reference_jvm_that_died_is_started_again_not_blamed_on_the_writer(tiny_sets, tmp_path):
    """It dies with the thread that started it: the next table starts another, and still judges."""
    from harness.judge.reference import REFERENCE

    table, scenario, before = _two_snapshot_table(tiny_sets, tmp_path)
    first, _ = _judge(table, scenario, tiny_sets, before)
    assert REFERENCE._process is not None
    REFERENCE._process.kill()
    REFERENCE._process.wait()
    again, checks = _judge(table, scenario, tiny_sets, before)
    _passes(first)
    _passes(again)
    assert checks["loads_in_reference"].passed
