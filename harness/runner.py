"""One run: set the table up, run the writer in a capped worker, let the oracle judge, record it all."""

from __future__ import annotations

import shutil
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from string import ascii_lowercase
from typing import TypeVar

import pyarrow as pa

from harness.caps import CgroupCap, format_size, make_cap, resolve_isolation
from harness.container import launch_container
from harness.envs import Variant, library_env
from harness.errors import IcebenchError, one_line, warn
from harness.growth import late_early_ratio
from harness.launcher import Launch, RunningWorkers, WorkerHandle, launch_worker
from harness.leftovers import SCRATCH_FOLDER
from harness.model import (
    Expectation,
    KillNote,
    Rendezvous,
    RunRecord,
    Status,
    WorkerOutcome,
    WorkerResult,
    WorkerSpec,
)
from harness.own_memory import measure_peak_rss
from harness.profiling import render_flamegraph, worker_arguments
from harness.results import ResultsStore, now_iso
from harness.settings import Settings
from harness.signals import signals_held
from harness.stacks import RunCatalog, Stack, close_catalog
from harness.verifiers import get_verifier
from harness.worker import EXIT_AS_SIGKILLED
from harness.writers import Writer, get_writer
from scenarios import get_scenario
from scenarios.base import DataSets, Scenario
from scenarios.oracle import (
    ConcurrencyReport,
    FailedWorker,
    KillReport,
    TableState,
    capture_state,
    judge,
    unreadable_verdict,
)

Report = TypeVar("Report", bound=WorkerResult)
# How a SIGKILL shows in the exit code: a process of ours (negative signal), a container (128 + it).
SIGKILL_EXIT_CODES = (-signal.SIGKILL, EXIT_AS_SIGKILLED)
# What a concurrent run's worker reports just as a run's only worker would (the rest is its own).
SHARED_FIELDS = set(WorkerOutcome.model_fields) & set(RunRecord.model_fields) - {"rows"}


@dataclass
class WorkerRun:
    """One worker of a run: its spec, the folder its files go to, and what came of it."""

    name: str  # "" for a run's only worker; a, b, ... for a concurrent scenario's
    source_set: str
    spec: WorkerSpec
    folder: Path
    launched: Launch | None = None
    result: WorkerResult | None = None

    @property
    def log(self) -> Path:
        return self.folder / "worker.log"


