"""Spark writers (local[2], Iceberg's JdbcCatalog on the run's SQLite file) on `tiny`, judged by the oracle.

Skipped where pyspark or the jars of `make rest-catalog` are missing. Each run starts its own JVM.
"""

import pytest

from harness.runner import RunPlan
from harness.spark import missing_jars, spark_supports

pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(bool(missing_jars()), reason="Spark jars missing: run make rest-catalog")

# Spark's driver heap is 60% of the cap; 1 GiB (test_runs' cap) leaves too little room for the JVM.
SPARK_CAP = 2 << 30


@pytest.mark.parametrize("writer", ["spark", "spark-cow", "spark-mor"])
@pytest.mark.parametrize("scenario", ["append", "replace", "upsert"])
def test_spark_writer_scenario_passes(runner, tiny_sets, scenario, writer):
    plan = RunPlan(scenario, writer, "tiny", tiny_sets, runner.settings.batch_rows, cap_bytes=SPARK_CAP)
    record = runner.run(plan)
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    print(
        f"{scenario} x {writer}: {record.status} wall {record.wall_s:.1f}s write {record.write_s}s "
        f"peak mem {record.peak_memory_bytes} rss {record.peak_rss_bytes} steps {record.step_latencies_s} "
        f"commits {record.commit_latencies_s} metadata files {record.metadata_files}"
    )
    assert record.status == "ok", (record.error, failed)
    assert record.verdict.passed, failed
    assert record.versions["pyspark"].startswith("3.5.")
    assert record.commit_latencies_s and record.snapshots_added >= 1


def test_spark_supports_only_the_embedded_sqlite_catalog():
    assert spark_supports({"type": "sql", "uri": "sqlite:////w/catalog.db", "warehouse": "file:///w"}) is None
    assert "REST" in spark_supports({"type": "rest", "uri": "http://127.0.0.1:8181"})
    assert "S3" in spark_supports({"type": "sql", "uri": "sqlite:////w/c.db", "warehouse": "s3://b/w"})


def test_spark_upserts_after_schema_evolution(runner, tiny_sets):
    """Where pyiceberg 0.12 fails (apache/iceberg-python#2467), Spark's MERGE INTO passes."""
    plan = RunPlan("schema-evolution-upsert", "spark", "tiny", tiny_sets, 2_000, cap_bytes=SPARK_CAP)
    record = runner.run(plan)
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    assert record.status == "ok", (record.error, failed)
    assert record.verdict.passed, failed


def test_spark_append_of_a_row_prefix_takes_the_first_rows_in_file_order(runner, tiny_sets):
    """`icebench scale` feeds a prefix (limit_rows) that ends inside a file."""
    plan = RunPlan("append", "spark", "tiny", tiny_sets, 2_000, cap_bytes=SPARK_CAP, limit_rows=7_321)
    record = runner.run(plan)
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    assert record.status == "ok", (record.error, failed)
    assert record.verdict.passed, failed
    assert record.rows == 7_321
