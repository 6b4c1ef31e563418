"""The dlt writer: a real dlt pipeline (filesystem destination, table_format="iceberg") loading the
tiny sets into the run's table. tests/test_runs.py judges it in every scenario like any writer;
these check what is particular to it."""

from types import SimpleNamespace

import pytest

from harness.engines.writers import get_writer
from harness.engines.writers.dlt import _root_cause, _s3_options, state_folder
from harness.run.runner import RunPlan
from harness.services.stacks import stacks

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


def test_dlt_runs_on_every_stack_catalog_and_refuses_others():
    """dlt's iceberg_catalog takes SQL and REST catalogs: every stack's (tests/test_local_services.py
    runs it on local-services); any other kind is refused with the reason."""
    writer = get_writer("dlt")
    for stack in stacks().values():
        assert writer.supports_catalog(stack.catalog_shape) is None, stack.name
    assert "'sql' and 'rest'" in writer.supports_catalog({"type": "glue"})


def test_each_dlt_write_keeps_its_state_in_a_folder_of_its_own():
    """Beside the table, never under it, one per write: two workers on one table never share dlt's
    own files (dlt 1.31 races when two loads first set up one folder: FileExistsError)."""
    job = SimpleNamespace(table=SimpleNamespace(location=lambda: "s3://bucket/warehouse/ns/orders/"))
    first, second = state_folder(job), state_folder(job)

    assert first != second
    assert all(folder.startswith("s3://bucket/warehouse/ns/dlt/") for folder in (first, second))


def test_dlt_s3_destination_carries_no_keys(monkeypatch):
    """The filesystem destination gets the endpoint and addressing from the catalog's properties;
    the keys stay in the environment, for botocore's default chain."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "icebench-test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "icebench-test-secret")
    properties = {"type": "rest", "uri": "http://127.0.0.1:1", "s3.endpoint": "http://127.0.0.1:2",
                  "s3.region": "us-east-1", "s3.path-style-access": "true"}  # fmt: skip
    options = _s3_options(properties)
    credentials = options["credentials"]
    assert (credentials.endpoint_url, credentials.region_name) == ("http://127.0.0.1:2", "us-east-1")
    assert credentials.aws_access_key_id is None and credentials.aws_secret_access_key is None
    assert options["kwargs"] == {"config_kwargs": {"s3": {"addressing_style": "path"}}}
    assert _s3_options({"type": "sql", "uri": "sqlite:////w/c.db", "warehouse": "file:///w"}) == {}


def test_a_failed_stage_is_reported_by_its_root_cause():
    """dlt wraps a step's exception as `<class 'X'>` and its message on the next line; a job's as
    traceback text ending in `X: message`. Either way the run's error is that line."""
    step = Exception(
        "Pipeline execution failed at `step=load` when processing package with `load_id=1` with exception:"
        "\n\n<class 'FileNotFoundError'>\n[Errno 2] No such file or directory: 'x.jsonl'\n\nPending..."
    )
    assert _root_cause(step) == "FileNotFoundError: [Errno 2] No such file or directory: 'x.jsonl'"
    job = Exception("Job failed:\nTraceback ...\n  File 'y'\nValueError: Target schema's field names")
    assert _root_cause(job) == "ValueError: Target schema's field names"