@dataclass(frozen=True)
class Expected:
    """What the oracle holds the table to: content, schema, and whether one commit was promised."""

    content: Expectation
    schema: pa.Schema
    single_commit: bool


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
        self.isolation = resolve_isolation(settings.isolation)
        self.variant = variant
        self.python: Path | None = None  # the worker's interpreter; None: this one
        if variant is not None:
            if self.isolation == "docker":
                raise IcebenchError(f"--{variant.library} versions run in local environments, not containers")
            self.python = library_env(variant.library, variant.version, settings.data_dir.parent / "envs")
        self.verifier = get_verifier(settings.verify_with)  # None: the oracle's pyiceberg read alone
        self.verifier_options = settings.engine_options(self.verifier.options) if self.verifier else None
        if self.verifier and (why := self.verifier.supports_catalog(stack.catalog_shape)):
            raise IcebenchError(
                f"--verify-with {settings.verify_with} cannot read {stack.name} tables: {why}"
            )

    def run(self, plan: RunPlan) -> RunRecord:
        scenario = get_scenario(plan.scenario)()
        writer = get_writer(plan.writer)
        record = self._new_record(plan, scenario, writer)
        if reason := scenario.unsupported_reason(writer):
            record.error = reason  # stays unsupported
            return self._finish(record)

        try:
            number, work = self.store.new_work_folder(f"{plan.scenario}-{plan.writer}")
            run_catalog = self.stack.catalog_for_run(work, f"{self.store.run_id}_{number:03d}")
        except OSError as exc:  # a full or unwritable results folder: this run's error, not the matrix's
            record.status, record.error = "error", f"run set-up failed: {one_line(exc)}"
            return self._finish(record)
        reason = writer.supports_catalog(run_catalog.properties)
        if reason:
            self._release(run_catalog, keep=False)
            record.error = f"{plan.writer} does not support this catalog: {reason}"  # stays unsupported
            return self._finish(record)
        identifier = scenario.table_identifier(run_catalog.namespace)
        workers: list[WorkerRun] = []
        try:
            before = self._set_up_table(record, scenario, run_catalog, plan.sets)
            if before is not None:
                workers = self._workers(plan, scenario, run_catalog.properties, identifier, work)
                self._launch_all(workers, plan.cap_bytes)
                self._settle_and_judge(record, scenario, writer, plan, workers, run_catalog, before)
        except OSError as exc:  # the harness's own files (spec, result) on a full or broken disk
            record.status, record.error = "error", f"the harness could not run the worker: {one_line(exc)}"
        finally:
            self._release(run_catalog, keep=self.settings.keep_warehouse)
        self._finish(record)
        results = [w.result for w in workers]
        bad_input = next((r for r in results if r is not None and r.error_kind == "bad_input"), None)
        if bad_input is not None and not scenario.expects_bad_input:
            raise IcebenchError(bad_input.error or "bad input")
        return record

    def _set_up_table(
        self, record: RunRecord, scenario: Scenario, run_catalog: RunCatalog, sets: DataSets
    ) -> TableState | None:
        """The table as the scenario prepares it, before any worker; None when that failed (a
        catalog out of reach, a full disk): the run's recorded error, and the matrix goes on."""
        try:
            catalog = run_catalog.open()
            try:
                return capture_state(scenario.prepare(catalog, run_catalog.namespace, sets))
            finally:
                close_catalog(catalog)
        except IcebenchError:  # bad input: one line for the whole command
            raise
        except Exception as exc:
            record.status, record.error = "error", f"table set-up failed: {one_line(exc)}"
            return None

    def _settle_and_judge(
        self,
        record: RunRecord,
        scenario: Scenario,
        writer: type[Writer],
        plan: RunPlan,
        workers: list[WorkerRun],
        run_catalog: RunCatalog,
        before: TableState,
    ) -> None:
        expected, kill, concurrency = self._settle(record, scenario, plan, workers)
        if self.settings.profile == "memray" and (flamegraph := render_flamegraph(workers[0].folder)):
            record.profile_flamegraph = str(flamegraph)
        if record.status == "oom" and not all(w.spec.started_marker.exists() for w in workers):
            raise WorkerCouldNotStart(
                f"memory cap {format_size(plan.cap_bytes)} is too small for the worker to start "
                f"(it died before its first write; see {workers[0].log})"
            )
        self._judge(
            record,
            run_catalog,
            scenario.table_identifier(run_catalog.namespace),
            Expected(expected, scenario.expected_schema(plan.sets), writer.single_commit),
            before,
            kill,
            concurrency,
        )

    def _release(self, run_catalog: RunCatalog, keep: bool) -> None:
        """The run's tables and files removed; a failure to is said, never lost, never fatal."""
        try:
            with signals_held():  # a second Ctrl-C must not leave the namespace behind
                self.stack.release(run_catalog, keep=keep)
        except Exception as exc:
            left = f"could not remove what run {run_catalog.namespace} left in {run_catalog.work}"
            warn(f"{left}: {one_line(exc)}")

    def _settle(
        self, record: RunRecord, scenario: Scenario, plan: RunPlan, workers: list[WorkerRun]
    ) -> tuple[Expectation, KillReport | None, ConcurrencyReport | None]:
        """The record's figures from its worker(s); what the oracle must expect and check."""
        if len(workers) > 1:
            concurrency = self._apply_concurrent(record, workers, plan.sets)
            landed = [outcome.source_set for outcome in record.workers if outcome.status == "ok"]
            return scenario.expected_landed(plan.sets, landed), None, concurrency
        (worker,) = workers
        assert worker.launched is not None, "launched or raised"
        note = read_kill_note(worker.spec, worker.launched)
        self._apply(record, worker.launched, worker.result or note, worker.log)
        return self._expected(record, scenario, plan, note), _kill_report(scenario, worker.result, note), None

    def _workers(
        self, plan: RunPlan, scenario: Scenario, catalog: dict[str, str], identifier: str, work: Path
    ) -> list[WorkerRun]:
        """One worker fed the scenario's source; a concurrent scenario's, one per set, each with a
        folder of its own, meeting at one rendezvous."""
        sets = scenario.worker_sets or (scenario.source_set,)
        concurrent = len(sets) > 1
        workers = []
        for index, set_name in enumerate(sets):
            name = ascii_lowercase[index] if concurrent else ""
            folder = work / f"worker-{name}" if concurrent else work
            folder.mkdir(exist_ok=True)
            spec = WorkerSpec(
                catalog=catalog,
                table=identifier,
                writer=plan.writer,
                operation=scenario.operation,
                key_columns=list(scenario.key_columns),
                source_dir=plan.sets[set_name].directory,
                batch_rows=plan.batch_rows,
                limit_rows=plan.limit_rows,
                cap_bytes=plan.cap_bytes,
                writer_options=self.settings.engine_table(get_writer(plan.writer).options),
                started_marker=folder / "worker.started",
                result_path=folder / "worker-result.json",
                kill_at=scenario.kill_point,
                kill_note_path=folder / "kill-note.json" if scenario.kill_point else None,
                rendezvous=Rendezvous(directory=work / "rendezvous", name=name, parties=len(sets))
                if concurrent
                else None,
            )
            workers.append(WorkerRun(name, set_name, spec, folder))
        return workers

    def _launch_all(self, workers: list[WorkerRun], cap_bytes: int | None) -> None:
        """Runs the workers, each under its own cap; several at once from threads of this process."""
        if len(workers) == 1:
            self._launch(workers[0], cap_bytes)
            return
        running = RunningWorkers()
        with ThreadPoolExecutor(len(workers)) as pool:
            futures = [pool.submit(self._launch, worker, cap_bytes, running.started) for worker in workers]
            try:
                for future in futures:
                    future.result()
            except BaseException:  # Ctrl-C or a failure of ours: no worker outlives the run
                running.kill_all()
                raise

    def _apply_concurrent(
        self, record: RunRecord, workers: list[WorkerRun], sets: DataSets
    ) -> ConcurrencyReport:
        """Each worker's figures on its own, and the run's: its slowest wall time, its hungriest
        worker's memory, every failure."""
        parts = []
        for worker in workers:
            assert worker.launched is not None, "launched or raised"
            part = record.model_copy(deep=True)
            self._apply(part, worker.launched, worker.result, worker.log)
            parts.append(part)
            record.workers.append(
                WorkerOutcome(
                    name=worker.name,
                    source_set=worker.source_set,
                    rows=sets[worker.source_set].manifest.rows,
                    commit_retries=worker.result.commit_retries if worker.result else None,
                    **part.model_dump(include=SHARED_FIELDS),
                )
            )
        hungriest = max(parts, key=lambda part: part.peak_memory_bytes or 0)
        record.wall_s = max(part.wall_s or 0 for part in parts)
        record.write_s = max((part.write_s for part in parts if part.write_s is not None), default=None)
        record.cap_bytes = hungriest.cap_bytes
        record.peak_memory_bytes = hungriest.peak_memory_bytes
        record.peak_rss_bytes = hungriest.peak_rss_bytes
        record.cache_at_peak_bytes = hungriest.cache_at_peak_bytes
        record.memory_timeline = hungriest.memory_timeline
        record.oom_kills = sum(part.oom_kills for part in parts)
        if all(part.batches is not None for part in parts):
            record.batches = sum(part.batches or 0 for part in parts)
        record.versions = parts[0].versions
        record.worker_log = str(workers[0].folder.parent)
        failed = [outcome for outcome in record.workers if outcome.status != "ok"]
        record.status = "oom" if any(o.status == "oom" for o in failed) else "error" if failed else "ok"
        record.error = "; ".join(f"worker {o.name} ({o.source_set}): {o.error}" for o in failed) or None
        return ConcurrencyReport(
            workers=len(workers),
            failed=tuple(
                FailedWorker(
                    o.name, o.source_set, o.error or o.status, sets[o.source_set].manifest.key_ranges
                )
                for o in failed
            ),
        )

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
        expected: Expected,
        before: TableState,
        kill: KillReport | None,
        concurrency: ConcurrencyReport | None = None,
    ) -> None:
        """The oracle's verdict, its time and the harness's resident peak meanwhile."""
        start = time.perf_counter()
        catalog = run_catalog.open()
        try:
            with measure_peak_rss() as peak:
                table = catalog.load_table(identifier)
                record.verdict, metrics = judge(
                    table,
                    expected=expected.content,
                    expected_schema=expected.schema,
                    error=record.error,
                    before=before,
                    single_commit=expected.single_commit,
                    verifier=self.verifier,
                    verifier_options=self.verifier_options,
                    kill=kill,
                    concurrency=concurrency,
                )
        except Exception as exc:  # what a writer left may break the reader too: a verdict, not a crash
            record.verdict = unreadable_verdict(record.error, one_line(exc))
            metrics = {}
        finally:
            close_catalog(catalog)
            record.verify_s = round(time.perf_counter() - start, 3)
        record.verify_peak_rss_bytes = peak.bytes
        for name, value in metrics.items():
            setattr(record, name, value)

    def _launch(
        self, worker: WorkerRun, cap_bytes: int | None, on_start: Callable[[WorkerHandle], None] | None = None
    ) -> None:
        spec, work = worker.spec, worker.folder
        spec_path = work / "worker-spec.json"
        spec_path.write_text(spec.model_dump_json(indent=2))
        # The worker's temp files (dlt's pipeline folder, Spark's scratch) go here, and are removed
        # from here whatever its end: a worker OOM-killed or SIGKILLed runs no cleanup of its own.
        scratch = work / SCRATCH_FOLDER
        cap = make_cap(self.isolation, cap_bytes)
        limits = {
            "timeout_s": self.settings.worker_timeout_s,
            "sample_interval_s": self.settings.sample_interval_s,
            "timeline_points": self.settings.timeline_points,
            "python_arguments": worker_arguments(self.settings.profile, work),
            "environment": {"TMPDIR": str(scratch)},
            "on_start": on_start,
        }
        try:
            scratch.mkdir(exist_ok=True)
            if isinstance(cap, CgroupCap) and self.isolation == "docker":
                worker.launched = launch_container(
                    cap, spec_path, worker.log, image=self.settings.worker_image,
                    read_only=[self.settings.data_dir, spec.source_dir], writable=[self.store.folder],
                    **limits,
                )  # fmt: skip
            else:
                worker.launched = launch_worker(cap, spec_path, worker.log, python=self.python, **limits)
        finally:
            with signals_held():
                cap.close()
                shutil.rmtree(scratch, ignore_errors=True)
        worker.result = read_report(spec.result_path, WorkerResult)

    def _apply(self, record: RunRecord, launched: Launch, result: WorkerResult | None, log: Path) -> None:
        record.cap_bytes = launched.enforced_cap_bytes
        record.wall_s = round(launched.wall_s, 4)
        record.peak_memory_bytes = launched.peak_memory_bytes
        record.memory_timeline = launched.timeline
        record.cache_at_peak_bytes = launched.cache_at_peak_bytes
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
            return "error", f"worker timed out after {self.settings.worker_timeout_s:g} s"
        if record.isolation == "rlimit" and _mentions_memory_error(launched):
            return "oom", f"allocation failed under a {cap} rlimit cap before the worker could report"
        return "error", _death_notice(launched, log)

    def _finish(self, record: RunRecord) -> RunRecord:
        self.store.append(record)
        return record


