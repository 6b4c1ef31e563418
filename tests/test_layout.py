"""The table layout axis: partition specs, sort orders and table properties as the command line
spells them, every writer on a partitioned table, the fan-out writer, and the oracle's check that
every row sits in its file's partition (a row moved into another partition's file fails it)."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.pyarrow import (
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import NestedField, UUIDType

from harness.base.errors import IcebenchError
from harness.base.layout import check_layout
from harness.base.layout_text import parse_layout, parse_partition, parse_property, parse_sort
from harness.base.results import read_runs
from harness.cli.main import main
from harness.judge.oracle import capture_state, judge
from harness.judge.partitions import PARTITION_CHECK, _bounded
from harness.judge.readback import FileFacts
from harness.judge.statistics import ColumnStats
from reports.baseline import newest_results_folder
from scenarios import get_scenario
from scenarios.base import DataSets, expect_set, register_set

MONTHS = "month(c007_ts)"  # tiny's c007_ts spans 30 years: 361 months
DAYS = "day(c017_ts)"  # c017_ts spans the 30 days of January 2026


@pytest.mark.parametrize(
    ("given", "fields"),
    [
        ("day(c017_ts)", ("day(c017_ts)",)),
        ("days(c017_ts)", ("day(c017_ts)",)),
        ("bucket(16, id)", ("bucket[16](id)",)),
        ("bucket[16](id)", ("bucket[16](id)",)),
        ("truncate(4, c003_str), c003_str", ("truncate[4](c003_str)", "identity(c003_str)")),
        ("month(c007_ts),bucket(4,id)", ("month(c007_ts)", "bucket[4](id)")),
        ("none", ()),
        ("", ()),
    ],
)
def test_partition_spellings_read_as_icebergs(given, fields):
    assert parse_partition(given) == fields


@pytest.mark.parametrize(
    ("given", "culprit"),
    [
        ("frob(id)", "unknown transform frob"),
        ("void(id)", "unknown transform void"),
        ("bucket(16)", "unknown transform bucket"),
        ("day(c017_ts", "unbalanced"),
        ("day(c017_ts),,id", "empty field"),
        ("id, id", "given twice"),
    ],
)
def test_a_partition_that_does_not_parse_is_one_line(given, culprit):
    with pytest.raises(IcebenchError, match=culprit):
        parse_partition(given)


def test_sort_and_properties_parse_and_refuse_in_one_line():
    assert parse_sort("c001_int32, c002_int64 DESC, id asc") == ("c001_int32", "c002_int64 desc", "id")
    assert parse_property("write.target-file-size-bytes = 1048576") == (
        "write.target-file-size-bytes",
        "1048576",
    )
    assert parse_property("format-version=3") == ("format-version", "3")
    with pytest.raises(IcebenchError, match="format versions are 1, 2 and 3"):
        parse_property("format-version=4")
    with pytest.raises(IcebenchError, match="not an Iceberg table property"):
        parse_property("targetsize=1")
    with pytest.raises(IcebenchError, match="takes a whole number above 0"):
        parse_property("write.target-file-size-bytes=big")


@pytest.mark.parametrize(
    ("given", "culprit"),
    [
        (["write.parquet.compression-codec=nonsense"], "takes one of zstd, gzip"),
        (["write.parquet.row-group-size-bytes=0"], "takes a whole number above 0"),
        (["write.parqet.compression-codec=zstd"], "did you mean write.parquet.compression-codec"),
        (["write.delete.mode=merge-on-reed"], "takes one of copy-on-write, merge-on-read"),
        (["write.parquet.bloom-filter-enabled.column.=true"], "no Iceberg write property"),
        (["write.target-file-size-bytes=1", "write.target-file-size-bytes=2"], "given twice"),
    ],
)
def test_a_write_property_iceberg_would_ignore_or_refuse_is_one_line(given, culprit):
    with pytest.raises(IcebenchError, match=culprit):
        parse_layout(properties=given)


def test_a_sort_by_a_nested_column_is_refused_before_any_run():
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))])
    with pytest.raises(IcebenchError, match="sorts by primitive columns; tags is list<"):
        check_layout(parse_layout(sort="id, tags"), schema)
    check_layout(parse_layout(sort="id desc"), schema)


@pytest.mark.parametrize(
    "legal",
    [
        "write.parquet.compression-codec=ZSTD",
        "write.parquet.row-group-limit=100000",
        "write.metadata.metrics.column.c001_int32=full",
        "write.parquet.bloom-filter-enabled.column.id=true",
        "commit.retry.num-retries=8",  # not a write property: stored as given
    ],
)
def test_a_legal_property_passes(legal):
    assert parse_layout(properties=[legal]).properties == (tuple(part.strip() for part in legal.split("=")),)
    with pytest.raises(IcebenchError, match="asc or desc"):
        parse_sort("id sideways")
    layout = parse_layout("bucket(16, id)", "id", ["format-version=1"])
    assert layout.label == "bucket[16](id) sort id format-version=1"


@pytest.mark.parametrize(
    ("flags", "culprit"),
    [
        (["--partition", "day(c999_ts)"], "the table has no column c999_ts"),
        (["--partition", "day(c001_int32)"], "day cannot partition c001_int32"),
        (["--sort", "nosuch"], "the table has no column nosuch"),
    ],
)
def test_a_layout_the_table_cannot_take_is_refused_before_any_run(
    capsys, cli_settings, tiny_sets, flags, culprit
):
    before = set(cli_settings.results_dir.glob("*"))
    code = main(["run", "--scenario", "append", "--writer", "pyiceberg-table", "--preset", "tiny", *flags])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert culprit in err and len(err.splitlines()) == 1
    assert set(cli_settings.results_dir.glob("*")) == before  # no results folder: nothing ran


def _run(settings, writer: str, *flags: str, scenario: str = "append") -> list:
    code = main(
        ["run", "--scenario", scenario, "--writer", writer, "--preset", "tiny", "--memory", "1g", *flags]
    )
    assert code == 0
    return read_runs(newest_results_folder(settings.results_dir))


def test_pyiceberg_table_appends_into_months(cli_settings, tiny_sets):
    """The issue's command: tiny's c007_ts spans 30 years, one file a month."""
    (record,) = _run(cli_settings, "pyiceberg-table", "--partition", MONTHS)
    assert record.status == "ok" and record.verdict.passed, record.verdict.failed
    assert record.layout.partition == (MONTHS,)
    assert record.partitions == record.data_files > 300 and record.files_per_partition_max == 1
    assert next(c for c in record.verdict.checks if c.name == PARTITION_CHECK).passed


# c017_ts's nulls are a partition of their own; ids are never null.
@pytest.mark.parametrize(("spec", "partitions"), [(DAYS, 31), ("bucket(16, id)", 16)])
def test_the_fanout_writer_writes_a_file_per_partition(cli_settings, tiny_sets, spec, partitions):
    for scenario in ("append", "replace"):
        (record,) = _run(cli_settings, "pyiceberg-fanout", "--partition", spec, scenario=scenario)
        assert record.status == "ok" and record.verdict.passed, record.verdict.failed
        assert record.partitions == partitions and record.files_per_partition_max == 1


def test_the_fanout_writer_rolls_files_at_the_target_size(cli_settings, tiny_sets):
    target = 256 * 1024
    (record,) = _run(
        cli_settings, "pyiceberg-fanout", "--partition", "bucket(4, id)", "--batch-rows", "500",
        "--table-property", f"write.target-file-size-bytes={target}",
        "--table-property", "write.parquet.row-group-size-bytes=65536",  # a row group every ~64 KiB
    )  # fmt: skip
    assert record.status == "ok" and record.verdict.passed, record.verdict.failed
    assert record.target_file_bytes == target
    assert record.files_per_partition_max > 1  # a partition's rows took several files
    assert record.data_file_median_bytes >= target  # rolled once past the target, not before


def test_a_writer_that_cannot_write_partitioned_is_unsupported_naming_the_issue(cli_settings, tiny_sets):
    (reader,) = _run(cli_settings, "pyiceberg-reader", "--partition", DAYS)
    (add_files,) = _run(cli_settings, "pyiceberg-add-files", "--partition", "bucket(16, id)")
    assert reader.status == add_files.status == "unsupported"
    assert "apache/iceberg-python#2152" in reader.error
    assert "pyiceberg-fanout" in add_files.error
    (plain,) = _run(cli_settings, "pyiceberg-reader")  # the same writer on the plain table
    assert plain.status == "ok" and plain.layout.plain


def test_a_sorted_table_with_properties_is_created_as_asked(settings, tiny_sets, tmp_path):
    catalog = SqlCatalog("layout", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    layout = parse_layout(
        DAYS, "c001_int32 desc", ["format-version=1", "write.parquet.compression-codec=gzip"]
    )
    table = get_scenario("append")().prepare(catalog, "bench", tiny_sets, layout)
    assert [field.name for field in table.spec().fields] == ["c017_ts_day"]
    assert str(table.sort_order().fields[0].direction) == "DESC"
    assert table.format_version == 1 and table.properties["write.parquet.compression-codec"] == "gzip"


# --- the partition check, fooled by nothing -------------------------------------------------------


def _partitioned_table(tmp_path: Path, sets: DataSets, spec: str) -> tuple[Table, object]:
    catalog = SqlCatalog("check", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    scenario = get_scenario("append")()
    table = scenario.prepare(catalog, "bench", sets, parse_layout(spec))
    before = capture_state(table)
    register_set(table, sets["base"])  # the fan-out writer's files: a file per partition
    return table, before


def _checks(table: Table, sets: DataSets, before: object) -> dict:
    verdict, _ = judge(
        table.refresh(), expected=expect_set(sets["base"]), error=None, before=before, single_commit=False
    )
    return {check.name: check for check in verdict.checks}


def _rewritten(table: Table, rows: pa.Table, like: DataFile, name: str) -> DataFile:
    """`rows` as a new file of `like`'s partition, its statistics true to what it holds."""
    path = table.location_provider().new_data_location(name)
    with table.io.new_output(path).create() as stream:
        pq.write_table(rows, stream, store_decimal_as_integer=True)
    schema = table.schema()
    statistics = data_file_statistics_from_parquet_metadata(
        pq.read_metadata(table.io.new_input(path).open()),
        compute_statistics_plan(schema, table.properties),
        parquet_path_to_id_mapping(schema),
    )
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=like.partition,
        file_size_in_bytes=len(table.io.new_input(path)),
        spec_id=like.spec_id,
        **statistics.to_serialized_dict(),
    )


