"""The oracle's read of struct, list and map columns (harness/judge/nested.py): it sees what the
files hold, every null where it was, where pyiceberg's own projection turns a null list of
structs into an empty one (apache/iceberg-python#3833) and would blame a writer whose file is right."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.conversions import to_bytes
from pyiceberg.io.pyarrow import parquet_file_to_data_file, pyarrow_to_schema
from pyiceberg.table import Table
from pyiceberg.table.name_mapping import MappedField, NameMapping
from pyiceberg.types import LongType, NestedField, StructType
from test_checksum_nested import ORDER, ROWS, table_of

from generators.checksum import Checksum
from generators.keys import KeyScan
from harness.judge.nested import project_nested
from harness.judge.oracle import capture_state, judge, schema_check
from harness.judge.readback import read_content, rows_with_key
from harness.model import Expectation


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    catalog = SqlCatalog("icebench", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/w")
    catalog.create_namespace("nested")
    return catalog


def added(catalog: SqlCatalog, tmp_path: Path, rows: pa.Table, name: str = "t") -> Table:
    """A table whose data file is written by pyarrow (right, nulls and all) and added as it is."""
    table = catalog.create_table(f"nested.{name}", schema=rows.schema)
    path = tmp_path / f"{name}.parquet"
    pq.write_table(rows, path)
    table.add_files([str(path)])
    return table


def test_the_oracle_reads_a_null_list_of_structs_as_null(catalog: SqlCatalog, tmp_path: Path):
    rows = table_of(ROWS * 3)
    assert rows.column("order").to_pylist()[2]["lines"] is None  # the case pyiceberg rebuilds as []
    table = added(catalog, tmp_path, rows)
    assert pyiceberg_reads_it_as_empty(table)  # why the oracle projects nested columns itself
    content = read_content(table)
    assert (content.rows, content.checksum) == (rows.num_rows, Checksum.of(rows).hex)


def pyiceberg_reads_it_as_empty(table: Table) -> bool:
    return table.scan().to_arrow().column("order").to_pylist()[2]["lines"] == []


def test_a_nested_field_promoted_after_the_file_reads_as_the_table_says(catalog: SqlCatalog, tmp_path: Path):
    rows = table_of(ROWS)
    table = added(catalog, tmp_path, rows)
    with table.update_schema() as update:
        update.update_column(("order", "ship_to", "floor"), LongType())
    content = read_content(table.refresh())
    assert content.checksum == Checksum.of(rows).hex  # int and long hash alike


def test_a_nested_field_added_after_the_file_is_null_in_its_rows():
    kind = pa.struct([("a", pa.int64())])
    array = pa.array([{"a": 1}, None], kind)
    mapping = NameMapping(
        [MappedField(field_id=1, names=["s"], fields=[MappedField(field_id=2, names=["a"])])]
    )
    file_type = pyarrow_to_schema(pa.schema([("s", kind)]), mapping).fields[0].field_type
    table_type = StructType(
        NestedField(2, "a", LongType(), required=False), NestedField(3, "b", LongType(), required=False)
    )
    projected = project_nested(array, file_type, table_type)
    assert projected.to_pylist() == [{"a": 1, "b": None}, None]


def test_the_schema_check_compares_nested_types_whole(catalog: SqlCatalog, tmp_path: Path):
    rows = table_of(ROWS)
    table = added(catalog, tmp_path, rows)
    assert schema_check(table, rows.schema).passed  # the table's own ids do not count
    address = pa.struct(
        [("zip", pa.string()), ("city", pa.string()), pa.field("floor", pa.int32(), nullable=False)]
    )
    order = pa.struct([*(ORDER.field(index) for index in range(2)), pa.field("ship_to", address)])
    other = rows.schema.set(1, pa.field("order", order))  # a nested field made required
    check = schema_check(table, other)
    assert not check.passed
    assert "floor: optional int" in check.reason and "floor: required int" in check.reason


def test_the_scans_and_the_trace_of_a_row_read_nested_nulls_too(catalog: SqlCatalog, tmp_path: Path):
    """The selective scan's reader and rows_with_key (the row a failed checksum names) read whole
    row groups, nested columns beside flat ones: the same projection."""
    rows = table_of(ROWS * 3)
    table = added(catalog, tmp_path, rows)
    found = rows_with_key(table, KeyScan.of_range("id", 3, 3))
    assert found.num_rows == 3 and all(order["lines"] is None for order in found.column("order").to_pylist())


@pytest.mark.parametrize("damage", ["upper bound", "null count"])
def test_a_false_claim_about_a_struct_leaf_fails_manifest_stats(
    catalog: SqlCatalog, tmp_path: Path, damage: str
):
    """A manifest entry whose statistics of a column inside a struct (user.home.zip) are not the
    file's: a scan pruned by them would skip the file's rows."""
    home = pa.struct([("city", pa.string()), ("zip", pa.int64())])
    user = pa.struct([("name", pa.string()), ("home", home)])
    users = [
        None if i % 9 == 0 else {"name": f"u{i}", "home": None if i % 7 == 0 else {"city": "x", "zip": i}}
        for i in range(200)
    ]
    rows = pa.table({"id": pa.array(range(200), pa.int64()), "user": pa.array(users, user)})
    table = catalog.create_table("nested.stats", schema=rows.schema)
    path = tmp_path / "stats.parquet"
    pq.write_table(rows, path)
    data_file = parquet_file_to_data_file(table.io, table.metadata, str(path))
    field_id = table.schema().find_field("user.home.zip").field_id
    # pyiceberg 0.12 claims the leaf's counts, no bounds (Java claims both): a false one made here.
    assert field_id in data_file.null_value_counts and field_id not in data_file.upper_bounds
    if damage == "upper bound":
        data_file._data[11] = {**data_file.upper_bounds, field_id: to_bytes(LongType(), 100)}
        said = "column user.home.zip upper bound 100 but max 199"
    else:
        nulls = data_file.null_value_counts[field_id]
        assert nulls == sum(1 for u in users if u is None or u["home"] is None)  # a null parent's leaf
        data_file._data[8] = {**data_file.null_value_counts, field_id: 0}
        said = f"column user.home.zip null_value_counts 0 but {nulls}"
    before = capture_state(table)
    with table.transaction() as txn:
        txn.set_properties({"schema.name-mapping.default": table.schema().name_mapping.model_dump_json()})
        with txn.update_snapshot().fast_append() as append:
            append.append_data_file(data_file)
    table = table.refresh()
    expected = Expectation(rows=200, checksum=Checksum.of(rows).hex, key_ranges=[(0, 199)])
    verdict, _ = judge(table, expected=expected, error=None, before=before, single_commit=True)
    assert [check.name for check in verdict.failed] == ["manifest_stats_true"], verdict.failed
    assert said in verdict.failed[0].reason