def read_report(path: Path, model: type[Report]) -> Report | None:
    """What the worker reported; None when it wrote nothing readable (it died first, or its disk
    was full): its exit code and output then tell what happened."""
    try:
        return model.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None


def read_kill_note(spec: WorkerSpec, launched: Launch) -> KillNote | None:
    """The note of a worker that died by the kill it was asked to give itself: the note says what
    had landed, the exit code proves the kill (a note without it is not taken on its word)."""
    path = spec.kill_note_path
    killed = launched.returncode in SIGKILL_EXIT_CODES and not launched.oom_kills
    if path is None or not killed:
        return None
    return read_report(path, KillNote)


def _kill_report(scenario: Scenario, result: WorkerResult | None, note: KillNote | None) -> KillReport | None:
    """For the oracle: the kill as asked, or the point never reached; None for other failures
    (an error or an OOM before the point), which are judged like any failed write."""
    if note is not None:
        return KillReport(note.point, True, note.describe(), note.committed_snapshot_id)
    if scenario.kill_point is not None and result is not None and result.kill_missed:
        return KillReport(scenario.kill_point, False, result.kill_missed)
    return None


def _death_notice(launched: Launch, log: Path) -> str:
    """A worker that died without its report: the last error it printed (kept in memory, so a log
    that could not be written loses nothing) and where its log is, or why there is none."""
    output = launched.output
    said = output.reason() if output else None
    notice = f"worker died with exit code {launched.returncode}" + (f": {said}" if said else "")
    if output is not None and output.log_error:
        return f"{notice} (its log {log} could not be written: {output.log_error})"
    return f"{notice}; see {log}"


def _mentions_memory_error(launched: Launch) -> bool:
    lines = launched.output.lines if launched.output else []
    return any("MemoryError" in line or "bad_alloc" in line for line in lines)
