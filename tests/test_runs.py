"""Every writer x scenario on `tiny`, each in its own capped worker, judged by the oracle."""

import re

import pytest

from harness.base.results import read_runs
from harness.engines.writers import writers
from harness.run.runner import RunPlan
from scenarios import scenarios

READS_SCANS = True  # tests/conftest.py's runner keeps the downstream scans

UPSERT_AFTER_ADD_COLUMN = "apache/iceberg-python#2467"
SINGLE_COMMIT_WRITERS = {name for name, w in writers().items() if w.single_commit}


def plan(runner, scenario: str, writer: str, sets) -> RunPlan:
    return RunPlan(scenario, writer, "tiny", sets, runner.settings.batch_rows, cap_bytes=1 << 30)


# Spark writers start a JVM per run: tests/test_spark.py covers them on every scenario.
# Spark: tests/test_spark.py; Ray (a cluster per run): tests/test_ray_writers.py
@pytest.mark.parametrize(
    "writer", [name for name, w in writers().items() if not {"pyspark", "ray"} & set(w.libraries)]
)
# The crash scenarios (out of the default matrix) have tests/test_faults.py.
@pytest.mark.parametrize("scenario", [name for name, s in scenarios().items() if s.in_default_matrix])
def test_writer_scenario_verdict(runner, tiny_sets, scenario, writer, expected_outcome):
    record = runner.run(plan(runner, scenario, writer, tiny_sets))
    status, passed = expected_outcome(scenario, writer)
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    assert record.status == status, (record.error, failed)
    if passed is None:
        assert record.verdict is None
        assert "does not support" in record.error
        return
    assert record.verdict.passed is passed, failed
    assert record.isolation in ("cgroup", "rlimit")
    assert record.peak_memory_bytes and record.peak_rss_bytes
    # A writer with an environment of its own records its own libraries (a fork, not pyiceberg).
    assert all(record.versions[library] != "missing" for library in writers()[writer].libraries)
    if "pyiceberg" in writers()[writer].libraries:
        assert record.versions["pyiceberg"] == "0.12.0"
    if status == "ok":
        if writers()[writer].consumes_batches:  # dlt's steps are its stages
            assert record.batches == -(-record.rows // runner.settings.batch_rows)
        assert record.step_latencies_s and record.commit_latencies_s
        assert record.snapshots_added >= 1 and record.metadata_files >= 1
        if writer in SINGLE_COMMIT_WRITERS and passed:
            assert record.metadata_files == 1
        if writer == "pyiceberg-commit-per-batch":
            assert record.metadata_files == record.batches
    if writer == "pyiceberg-equality-delete":  # its equality deletes: pyiceberg 0.12 cannot plan the table
        assert "does not yet support equality deletes" in record.scan_error and record.full_scan_s is None
    else:  # the fixed reader scanned what the oracle read
        row_count = next(check for check in record.verdict.checks if check.name == "row_count")
        assert record.scan_error is None and record.full_scan_rows == row_count.actual
        assert record.full_scan_files == record.data_files
        assert record.selective_scan_files <= record.full_scan_files
        assert record.selective_scan_rows < record.full_scan_rows
        if passed:  # the naive trap's one file holds its last batch alone: none of the first keys
            assert record.selective_scan_rows > 0
    # Appended as it finished, readable back.
    assert read_runs(runner.store.folder)[-1].model_dump(mode="json") == record.model_dump(mode="json")


def test_schema_evolution_upsert_fails_as_a_recorded_check_naming_upstream(runner, tiny_sets):
    record = runner.run(plan(runner, "schema-evolution-upsert", "pyiceberg-txn-batches", tiny_sets))
    assert record.status == "error"
    checks = {c.name: c for c in record.verdict.checks}
    assert not checks["operation_completed"].passed
    assert checks["operation_completed"].upstream == UPSERT_AFTER_ADD_COLUMN
    # The failed write left the table where it was, content intact.
    assert checks["table_unchanged_after_failure"].passed
    assert checks["content_checksum"].passed and checks["row_count"].passed


def test_fast_append_without_shared_counter_is_caught_by_the_oracle(runner, tiny_sets):
    record = runner.run(plan(runner, "append", "pyiceberg-fast-append-naive", tiny_sets))
    failed = {c.name: c for c in record.verdict.failed}
    assert {"data_files_listed_once", "keys_unique", "content_checksum"} <= failed.keys()
    # Every batch wrote the same file name: one file, listed once per batch, holds the last batch.
    batches = record.batches
    assert re.fullmatch(
        rf"1 data file listed more than once, e\.g\. data/\S+\.parquet {batches} times",
        failed["data_files_listed_once"].reason,
    ), failed["data_files_listed_once"].reason
    assert failed["keys_unique"].reason.startswith(f"{record.batch_rows:,} keys repeated")
