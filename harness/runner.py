"""One run: set the table up, run the writer in a capped worker, let the oracle judge, record it all."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from harness.caps import CgroupCap, format_size, make_cap, resolve_isolation
from harness.container import launch_container
from harness.envs import Variant, library_env
from harness.errors import IcebenchError, one_line
from harness.growth import late_early_ratio
from harness.launcher import Launch, launch_worker
from harness.profiling import render_flamegraph, worker_arguments
from harness.results import ResultsStore, RunRecord, Status, now_iso
from harness.settings import Settings
from harness.spark import spark_supports
from harness.stacks import RunCatalog, Stack, close_catalog
from harness.worker import EXIT_AS_SIGKILLED, KillNote, WorkerResult, WorkerSpec
from harness.writers import Writer, get_writer
from scenarios import get_scenario
from scenarios.base import DataSets, Expectation, Scenario
from scenarios.oracle import KillReport, TableState, capture_state, judge, unreadable_verdict

# How a SIGKILL shows in the exit code: a process of ours (negative signal), a container (128 + it).
SIGKILL_EXIT_CODES = (-signal.SIGKILL, EXIT_AS_SIGKILLED)


@dataclass(frozen=True)
class RunPlan:
    scenario: str
    writer: str
    preset: str
    sets: DataSets
    batch_rows: int
    cap_bytes: int | None
    limit_rows: int | None = None
    repeat: int = 0  # which repetition of the same pair (matrix --repeat)


class WorkerCouldNotStart(IcebenchError):
    pass


class Runner:
    def __init__(
        self, settings: Settings, store: ResultsStore, stack: Stack, variant: Variant | None = None
    ) -> None:
        self.settings = settings
        self.store = store
        self.stack = stack
        self.count = 0
        self.isolation = resolve_isolation(settings.isolation)
        self.variant = variant
        self.python: Path | None = None  # the worker's interpreter; None: this one
        if variant is not None:
            if self.isolation == "docker":
                raise IcebenchError(f"--{variant.library} versions run in local environments, not containers")
            self.python = library_env(variant.library, variant.version, settings.data_dir.parent / "envs")
        if settings.verify_with == "spark" and (why := spark_supports(stack.catalog_shape)):
            raise IcebenchError(f"--verify-with spark cannot read {stack.name} tables: {why}")

    def run(self, plan: RunPlan) -> RunRecord:
        scenario = get_scenario(plan.scenario)()
        writer = get_writer(plan.writer)
        self.count += 1
        record = self._new_record(plan, scenario, writer)
        if reason := scenario.unsupported_reason(writer):
            record.error = reason  # stays unsupported
            return self._finish(record)

        name = f"{self.count:03d}-{plan.scenario}-{plan.writer}"
        work = self.store.scratch(name)
        run_catalog = self.stack.catalog_for_run(work, f"{self.store.run_id}_{self.count:03d}")
        reason = writer.supports_catalog(run_catalog.properties)
        if reason:
            self.stack.release(run_catalog, keep=False)
            record.error = f"{plan.writer} does not support this catalog: {reason}"  # stays unsupported
            return self._finish(record)
        identifier = scenario.table_identifier(run_catalog.namespace)
        try:
            catalog = run_catalog.open()
            before = capture_state(scenario.prepare(catalog, run_catalog.namespace, plan.sets))
            close_catalog(catalog)

            spec = WorkerSpec(
                catalog=run_catalog.properties,
                table=identifier,
                writer=plan.writer,
                operation=scenario.operation,
                key_columns=list(scenario.key_columns),
                source_dir=plan.sets[scenario.source_set].directory,
                batch_rows=plan.batch_rows,
                limit_rows=plan.limit_rows,
                cap_bytes=plan.cap_bytes,
                spark_master=self.settings.spark_master,
                started_marker=work / "worker.started",
                result_path=work / "worker-result.json",
                kill_at=scenario.kill_point,
                kill_note_path=work / "kill-note.json" if scenario.kill_point else None,
            )
            launched, result = self._launch(spec, work, plan.cap_bytes)
            note = read_kill_note(spec, launched)
            self._apply(record, launched, result or note, work / "worker.log")
            if self.settings.profile == "memray" and (flamegraph := render_flamegraph(work)):
                record.profile_flamegraph = str(flamegraph)
            if record.status == "oom" and not spec.started_marker.exists():
                raise WorkerCouldNotStart(
                    f"memory cap {format_size(plan.cap_bytes)} is too small for the worker to start "
                    f"(it died before its first write; see {work / 'worker.log'})"
                )
            expected = self._expected(record, scenario, plan, note)
            kill = _kill_report(scenario, result, note)
            self._judge(record, run_catalog, identifier, expected, before, writer.single_commit, kill)
        finally:
            self.stack.release(run_catalog, keep=self.settings.keep_warehouse)
        self._finish(record)
        if result is not None and result.error_kind == "bad_input" and not scenario.expects_bad_input:
            raise IcebenchError(result.error or "bad input")
        return record

    def _new_record(self, plan: RunPlan, scenario: Scenario, writer: type[Writer]) -> RunRecord:
        source = plan.sets[scenario.source_set].manifest
        return RunRecord(
            run_id=self.store.run_id,
            scenario=plan.scenario,
            writer=plan.writer,
            preset=plan.preset,
            repeat=plan.repeat,
            stack=self.stack.name,
            operation=scenario.operation,
            status="unsupported",
            rows=min(source.rows, plan.limit_rows or source.rows),
            limit_rows=plan.limit_rows,
            columns=len(source.schema_fields),
            batch_rows=plan.batch_rows,
            cap_bytes=plan.cap_bytes,
            isolation=self.isolation if plan.cap_bytes else "none",
            versions=writer.versions(),
            verified_with=self.settings.verify_with,
            variant=self.variant.label if self.variant else None,
            started_at=now_iso(),
        )

    @staticmethod
    def _expected(record: RunRecord, scenario: Scenario, plan: RunPlan, note: KillNote | None) -> Expectation:
        """The promised table after success; the untouched one after a failure; after a kill, the
        table as the writer's last commit left it (it cannot have committed rows it was not fed)."""
        if note is not None:
            return scenario.expected_after(plan.sets, note.rows_committed)
        if record.status == "ok":
            return scenario.expected_after(plan.sets, plan.limit_rows)
        return scenario.expected_before(plan.sets)

    def _judge(
        self,
        record: RunRecord,
        run_catalog: RunCatalog,
        identifier: str,
        expected: Expectation,
        before: TableState,
        single_commit: bool,
        kill: KillReport | None,
    ) -> None:
        catalog = run_catalog.open()
        try:
            table = catalog.load_table(identifier)
            record.verdict, metrics = judge(
                table,
                expected=expected,
                error=record.error,
                before=before,
                single_commit=single_commit,
                verify_with=self.settings.verify_with,
                spark_master=self.settings.spark_master,
                kill=kill,
            )
        except Exception as exc:  # what a writer left may break the reader too: a verdict, not a crash
            record.verdict = unreadable_verdict(record.error, one_line(exc))
            return
        finally:
            close_catalog(catalog)
        for name, value in metrics.items():
            setattr(record, name, value)

    def _launch(
        self, spec: WorkerSpec, work: Path, cap_bytes: int | None
    ) -> tuple[Launch, WorkerResult | None]:
        spec_path = work / "worker-spec.json"
        spec_path.write_text(spec.model_dump_json(indent=2))
        cap = make_cap(self.isolation, cap_bytes)
        limits = {
            "timeout_s": self.settings.worker_timeout_s,
            "sample_interval_s": self.settings.sample_interval_s,
            "timeline_points": self.settings.timeline_points,
            "python_arguments": worker_arguments(self.settings.profile, work),
        }
        try:
            if isinstance(cap, CgroupCap) and self.isolation == "docker":
                launched = launch_container(
                    cap, spec_path, work / "worker.log", image=self.settings.worker_image,
                    read_only=[self.settings.data_dir, spec.source_dir], writable=[self.store.folder],
                    **limits,
                )  # fmt: skip
            else:
                launched = launch_worker(cap, spec_path, work / "worker.log", python=self.python, **limits)
        finally:
            cap.close()
        result = None
        if spec.result_path.exists():
            result = WorkerResult.model_validate_json(spec.result_path.read_text())
        return launched, result

    def _apply(self, record: RunRecord, launched: Launch, result: WorkerResult | None, log: Path) -> None:
        record.wall_s = round(launched.wall_s, 4)
        record.peak_memory_bytes = launched.peak_memory_bytes
        record.memory_timeline = launched.timeline
        record.oom_kills = launched.oom_kills
        record.worker_log = str(log)
        record.peak_rss_bytes = max((sample[2] for sample in launched.timeline), default=None)
        if result is not None:
            record.error = result.error
            record.write_s = result.write_s
            record.step_latencies_s = result.step_latencies_s
            record.commit_latencies_s = result.commit_latencies_s
            if get_writer(record.writer).consumes_batches:
                record.batches = result.batches
                record.late_early_ratio = late_early_ratio(result.step_latencies_s)
            record.versions = result.versions
            # VmHWM misses children (a JVM); the sampled tree rss misses short spikes: keep the larger.
            record.peak_rss_bytes = max(result.peak_rss_bytes or 0, record.peak_rss_bytes or 0) or None
        record.status, record.error = self._status(record, launched, result, log)

    def _status(
        self, record: RunRecord, launched: Launch, result: WorkerResult | None, log: Path
    ) -> tuple[Status, str | None]:
        """The exit code alone is never trusted: the kernel's OOM counter and the worker's report decide."""
        cap = format_size(record.cap_bytes)
        if launched.oom_kills:
            return "oom", f"OOM-killed by the kernel at a {cap} cap (oom_kill count {launched.oom_kills})"
        if isinstance(result, KillNote):  # only ever passed on when the exit code shows the SIGKILL
            return "error", result.describe()
        if result is not None:
            if result.error_kind == "memory":  # RLIMIT_AS: the cap shows up as a failed allocation
                return "oom", f"allocation failed under a {cap} {record.isolation} cap: {result.error}"
            return result.status, result.error or result.kill_missed
        if launched.timed_out:
            return "error", f"worker timed out after {self.settings.worker_timeout_s:.0f} s"
        if record.isolation == "rlimit" and _mentions_memory_error(log):
            return "oom", f"allocation failed under a {cap} rlimit cap before the worker could report"
        return "error", f"worker died with exit code {launched.returncode}; see {log}"

    def _finish(self, record: RunRecord) -> RunRecord:
        self.store.append(record)
        return record


def read_kill_note(spec: WorkerSpec, launched: Launch) -> KillNote | None:
    """The note of a worker that died by the kill it was asked to give itself: the note says what
    had landed, the exit code proves the kill (a note without it is not taken on its word)."""
    path = spec.kill_note_path
    killed = launched.returncode in SIGKILL_EXIT_CODES and not launched.oom_kills
    if path is None or not path.exists() or not killed:
        return None
    return KillNote.model_validate_json(path.read_text())


def _kill_report(scenario: Scenario, result: WorkerResult | None, note: KillNote | None) -> KillReport | None:
    """For the oracle: the kill as asked, or the point never reached; None for other failures
    (an error or an OOM before the point), which are judged like any failed write."""
    if note is not None:
        return KillReport(note.point, True, note.describe(), note.committed_snapshot_id)
    if scenario.kill_point is not None and result is not None and result.kill_missed:
        return KillReport(scenario.kill_point, False, result.kill_missed)
    return None


def _mentions_memory_error(log: Path) -> bool:
    tail = log.read_bytes()[-4096:] if log.exists() else b""
    return b"MemoryError" in tail or b"bad_alloc" in tail