@pytest.mark.parametrize("spec", [MONTHS, "bucket(8, id)"])
def test_a_row_moved_into_another_partitions_file_fails_the_partition_check(tmp_path, tiny_sets, spec):
    """Every row is still in the table once (the content checks pass), with true statistics, but
    one sits in the file of a partition it does not belong to: a filtered read would miss it."""
    table, before = _partitioned_table(tmp_path, tiny_sets, spec)
    assert _checks(table, tiny_sets, before)[PARTITION_CHECK].passed
    files = [task.file for task in table.scan().plan_files()]
    giver, taker = files[0], next(f for f in files if tuple(f.partition) != tuple(files[0].partition))
    given, taken = (pq.read_table(table.io.new_input(f.file_path).open()) for f in (giver, taker))
    with table.transaction() as txn, txn.update_snapshot().overwrite() as overwrite:
        overwrite.delete_data_file(giver)
        overwrite.delete_data_file(taker)
        overwrite.append_data_file(_rewritten(table, given.slice(1), giver, "giver.parquet"))
        overwrite.append_data_file(
            _rewritten(table, pa.concat_tables([taken, given.slice(0, 1)]), taker, "taker.parquet")
        )
    checks = _checks(table, tiny_sets, before)
    for name in ("row_count", "keys_unique", "key_set", "content_checksum", "manifest_stats_true"):
        assert checks[name].passed, checks[name]
    moved = checks[PARTITION_CHECK]
    assert not moved.passed and moved.actual == 1
    assert "taker.parquet" in moved.reason and "but holds rows of" in moved.reason


