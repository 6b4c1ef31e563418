"""One run: set the table up, run the writer in a capped worker, let the oracle judge, record it all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.caps import format_size, make_cap, resolve_isolation
from harness.errors import IcebenchError
from harness.growth import late_early_ratio
from harness.launcher import Launch, launch_worker
from harness.results import ResultsStore, RunRecord, now_iso
from harness.settings import Settings
from harness.stack import EmbeddedStack, close_catalog, open_catalog
from harness.worker import WorkerResult, WorkerSpec
from harness.writers import get_writer
from scenarios import get_scenario
from scenarios.base import DataSets
from scenarios.oracle import capture_state, judge


@dataclass(frozen=True)
class RunPlan:
    scenario: str
    writer: str
    preset: str
    sets: DataSets
    batch_rows: int
    cap_bytes: int | None
    limit_rows: int | None = None


class WorkerCouldNotStart(IcebenchError):
    pass


class Runner:
    def __init__(self, settings: Settings, store: ResultsStore) -> None:
        self.settings = settings
        self.store = store
        self.count = 0
        self.isolation = resolve_isolation(settings.isolation)

    def run(self, plan: RunPlan) -> RunRecord:
        scenario = get_scenario(plan.scenario)()
        writer = get_writer(plan.writer)
        source = plan.sets[scenario.source_set].manifest
        self.count += 1
        record = RunRecord(
            run_id=self.store.run_id,
            scenario=plan.scenario,
            writer=plan.writer,
            preset=plan.preset,
            stack=EmbeddedStack.name,
            operation=scenario.operation,
            status="unsupported",
            rows=min(source.rows, plan.limit_rows or source.rows),
            columns=len(source.schema_fields),
            batch_rows=plan.batch_rows,
            cap_bytes=plan.cap_bytes,
            isolation=self.isolation if plan.cap_bytes else "none",
            versions=writer.versions(),
            started_at=now_iso(),
        )
        if not writer.supports(scenario.operation):
            record.error = f"{plan.writer} does not support {scenario.operation}"
            return self._finish(record)

        work = self.store.scratch(f"{self.count:03d}-{plan.scenario}-{plan.writer}")
        stack = EmbeddedStack(work / "warehouse")
        stack.create()
        try:
            catalog = open_catalog(stack.catalog_properties())
            table = scenario.prepare(catalog, plan.sets)
            before = capture_state(table)
            close_catalog(catalog)

            spec = WorkerSpec(
                catalog=stack.catalog_properties(),
                table=scenario.table_identifier,
                writer=plan.writer,
                operation=scenario.operation,
                key_columns=list(scenario.key_columns),
                source_dir=plan.sets[scenario.source_set].directory,
                batch_rows=plan.batch_rows,
                limit_rows=plan.limit_rows,
                started_marker=work / "worker.started",
                result_path=work / "worker-result.json",
            )
            (work / "worker-spec.json").write_text(spec.model_dump_json(indent=2))
            launched, result = self._launch(spec, work, plan.cap_bytes)
            self._apply(record, launched, result, work / "worker.log")
            if record.status != "ok" and not spec.started_marker.exists() and launched.returncode != 0:
                raise WorkerCouldNotStart(
                    f"memory cap {format_size(plan.cap_bytes)} is too small for the worker to start "
                    f"(it died before its first write; see {work / 'worker.log'})"
                )

            catalog = open_catalog(stack.catalog_properties())
            table = catalog.load_table(scenario.table_identifier)
            expected = (
                scenario.expected_after(plan.sets, plan.limit_rows)
                if record.status == "ok"
                else scenario.expected_before(plan.sets)
            )
            record.verdict, metrics = judge(
                table,
                expected=expected,
                error=record.error,
                before=before,
                single_commit=writer.single_commit,
            )
            close_catalog(catalog)
            for name, value in metrics.items():
                setattr(record, name, value)
        finally:
            if not self.settings.keep_warehouse:
                stack.destroy()
        if result is not None and result.error_kind == "bad_input":
            self._finish(record)
            raise IcebenchError(result.error.split(": ", 1)[-1] if result.error else "bad input")
        return self._finish(record)

    def _launch(
        self, spec: WorkerSpec, work: Path, cap_bytes: int | None
    ) -> tuple[Launch, WorkerResult | None]:
        spec_path = work / "worker-spec.json"
        cap = make_cap(self.isolation, cap_bytes)
        try:
            launched = launch_worker(
                cap,
                spec_path,
                work / "worker.log",
                timeout_s=self.settings.worker_timeout_s,
                sample_interval_s=self.settings.sample_interval_s,
                timeline_points=self.settings.timeline_points,
            )
        finally:
            cap.close()
        result = None
        if spec.result_path.exists():
            result = WorkerResult.model_validate_json(spec.result_path.read_text())
        return launched, result

    def _apply(self, record: RunRecord, launched: Launch, result: WorkerResult | None, log: Path) -> None:
        record.wall_s = round(launched.wall_s, 4)
        record.peak_memory_bytes = launched.peak_memory_bytes
        # The worker's own VmHWM when it lived to report it, else the sampled resident memory.
        record.peak_rss_bytes = max((sample[2] for sample in launched.timeline), default=None)
        record.memory_timeline = launched.timeline
        record.oom_kills = launched.oom_kills
        record.worker_log = str(log)
        if result is not None:
            record.status = result.status
            record.error = result.error
            record.write_s = result.write_s
            record.batches = result.batches
            record.step_latencies_s = result.step_latencies_s
            record.commit_latencies_s = result.commit_latencies_s
            record.late_early_ratio = late_early_ratio(result.step_latencies_s)
            record.versions = result.versions
            record.peak_rss_bytes = result.peak_rss_bytes or record.peak_rss_bytes
            if result.error_kind == "memory":  # RLIMIT_AS: the cap shows up as a failed allocation
                record.status = "oom"
        if launched.oom_kills or (result is None and launched.returncode == -9 and not launched.timed_out):
            record.status = "oom"
            record.error = (
                f"OOM-killed by the kernel at a {format_size(record.cap_bytes)} cap "
                f"(oom_kill count {launched.oom_kills}, exit {launched.returncode})"
            )
        elif result is None:
            record.status = "error"
            record.error = (
                "worker timed out"
                if launched.timed_out
                else f"worker died with exit code {launched.returncode}; see {log}"
            )

    def _finish(self, record: RunRecord) -> RunRecord:
        self.store.append(record)
        return record
