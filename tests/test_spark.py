"""Spark on `tiny`: the writers (Iceberg's JdbcCatalog on the run's SQLite file) judged by the
oracle, Spark reading pyiceberg's tables (--verify-with spark) and Spark generation (a standalone
cluster on loopback, --spark-master: tests/test_spark_cluster.py).

Skipped where pyspark or the jars of `make spark-jars` are missing. Each run starts its own JVM.
"""

import json

import pyarrow as pa
import pytest

from generators.checksum import Checksum
from harness.base.results import ResultsStore
from harness.cli.main import main
from harness.engines.spark import missing_jars, spark_supports
from harness.judge.oracle import engines_agree
from harness.run.runner import Runner, RunPlan
from harness.services.stacks.embedded import EmbeddedStack
from harness.services.stacks.external import ExternalStack

pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(bool(missing_jars()), reason="Spark jars missing: run make spark-jars")

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


def test_spark_runs_on_a_rest_catalog_or_the_embedded_sqlite_file():
    assert spark_supports({"type": "sql", "uri": "sqlite:////w/catalog.db", "warehouse": "file:///w"}) is None
    assert spark_supports({"type": "rest", "uri": "http://127.0.0.1:8181"}) is None
    assert "local warehouse" in spark_supports(
        {"type": "sql", "uri": "sqlite:////w/c.db", "warehouse": "s3://b/w"}
    )
    assert "glue" in spark_supports({"type": "glue"})


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


def _passed(record):
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    assert record.status == "ok", (record.error, failed)
    assert record.verdict.passed, failed


def test_spark_verifies_a_pyiceberg_table(settings, tiny_sets):
    """Spark reads what pyiceberg wrote (an upsert: overwrite + append) and reaches its checksum."""
    spark_settings = settings.model_copy(update={"verify_with": "spark"})
    runner = Runner(spark_settings, ResultsStore(settings.results_dir), EmbeddedStack(spark_settings))
    record = runner.run(RunPlan("upsert", "pyiceberg-table", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    _passed(record)
    agree = next(check for check in record.verdict.checks if check.name == "engines_agree")
    assert agree.passed and agree.actual["engine"] == "spark"
    assert agree.actual["checksum"] == tiny_sets["changes"].manifest.expected_after_upsert.checksum
    assert record.verified_with == "spark"


def test_engines_that_disagree_fail_a_check_naming_both():
    one, other = Checksum.of(pa.table({"a": range(10)})), Checksum.of(pa.table({"a": range(1, 10)}))
    check = engines_agree("pyiceberg", one, "spark", other)
    assert not check.passed
    assert (
        f"pyiceberg reads 10 rows (checksum {one.short})" in check.reason
        and "spark reads 9 rows" in check.reason
    )
    assert engines_agree("pyiceberg", one, "spark", Checksum.of(pa.table({"a": range(9, -1, -1)}))).passed


def test_verify_with_spark_reads_rest_catalogs_too(settings, services_runner, tiny_sets):
    """Spark reads a REST catalog's tables through S3FileIO: the cross-engine check runs on
    local-services (and is no longer refused for external)."""
    rest = settings.model_copy(update={"verify_with": "spark", "catalog_uri": "http://127.0.0.1:9"})
    Runner(rest, ResultsStore(settings.results_dir), ExternalStack(rest))
    on_services = services_runner.settings.model_copy(update={"verify_with": "spark"})
    runner = Runner(on_services, services_runner.store, services_runner.stack)
    record = runner.run(
        RunPlan("append", "pyiceberg-add-files", "tiny", tiny_sets, 5_000, cap_bytes=SPARK_CAP)
    )
    assert record.verified_with == "spark" and record.verdict.passed, record.verdict
    assert any(check.name == "engines_agree" and check.passed for check in record.verdict.checks)


def test_generate_on_spark_gives_the_pyarrow_sets_rows(tmp_path, capsys):
    shape = ["--rows", "6000", "--columns", "23", "--files", "3", "--seed", "5", "--first-key", "100"]
    assert main(["generate", *shape, "--out", str(tmp_path / "pyarrow")]) == 0
    assert main(["generate", *shape, "--out", str(tmp_path / "spark"), "--engine", "spark"]) == 0
    ours, spark = (json.loads((tmp_path / n / "manifest.json").read_text()) for n in ("pyarrow", "spark"))
    assert [f["name"] for f in spark.pop("files")] == [f["name"] for f in ours.pop("files")]
    assert spark == ours  # same checksum, key ranges, schema, rows; only the bytes differ
    assert sorted(p.name for p in (tmp_path / "spark").iterdir()) == [
        "manifest.json", "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"
    ]  # fmt: skip
    assert main(["generate", "--changes-of", str(tmp_path / "spark"), "--out", str(tmp_path / "c"),
                 "--engine", "spark"]) == 2  # fmt: skip
    assert "change sets (--changes-of) use pyarrow" in capsys.readouterr().err
