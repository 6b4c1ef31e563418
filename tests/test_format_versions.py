"""Iceberg's format version as an axis (`--format-version 1,2,3`): a table per version, each writer
on each, and `unsupported` in the library's own words where it does not write that version."""

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from harness.base.layout_text import parse_layout
from harness.base.results import read_runs
from harness.cli.main import main
from harness.judge.reference import ReferenceJudge
from harness.model import WorkerOutcome
from harness.run.classify import format_version_refusal
from harness.run.config import MatrixConfig
from reports.baseline import newest_results_folder
from scenarios import get_scenario

V3 = "format-version=3"


def test_each_format_version_is_a_table_of_its_own():
    config = MatrixConfig(format_versions="1,3", partitions=["", "day(c017_ts)"])
    assert [layout.label for layout in config.layouts()] == [
        "unpartitioned format-version=1",
        "unpartitioned format-version=3",
        "day(c017_ts) format-version=1",
        "day(c017_ts) format-version=3",
    ]
    assert MatrixConfig().layouts()[0].plain  # no axis: the catalog's own version
    with pytest.raises(ValueError, match="less than or equal to 3"):
        MatrixConfig(format_versions=[4])


def test_a_v3_table_in_the_sqlite_catalog_is_one_iceberg_java_loads(tiny_sets, tmp_path):
    """pyiceberg 0.12 refuses to write v3 metadata; the harness writes pyiceberg's own model of it."""
    catalog = SqlCatalog("v3", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    table = get_scenario("append")().prepare(
        catalog, "bench", tiny_sets, parse_layout("day(c017_ts)", "", [V3])
    )
    assert (table.format_version, table.metadata.next_row_id) == (3, 0)
    assert [field.name for field in table.spec().fields] == ["c017_ts_day"]
    check = ReferenceJudge().check(catalog.load_table("bench.append"))
    if check is None:
        pytest.skip("the reference judge is not built here (make rest-catalog)")
    assert check.passed and check.actual["format_version"] == 3, check


def test_a_library_that_refuses_v3_is_unsupported_in_its_own_words_and_spark_writes_it(
    cli_settings, tiny_sets
):
    flags = ["--scenario", "append", "--preset", "tiny", "--memory", "2g", "--format-version", "3"]
    assert main(["matrix", "--writers", "pyiceberg-add-files,spark", *flags]) == 0
    runs = {record.writer: record for record in read_runs(newest_results_folder(cli_settings.results_dir))}
    refused = runs["pyiceberg-add-files"]
    assert refused.status == "unsupported"
    assert refused.error == "writes no v3 table: ValueError: Cannot write manifest for table version: 3"
    spark = runs["spark"]
    assert spark.status == "ok" and spark.verdict.passed, spark.verdict.failed
    assert spark.layout.label == "unpartitioned format-version=3"


def test_a_failure_on_v3_that_does_not_name_the_version_stays_an_error():
    v3, v2 = parse_layout("", "", [V3]), parse_layout("", "", ["format-version=2"])
    failed = WorkerOutcome.model_construct(status="error", error="OSError: disk full")
    assert format_version_refusal(v3, failed) is None
    refusal = WorkerOutcome.model_construct(
        status="error", error="NotImplementedError: Writing V3 is not yet supported"
    )
    assert format_version_refusal(v3, refusal) == f"writes no v3 table: {refusal.error}"
    assert format_version_refusal(v2, refusal) is None  # on v2 it is the writer's error


@pytest.mark.parametrize("partition", ["", "day(c017_ts)"])
def test_a_v3_tables_initial_set_is_committed_by_iceberg_java(tiny_sets, tmp_path, partition):
    """pyiceberg cannot add files to a v3 table: the set-up's one fast append is Java's, row lineage
    and all, and reads back as the set."""
    catalog = SqlCatalog("v3", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    scenario = get_scenario("upsert")()
    table = scenario.prepare(catalog, "bench", tiny_sets, parse_layout(partition, "", [V3]))
    rows = tiny_sets[scenario.initial_set].manifest.rows
    snapshot = table.current_snapshot()
    assert (table.format_version, snapshot.summary["added-records"]) == (3, str(rows))
    assert (snapshot.first_row_id, table.metadata.next_row_id) == (0, rows)  # Java assigned them
    assert table.scan().to_arrow().num_rows == rows
