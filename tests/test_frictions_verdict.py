"""The verdict holds schema-evolution-upsert: a writer whose upsert fails once the table gained a
column (pyiceberg's #2467) is listed with its failed check and reason, not left to the Runs
table. Synthetic records: nothing is run."""

import pytest
from rich.console import Console

from harness.base.results import ResultsStore
from harness.model import Check, RunRecord, Verdict
from reports.report import write_report
from reports.verdict import (
    SCHEMA_EVOLUTION_UPSERT,
    VerdictsFailed,
    require_passed,
    verdict_groups,
    verdict_table,
)

UPSTREAM = "apache/iceberg-python#2467"
REASON = "ValueError: Mismatch in fields"


def record(writer: str, scenario: str = SCHEMA_EVOLUTION_UPSERT, **fields) -> RunRecord:
    return RunRecord(**{
        "run_id": "synthetic", "scenario": scenario, "writer": writer, "preset": "tiny",
        "stack": "embedded", "operation": "upsert", "status": "ok", "rows": 10_000, "batch_rows": 2_000,
        "batches": 5, "wall_s": 2.0, "write_s": 1.5, "peak_memory_bytes": 300 * 2**20,
        "peak_rss_bytes": 200 * 2**20, "isolation": "cgroup", "cap_bytes": 2**30,
        "verdict": Verdict(passed=True, checks=[Check(name="row_count", passed=True)]),
        "started_at": "2026-01-01T00:00:00+00:00", **fields,
    })  # fmt: skip


def failed(writer: str, **fields) -> RunRecord:
    checks = [
        Check(name="operation_completed", passed=False, reason=REASON, upstream=UPSTREAM),
        Check(name="row_count", passed=False, reason="10,000 rows, expected 12,000"),
    ]
    return record(writer, verdict=Verdict(passed=False, checks=checks), **fields)


@pytest.fixture
def records() -> list[RunRecord]:
    return [
        record("pyiceberg-table", scenario="upsert"),
        record("dlt", write_s=3.0),
        failed("pyiceberg-txn-batches"),
        record("duckdb", status="error", error="worker died with exit code 1", write_s=None, verdict=None),
        record("polars-sink", status="oom", error="OOM-killed", write_s=None, verdict=None),
        record("daft", status="unsupported", error="daft does not support upsert", verdict=None),
        # A point of a scale axis is no whole-set run: never in the verdict.
        failed("pyiceberg-add-files", limit_rows=1_000),
    ]


def test_schema_evolution_upsert_has_a_group_after_upsert_with_its_failures(records):
    groups = verdict_groups(records)
    assert [group.operation for group in groups] == ["upsert", SCHEMA_EVOLUTION_UPSERT]
    (evolved,) = [group for group in groups if group.operation == SCHEMA_EVOLUTION_UPSERT]
    rows = {row.writer: row for row in evolved.rows}
    assert set(rows) == {"dlt", "pyiceberg-txn-batches", "duckdb", "polars-sink", "daft"}
    assert (rows["dlt"].outcome, rows["dlt"].rank) == ("pass", 1)
    fail = rows["pyiceberg-txn-batches"]
    assert (fail.outcome, fail.rank) == ("FAIL", None)
    assert fail.reason == f"operation_completed: {REASON} [{UPSTREAM}] (+1 more: row_count)"
    assert (rows["duckdb"].outcome, rows["duckdb"].reason) == ("error", "worker died with exit code 1")
    assert rows["polars-sink"].outcome == "OOM" and rows["polars-sink"].reason.startswith("OOM-killed at")
    assert [row.outcome for row in evolved.rows] == ["pass", "FAIL", "OOM", "error", "unsupported"]


def test_the_terminal_verdict_and_the_report_name_the_failed_check(records, tmp_path):
    console = Console(width=160, record=True)
    console.print(verdict_table(records))
    text = console.export_text()
    assert f"{SCHEMA_EVOLUTION_UPSERT} tiny, cap 1.0 GiB" in text
    assert f"FAIL: operation_completed: {REASON}" in text  # clipped after it, to a line of the column
    assert "error: worker died with exit code 1" in text

    store = ResultsStore(tmp_path, run_id="20260101-000000-aaaaaa")
    for one in records:
        store.append(one)
    markdown = write_report(store.folder).markdown.read_text()
    heading = f"### {SCHEMA_EVOLUTION_UPSERT} (tiny, cap 1.0 GiB, stack embedded): use dlt"
    assert heading in markdown
    section = markdown[markdown.index(heading) :]
    assert "| - | pyiceberg-txn-batches | FAIL |" in section
    assert f"operation_completed: {REASON} [{UPSTREAM}] (+1 more: row_count)" in section
    assert "| - | duckdb | error |" in section


def test_a_failed_schema_evolution_upsert_alone_is_a_verdict_that_fails():
    """Only that run: the verdict is not empty (it once was: no plain operation had run)."""
    only = [failed("pyiceberg-table")]
    (group,) = verdict_groups(only)
    assert group.ranked == [] and group.rows[0].outcome == "FAIL"
    assert verdict_table(only) is not None
    with pytest.raises(VerdictsFailed, match="schema-evolution-upsert x pyiceberg-table"):
        require_passed(only)
