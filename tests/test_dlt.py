"""The dlt writer: a real dlt pipeline (filesystem destination, table_format="iceberg") loading the
tiny sets into the run's table. tests/test_runs.py judges it in every scenario like any writer;
these check what is particular to it."""

import pytest

from harness.runner import RunPlan
from harness.writers import get_writer

pytest.importorskip("dlt")


def test_dlt_merge_upsert_records_its_versions_and_stages(runner, tiny_sets):
    record = runner.run(RunPlan("upsert", "dlt", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    assert record.status == "ok", (record.error, failed)
    assert record.verdict.passed, failed
    assert record.versions["dlt"] != "missing" and record.versions["pyiceberg"] == "0.12.0"
    assert record.snapshots_added >= 1 and len(record.step_latencies_s) == 2  # extract, normalize


def test_dlt_upsert_after_schema_evolution_names_the_upstream_bug(runner, tiny_sets):
    """dlt's merge calls pyiceberg's upsert, which fails after add_column (#2467): the root cause
    is unwrapped from dlt's retries, and the table stays at its snapshot."""
    plan = RunPlan("schema-evolution-upsert", "dlt", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30)
    record = runner.run(plan)
    checks = {check.name: check for check in record.verdict.checks}
    assert record.status == "error" and "Target schema's field names" in record.error
    assert checks["operation_completed"].upstream == "apache/iceberg-python#2467"
    assert checks["table_unchanged_after_failure"].passed


def test_dlt_is_wired_to_the_sql_catalog_only():
    writer = get_writer("dlt")
    assert (
        writer.supports_catalog({"type": "sql", "uri": "sqlite:////w/c.db", "warehouse": "file:///w"}) is None
    )
    assert "SQL catalog" in writer.supports_catalog({"type": "rest", "uri": "http://127.0.0.1:1"})
