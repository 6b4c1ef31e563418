"""The oracle's checks fire on damaged tables: each damage here passes the content checks and is
caught only by the check named (a checker that can be fooled is worse than none)."""

import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from old_checksum import OldChecksum, old_hash_string_collision
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.conversions import to_bytes
from pyiceberg.expressions import EqualTo
from pyiceberg.io.pyarrow import parquet_file_to_data_file
from pyiceberg.table import Table
from pyiceberg.types import LongType, StringType

from generators.schema import KEY_COLUMN
from harness.judge.oracle import capture_state, judge
from harness.judge.readback import _prefetched, read_content
from harness.model import Verdict
from scenarios import get_scenario
from scenarios.base import DataSets, _place_file, expect_set, register_set

# DataFile fields by position (pyiceberg 0.12's Record layout): record_count, lower_bounds.
_RECORD_COUNT, _LOWER_BOUNDS = 4, 10


def _append_table(tmp_path: Path, sets: DataSets) -> tuple[Table, object]:
    catalog = SqlCatalog("check", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    scenario = get_scenario("append")()
    table = scenario.prepare(catalog, "bench", sets)
    return table, scenario


def _judge(table: Table, scenario: object, sets: DataSets, before: object) -> tuple[Verdict, dict]:
    verdict, _ = judge(
        table.refresh(),
        expected=expect_set(sets["base"]),
        expected_schema=scenario.expected_schema(sets),
        error=None,
        before=before,
        single_commit=True,
    )
    return verdict, {check.name: check for check in verdict.checks}


def _content_passes(checks: dict) -> None:
    for name in ("row_count", "keys_unique", "key_set", "content_checksum"):
        assert checks[name].passed, checks[name]


def test_a_correct_table_passes_every_new_check(tiny_sets, tmp_path):
    table, scenario = _append_table(tmp_path, tiny_sets)
    before = capture_state(table)
    register_set(table, tiny_sets["base"])
    verdict, checks = _judge(table, scenario, tiny_sets, before)
    assert verdict.passed, [f"{c.name}: {c.reason}" for c in verdict.failed]
    new = ("schema_matches", "manifest_stats_true", "snapshot_summary_true", "no_orphans_after_success")
    assert all(checks[name].passed for name in new)


def test_manifest_stats_that_lie_fail_manifest_stats_true(tiny_sets, tmp_path):
    """A file whose record_count and key bounds lie: a full read finds every row, a filtered scan
    pruned by the bounds finds none of the file's first keys."""
    table, scenario = _append_table(tmp_path, tiny_sets)
    before = capture_state(table)
    base = tiny_sets["base"]
    locations = table.location_provider()
    data_files = []
    for entry in base.manifest.files:
        target = locations.new_data_location(f"lying-{entry.name}")
        _place_file(base.directory / entry.name, target, table)
        data_files.append(parquet_file_to_data_file(table.io, table.metadata, target))
    first_key = base.manifest.key_ranges[0][0]
    key_id = table.schema().find_field(KEY_COLUMN).field_id
    lying = data_files[0]
    lying._data[_RECORD_COUNT] = lying.record_count // 2  # a writer bug, simulated
    lying._data[_LOWER_BOUNDS] = {**lying.lower_bounds, key_id: to_bytes(LongType(), first_key + 1_000)}
    with table.transaction() as txn:
        # What add_files sets too: the files carry no field ids, so readers map them by name.
        txn.set_properties({"schema.name-mapping.default": table.schema().name_mapping.model_dump_json()})
        with txn.update_snapshot().fast_append() as append:
            for data_file in data_files:
                append.append_data_file(data_file)

    table = table.refresh()
    assert len(table.scan(row_filter=EqualTo(KEY_COLUMN, first_key)).to_arrow()) == 0  # pruned away
    verdict, checks = _judge(table, scenario, tiny_sets, before)
    _content_passes(checks)  # every row is still there for a full read
    stats = checks["manifest_stats_true"]
    assert not verdict.passed and not stats.passed
    assert "lying-part-00000.parquet" in stats.reason
    assert "record_count 2,500 but 5,000 rows" in stats.reason
    assert f"column id lower bound {first_key + 1_000} but min {first_key}" in stats.reason
    # The summary pyiceberg derived from the lying count disagrees with the rows read, too.
    assert not checks["snapshot_summary_true"].passed
    assert "total-records 7,500 but the table has 10,000" in checks["snapshot_summary_true"].reason


def test_a_stray_extra_column_fails_schema_matches(tiny_sets, tmp_path):
    """All null, the column changes no row's checksum: only the schema check sees it."""
    table, scenario = _append_table(tmp_path, tiny_sets)
    before = capture_state(table)
    with table.update_schema() as update:
        update.add_column("stray", StringType())
    register_set(table, tiny_sets["base"])
    verdict, checks = _judge(table, scenario, tiny_sets, before)
    _content_passes(checks)
    schema = checks["schema_matches"]
    assert not verdict.passed and not schema.passed
    assert schema.reason == "extra column stray (string)"


def test_a_changed_column_type_is_named(tiny_sets, tmp_path):
    table, scenario = _append_table(tmp_path, tiny_sets)
    int_column = next(f.name for f in table.schema().fields if f.name.endswith("_int32"))
    with table.update_schema() as update:
        update.update_column(int_column, LongType())  # a legal promotion, yet not the source's type
    _, checks = _judge(table, scenario, tiny_sets, capture_state(table))
    assert checks["schema_matches"].reason == f"column {int_column} is long, expected int"


def test_a_stray_file_after_success_fails_no_orphans(tiny_sets, tmp_path):
    table, scenario = _append_table(tmp_path, tiny_sets)
    before = capture_state(table)
    register_set(table, tiny_sets["base"])
    stray = locations_path(table) / "stray-from-a-retried-commit.parquet"
    pq.write_table(pq.read_table(tiny_sets["base"].directory / "part-00000.parquet"), stray)
    verdict, checks = _judge(table, scenario, tiny_sets, before)
    _content_passes(checks)
    orphans = checks["no_orphans_after_success"]
    assert not verdict.passed and not orphans.passed
    assert "stray-from-a-retried-commit.parquet" in orphans.reason
    assert "reachable from no metadata" in orphans.reason


def locations_path(table: Table) -> Path:
    folder = Path(table.location().removeprefix("file://")) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("batch_rows", [64, 777, 100_000])
def test_the_streaming_read_back_matches_the_manifest_at_any_batch_size(tiny_sets, tmp_path, batch_rows):
    table, _ = _append_table(tmp_path, tiny_sets)
    register_set(table, tiny_sets["base"])
    content = read_content(table.refresh(), batch_rows=batch_rows)
    base = tiny_sets["base"].manifest
    assert (content.rows, content.checksum) == (base.rows, base.checksum)
    assert content.rows_in_files == content.rows and len(content.files) == len(base.files)


def test_the_reader_thread_hands_over_its_error_and_stops_when_the_oracle_does():
    def failing():
        yield 0, None, None
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        list(_prefetched(failing(), depth=1))
    endless = _prefetched(((i, None, None) for i in itertools.count()), depth=2)
    assert next(endless)[0] == 0
    endless.close()  # the producer, blocked on a full queue, must end rather than hang


def test_a_string_collision_of_the_old_hash_fails_content_checksum(tiny_sets, tmp_path):
    """One long string swapped for a different one of the same length that the old, linear string
    hash cannot tell apart (tests/old_checksum.py builds it by lattice reduction)."""
    table, scenario = _append_table(tmp_path, tiny_sets)
    before = capture_state(table)
    base = tiny_sets["base"]
    first = pq.read_table(base.directory / base.manifest.files[0].name)
    text = next(name for name in first.column_names if name.endswith("_text"))
    values = first.column(text).to_pylist()
    row = next(i for i, value in enumerate(values) if value is not None and len(value) >= 60)
    values[row] = old_hash_string_collision(values[row])
    damaged = first.set_column(first.column_names.index(text), text, pa.array(values, pa.string()))
    assert damaged.column(text)[row] != first.column(text)[row]
    assert OldChecksum.of(damaged).hex == OldChecksum.of(first).hex  # the old checksum is fooled

    folder = locations_path(table)
    paths = [str(folder / "damaged-part-00000.parquet")]
    pq.write_table(damaged, paths[0], store_decimal_as_integer=True)
    for entry in base.manifest.files[1:]:
        paths.append(table.location_provider().new_data_location(f"intact-{entry.name}"))
        _place_file(base.directory / entry.name, paths[-1], table)
    table.add_files([f"file://{path}" if path.startswith("/") else path for path in paths])

    verdict, checks = _judge(table, scenario, tiny_sets, before)
    for name in ("row_count", "keys_unique", "key_set", "schema_matches", "manifest_stats_true"):
        assert checks[name].passed, checks[name]
    assert not verdict.passed and [c.name for c in verdict.failed] == ["content_checksum"]


def test_metadata_files_aged_out_of_the_log_are_committed_not_orphans(tiny_sets, tmp_path):
    """With previous-versions-max 1 the log forgets all but the last file: still no orphan."""
    table, scenario = _append_table(tmp_path, tiny_sets)
    with table.transaction() as txn:
        txn.set_properties({"write.metadata.previous-versions-max": "1"})
    before = capture_state(table)
    register_set(table, tiny_sets["base"])
    table = table.refresh()
    with table.transaction() as txn:
        txn.set_properties({"note": "one more commit"})
    table = table.refresh()
    assert len(table.metadata.metadata_log) == 1  # three earlier metadata files, one listed
    _, checks = _judge(table, scenario, tiny_sets, before)
    assert checks["no_orphans_after_success"].passed, checks["no_orphans_after_success"].reason