def test_a_null_in_a_dated_partitions_file_fails_the_partition_check(tmp_path, tiny_sets):
    """The check reads a month field from the file's true bounds: a null among them is a row of
    the null partition, though the bounds themselves stay inside the stated month."""
    table, before = _partitioned_table(tmp_path, tiny_sets, MONTHS)
    victim = next(
        f.file
        for f in table.scan().plan_files()
        if f.file.record_count > 1 and f.file.partition[0] is not None
    )
    rows = pq.read_table(table.io.new_input(victim.file_path).open())
    ts = rows.column("c007_ts")
    blanked = pa.concat_arrays([pa.nulls(1, ts.type), ts.combine_chunks().slice(1)])
    rows = rows.set_column(rows.schema.get_field_index("c007_ts"), rows.schema.field("c007_ts"), blanked)
    with table.transaction() as txn, txn.update_snapshot().overwrite() as overwrite:
        overwrite.delete_data_file(victim)
        overwrite.append_data_file(_rewritten(table, rows, victim, "blanked.parquet"))
    nulled = _checks(table, tiny_sets, before)[PARTITION_CHECK]
    assert not nulled.passed and "blanked.parquet" in nulled.reason and "=None" in nulled.reason


def test_a_column_counted_but_never_bounded_is_checked_row_by_row():
    """UUIDs are counted and never bounded by the read-back: their bounds cannot settle a partition
    (an empty set of edges would pass any file), so such a field goes to the rows."""
    field = PartitionField(source_id=1, field_id=1000, transform=IdentityTransform(), name="u")
    schema = Schema(NestedField(1, "u", UUIDType(), required=False))
    facts = FileFacts(listed=None, rows=5)  # type: ignore[arg-type]
    facts.stats.columns[1] = ColumnStats(values=5, nulls=0)
    assert not _bounded(field, schema, facts)
    facts.stats.columns[1] = ColumnStats(values=5, nulls=5)  # all null: nothing to bound
    assert _bounded(field, schema, facts)


def test_a_file_stating_the_wrong_partition_fails_the_partition_check(tmp_path, tiny_sets):
    table, before = _partitioned_table(tmp_path, tiny_sets, DAYS)
    files = [task.file for task in table.scan().plan_files()]
    victim, other = files[0], next(f for f in files if tuple(f.partition) != tuple(files[0].partition))
    rows = pq.read_table(table.io.new_input(victim.file_path).open())
    with table.transaction() as txn, txn.update_snapshot().overwrite() as overwrite:
        overwrite.delete_data_file(victim)
        overwrite.append_data_file(_rewritten(table, rows, other, "mislabelled.parquet"))
    wrong = _checks(table, tiny_sets, before)[PARTITION_CHECK]
    assert not wrong.passed and "mislabelled.parquet states (c017_ts_day=" in wrong.reason
