"""physical_types_match (harness/judge/physical.py): a data file whose timestamp unit or zone flag
breaks the table schema fails it alone, though the read-back (with pyiceberg's allowances) finds
every row; a legal spelling of the same physical type passes."""

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import pyarrow as pyiceberg_arrow
from pyiceberg.io.pyarrow import parquet_file_to_data_file
from test_oracle_checks import _append_table, _judge

from harness.judge.oracle import capture_state
from scenarios.base import DataSets

Alter = Callable[[pa.Table], pa.Table]
TS = "c007_ts"  # timestamptz in the table: microseconds, adjusted to UTC


def _cast(column: str, kind: pa.DataType) -> Alter:
    def alter(rows: pa.Table) -> pa.Table:
        index = rows.schema.get_field_index(column)
        return rows.set_column(index, rows.schema.field(index).with_type(kind), rows[column].cast(kind))

    return alter


def _judged_with_first_file(tiny_sets: DataSets, tmp_path: Path, alter: Alter, monkeypatch):
    """The base set appended, its first file rewritten by `alter` as a writer would have written it
    (pyiceberg's own check of a file's schema against the table's set aside, as a writer that
    does not use pyiceberg has none)."""
    monkeypatch.setattr(pyiceberg_arrow, "_check_pyarrow_schema_compatible", lambda *_, **__: None)
    table, scenario = _append_table(tmp_path, tiny_sets)
    base = tiny_sets["base"]
    paths = []
    for index, entry in enumerate(base.manifest.files):
        rows = pq.read_table(base.directory / entry.name)
        target = table.location_provider().new_data_location(f"physical-{entry.name}")
        local = Path(target.removeprefix("file://"))
        local.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(alter(rows) if index == 0 else rows, local)
        paths.append(target)
    before = capture_state(table)
    with table.transaction() as txn:
        txn.set_properties({"schema.name-mapping.default": table.schema().name_mapping.model_dump_json()})
        with txn.update_snapshot().fast_append() as append:
            for path in paths:
                append.append_data_file(parquet_file_to_data_file(table.io, txn.table_metadata, path))
    return _judge(table.refresh(), scenario, tiny_sets, before)


def test_a_nanosecond_timestamp_in_a_microsecond_column_fails_alone(tiny_sets, tmp_path, monkeypatch):
    verdict, checks = _judged_with_first_file(
        tiny_sets, tmp_path, _cast(TS, pa.timestamp("ns", tz="UTC")), monkeypatch
    )
    assert [check.name for check in verdict.failed] == ["physical_types_match"], [
        f"{c.name}: {c.reason}" for c in verdict.failed
    ]
    assert checks["physical_types_match"].reason == (
        f"data/physical-part-00000.parquet: column {TS} is timestamptz in the table (us, adjusted to UTC) "
        "but stored as timestamp ns, adjusted to UTC"
    )


def test_a_zone_flag_that_disagrees_with_the_table_fails_alone(tiny_sets, tmp_path, monkeypatch):
    verdict, checks = _judged_with_first_file(tiny_sets, tmp_path, _cast(TS, pa.timestamp("us")), monkeypatch)
    assert [check.name for check in verdict.failed] == ["physical_types_match"], [
        f"{c.name}: {c.reason}" for c in verdict.failed
    ]
    assert "stored as timestamp us, not adjusted to UTC" in checks["physical_types_match"].reason


def test_another_spelling_of_utc_is_the_same_physical_type_and_passes(tiny_sets, tmp_path, monkeypatch):
    verdict, checks = _judged_with_first_file(
        tiny_sets, tmp_path, _cast(TS, pa.timestamp("us", tz="+00:00")), monkeypatch
    )
    assert verdict.passed, [f"{c.name}: {c.reason}" for c in verdict.failed]
    assert checks["physical_types_match"].passed
