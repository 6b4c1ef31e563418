"""Declared once (issue 35): the check shapes are Check's constructors, a worker's figures are one
model that both the outcome and the record inherit, and the run key is read off the record by name."""

import json

import pytest

from harness.model import (
    Check,
    ExecutorFigures,
    Operation,
    RunKey,
    RunRecord,
    TableLayout,
    WorkerFigures,
    WorkerOutcome,
    run_key,
)
from harness.run.runner import worker_figures


def never() -> str:
    raise AssertionError("a passing check made its reason")


def test_equal_fails_with_the_reason_given_and_passes_without_one():
    assert Check.equal("x", 1, 2, "one is not two") == Check(
        name="x", passed=False, expected=1, actual=2, reason="one is not two"
    )
    assert Check.equal("x", 1, 2) == Check(
        name="x", passed=False, expected=1, actual=2, reason="expected 1, found 2"
    )
    assert Check.equal("x", 1, 1, never) == Check(name="x", passed=True, expected=1, actual=1)


def test_holds_makes_its_reason_only_when_the_condition_fails():
    missing: list[str] = []
    assert Check.holds("x", not missing, lambda: f"first {missing[0]}", expected=0, actual=0) == Check(
        name="x", passed=True, expected=0, actual=0
    )
    missing.append("a.parquet")
    failed = Check.holds("x", not missing, lambda: f"first {missing[0]}", expected=0, actual=1)
    assert failed == Check(name="x", passed=False, expected=0, actual=1, reason="first a.parquet")
    assert Check.holds("x", True, never) == Check(name="x", passed=True)


@pytest.mark.parametrize("model", [WorkerOutcome, RunRecord])
def test_a_worker_figure_is_declared_once_for_the_outcome_and_the_record(model):
    """Both inherit the figures and declare none of them again: a field added to WorkerFigures
    is a field of both, with its one type, default and comment."""
    assert issubclass(model, WorkerFigures)
    assert not set(model.__annotations__) & set(WorkerFigures.model_fields)
    for name, field in WorkerFigures.model_fields.items():
        assert model.model_fields[name].annotation == field.annotation
        assert model.model_fields[name].default == field.default


def test_a_run_of_one_worker_carries_every_figure_but_its_error():
    outcome = WorkerOutcome(
        name="",
        source_set="base",
        operation=Operation.APPEND,
        rows=10,
        status="oom",
        error="killed",
        wall_s=1.5,
        cpu_s=1.2,
        write_s=1.0,
        peak_memory_bytes=3,
        peak_rss_bytes=2,
        cache_at_peak_bytes=1,
        oom_kills=1,
        cap_bytes=4,
        box_cap_bytes=5,
        oom_limit="harness box",
        box_usage_at_kill_bytes=6,
        box_rss_at_kill_bytes=7,
        batches=2,
        late_early_ratio=1.1,
        step_latencies_s=[0.5, 0.5],
        commit_latencies_s=[0.1],
        versions={"pyiceberg": "0.12.0"},
        file_io="pyarrow 26.0.1",
        worker_log="worker.log",
        memory_timeline=[(0.0, 1, 1), (1.0, 3, 2)],
        commit_retries=0,
        executors=[ExecutorFigures(name="0", source="cgroup", cap_bytes=8, peak_memory_bytes=4, oom_kills=0)],
    )
    unset = [name for name in WorkerFigures.model_fields if name not in outcome.model_fields_set]
    assert not unset, f"give the new figures a value here: {unset}"
    figures = worker_figures(outcome)
    assert set(figures) == set(WorkerFigures.model_fields) - {"error"}
    record = RunRecord(**_identity(), **figures)
    for name in figures:
        assert getattr(record, name) == getattr(outcome, name), name


def test_the_record_keeps_its_timeline_and_its_workers_go_without():
    """The results line as before: the run's timeline on the record, none in its workers' entries."""
    worker = WorkerOutcome(name="a", source_set="base", rows=1, status="ok", memory_timeline=[(0.0, 1, 1)])
    record = RunRecord(**_identity(), status="ok", memory_timeline=[(0.0, 2, 2)], workers=[worker, worker])
    line = json.loads(record.model_dump_json())
    assert line["memory_timeline"] == [[0.0, 2, 2]]
    assert all("memory_timeline" not in entry for entry in line["workers"])
    assert "commit_retries" not in line and line["workers"][0]["commit_retries"] is None
    read = RunRecord.model_validate_json(record.model_dump_json())
    assert read.memory_timeline == [(0.0, 2, 2)] and read.workers[0].memory_timeline == []


def test_the_run_key_is_the_records_fields_of_its_names():
    given = {"cap_bytes": 2**30, "limit_rows": 400, "variant": "pyiceberg 0.9.1", "catalog": "rest"}
    given |= {"round": 2, "phase": "upsert", "writer_source": "68fd972cb546"}
    layout = TableLayout(partition=("day(c017_ts)",))
    assert run_key(RunRecord(**_identity(), **given, layout=layout, status="ok")) == RunKey(
        scenario="append",
        writer="pyiceberg-table",
        preset="tiny",
        stack="embedded",
        isolation="cgroup",
        batch_rows=2000,
        layout="day(c017_ts)",
        **given,
    )
    assert run_key(RunRecord(**_identity(), status="ok")).layout is None  # the plain table


def _identity() -> dict:
    return {
        "run_id": "r",
        "scenario": "append",
        "writer": "pyiceberg-table",
        "preset": "tiny",
        "stack": "embedded",
        "operation": "append",
        "batch_rows": 2000,
        "isolation": "cgroup",
        "started_at": "2026-11-27T02:14:22+00:00",
    }
