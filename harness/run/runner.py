"""One run: prepare the table, launch the scenario's workers under their caps, classify what came
of each, let the oracle judge the table, and build the record once.

The runner knows no scenario family: what a crash or a race asks of its workers, expects of the
table and checks, the scenario says through its hooks (scenarios/base.py).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.version import Version
from pyiceberg.io import PY_IO_IMPL
from pyiceberg.table import Table

from generators.place import on_s3
from harness.base.builds import parse_source
from harness.base.caps import CgroupCap, MemoryCap, format_size, make_cap, resolve_isolation
from harness.base.errors import DISK_ERRNOS, IcebenchError, harness_fault, one_line, warn
from harness.base.executor_caps import ExecutorCaps, executor_oom, executors_parent
from harness.base.progress import ProgressReport, read_progress, watching
from harness.base.results import ResultsStore, now_iso, read_report
from harness.base.settings import Settings
from harness.base.signals import signals_held
from harness.base.table_files import orphan_files
from harness.engines.availability import unavailable_in
from harness.engines.choices import file_io_impl, standalone_workers
from harness.engines.maintainers import Maintainer, get_maintainer
from harness.engines.spark import (
    ICEBERG_SPARK_VARIABLE,
    SparkOptions,
    fetch_jars,
    line_iceberg_spark,
    spark_line,
)
from harness.engines.verifiers import Verifier, equality_delete_readers, get_verifier
from harness.engines.writers import Writer, get_writer, writer_file_variables, writer_folders, writer_origin
from harness.engines.writers.base import ProgramWriter
from harness.engines.writers.ray_data import RayOptions
from harness.judge.oracle import TableState, capture_state, judge, unreadable_verdict
from harness.judge.scan_cost import (
    SCAN_PROGRAM,
    ScanReport,
    ScanSpec,
    both_scans,
    key_span,
    take_full_scan,
)
from harness.model import (
    PLAIN_LAYOUT,
    EngineOptions,
    ExecutorFigures,
    Expectation,
    Feed,
    Maintenance,
    RunRecord,
    TableLayout,
    Verdict,
    WorkerEnd,
    WorkerFigures,
    WorkerOutcome,
    WorkerResult,
    WorkerSpec,
)
from harness.run.classify import (
    classify,
    format_version_refusal,
    scan_figures,
    total_cost_figures,
    traffic_figures,
)
from harness.services import rust_worker
from harness.services.container import launch_container
from harness.services.envs import (
    FILE_IO_AXIS,
    Variant,
    installed_version,
    library_env,
    pinned_versions,
    requirements_env,
)
from harness.services.launcher import Launch, RunningWorkers, WorkerHandle, launch_worker
from harness.services.leftovers import SCRATCH_FOLDER
from harness.services.own_memory import measure_peak_rss, release_freed_memory
from harness.services.processes import dead_service, service_peaks
from harness.services.profiling import render_flamegraph, worker_arguments
from harness.services.s3_counter import traffic_between
from harness.services.stacks import RunCatalog, Stack, close_catalog
from scenarios import get_scenario
from scenarios.base import DataSets, Scenario
from scenarios.maintenance_step import MaintenanceStep

# What one worker's figures say about the whole run when it is the run's only worker: all but its
# error (the run's is run_error()).
WORKER_FIGURES = set(WorkerFigures.model_fields) - {"error"}


# What an OOM-killed worker's figures say of the kill: whose limit and the box's at the kill.
OOM_FIGURES = {"oom_limit", "box_usage_at_kill_bytes", "box_rss_at_kill_bytes"}


@dataclass
class WorkerRun:
    """One worker of a run: what it is fed, its spec, the folder its files go to, how it ended."""

    feed: Feed
    spec: WorkerSpec
    folder: Path
    python: Path | None = None  # another environment's interpreter; None: this one
    program: list[str] | None = None  # a worker in another language (Writer.worker_command)
    rows: int = 0  # the rows it is fed (its time limit grows with them: worker_timeout)
    launched: Launch | None = None
    result: WorkerResult | None = None
    executors: list[ExecutorFigures] = field(default_factory=list)  # as their cgroups measured them

    @property
    def log(self) -> Path:
        return self.folder / "worker.log"


# What a run's workers run: a writer, or a maintenance phase's maintainer.
Engine = type[Writer] | type[Maintainer]


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
    layout: TableLayout = PLAIN_LAYOUT  # how the run's table is partitioned, sorted and configured
    round: int | None = None  # the rounds workload: which round and phase
    phase: str | None = None
    maintainer: str | None = None  # a maintenance phase: the engine that maintains the writer's table


@dataclass(frozen=True)
class Judgement:
    """The oracle's verdict on the table, the figures it read, and what judging cost."""

    verdict: Verdict
    metrics: dict[str, Any]
    verify_s: float
    verify_peak_rss_bytes: int | None  # the largest of the judging processes' peaks
    oracle_peak_rss_bytes: int | None = None  # the harness process's
    verifier_peak_rss_bytes: int | None = None  # a verifier's child process's


class WorkerCouldNotStart(IcebenchError):
    pass


class RunFailed(Exception):
    """This run cannot go on (its set-up failed): its recorded error; the matrix goes on."""


class Runner:
    def __init__(
        self,
        settings: Settings,
        store: ResultsStore,
        stack: Stack,
        variant: Variant | None = None,
        on_progress: ProgressReport | None = None,
    ) -> None:
        self.settings = settings
        self.on_progress = on_progress  # rows fed by a lone worker, about once a second
        self.store = store
        self.stack = stack
        self.isolation = resolve_isolation(settings.isolation)
        self.variant = variant  # as it is labelled: a source build renamed as built (_set_up)
        self.built_from = variant  # as it was asked for: what a worker program is built from
        self.envs_root = settings.data_dir.parent / "envs"
        self.python: Path | None = None  # the variant's interpreter; None: this one
        self.worker_variables: dict[str, str] = {}  # what a JVM runtime's variant tells its workers
        self.worker_catalog: dict[str, str] = {}  # catalog properties a variant adds (--fileio's FileIO)
        self.probing_caps = False  # find-cap's bisection runs: marked as its probes
        # A worker the cap kills as it starts: the run's OOM (find-cap), not the command's error.
        self.starved_is_oom = False
        self._unavailable_reasons: dict[str, str | None] = {}  # writer: why it cannot write (None: it can)
        if variant is not None:
            self._set_up(variant)
        self.verifier = get_verifier(settings.verify_with)  # None: the oracle's pyiceberg read alone
        self.verifier_options = settings.engine_options(self.verifier.options) if self.verifier else None
        if self.verifier and (why := self.verifier.supports_catalog(stack.catalog_shape)):
            raise IcebenchError(
                f"--verify-with {settings.verify_with} cannot read {stack.name} tables: {why}"
            )
        if self.verifier and self.verifier.environment:  # made once, before any run needs it
            self.verifier.python = requirements_env(self.verifier.environment, self.envs_root)
        # The reader of tables with equality deletes when the one asked for cannot apply them:
        # chosen on the first such table (see equality_reader), then kept.
        self._equality_reader: tuple[Verifier, EngineOptions] | str | None = None

    def _set_up(self, variant: Variant) -> None:
        """The variant's environment, or the Iceberg runtime its Spark workers load: made or
        fetched once (then cached) before any run, a failure the command's one-line error."""
        if self.isolation == "docker":
            raise IcebenchError(f"--{variant.library} versions run in local environments, not containers")
        if variant.library == FILE_IO_AXIS:  # the pyiceberg writers' catalog gets its py-io-impl
            self.worker_catalog = {PY_IO_IMPL: file_io_impl(variant.version)}
            return
        if variant.library == rust_worker.LIBRARY:  # the Rust worker built against that release
            binary, _ = rust_worker.build(variant.version, echo=False)
            if parse_source(variant.version, cargo=True) is not None:  # named as the worker says it is
                built = rust_worker.describe(binary)["versions"].get(rust_worker.LIBRARY, "missing")
                self.variant = Variant(variant.library, str(built))
            return
        if variant.on_jvm:
            fetch_jars(variant.version, spark_line())
            self.worker_variables = {ICEBERG_SPARK_VARIABLE: variant.version}
            return
        if variant.library == "pyspark":  # Spark's other line: its Scala's build of the runtime
            line = spark_line(variant.version)  # one no Iceberg runtime is built for: refused before pip
            fetch_jars(line_iceberg_spark(line), line)
        self.python = library_env(variant.library, variant.version, self.envs_root)
        imported = installed_version(self.python, variant.library)
        if parse_source(variant.version) is not None:  # named as built, from the environment it runs in
            self.variant = Variant(variant.library, imported)
        elif imported == "missing" or Version(imported) != Version(variant.version):
            raise IcebenchError(
                f"--{variant.library} {variant.version}: its environment imports {variant.library} "
                f"{imported}, not {variant.version} (the release installs no module of that name)"
            )

    def equality_reader(self) -> tuple[Verifier, EngineOptions] | str:
        """The cheapest verifier that applies equality deletes and can run on this stack, with its
        environment made and its options; else why none can (the table is then unjudged, a limit
        of the harness)."""
        if self._equality_reader is None:
            reasons = []
            for candidate in equality_delete_readers():
                why = candidate.unavailable() or candidate.supports_catalog(self.stack.catalog_shape)
                reader = candidate()
                if why is None and candidate.environment:
                    try:
                        reader.python = requirements_env(candidate.environment, self.envs_root)
                    except (IcebenchError, OSError, subprocess.SubprocessError) as exc:
                        why = f"its environment: {one_line(exc)}"
                if why is None:
                    self._equality_reader = reader, self.settings.engine_options(candidate.options)
                    break
                reasons.append(f"{candidate.name}: {why}")
            else:
                self._equality_reader = "; ".join(reasons) or "no verifier applies them"
        return self._equality_reader

    def run(self, plan: RunPlan) -> RunRecord:
        """One run of `plan` on a table of its own, created for it and removed afterwards."""
        return self.run_and_maintain(plan, [], "")[0]

    def run_and_maintain(
        self, plan: RunPlan, steps: Sequence[Maintenance], maintainer: str
    ) -> list[RunRecord]:
        """`plan`'s run, then each maintenance step by `maintainer` on the table its write left (a
        run each: `phase` names the step), the steps only after a write that passed; the records in
        order. The table is created for the write and removed after its last step."""
        scenario = get_scenario(plan.scenario)()
        writer = get_writer(plan.writer)
        identity = self._identity(plan, scenario, writer)
        if refused := self._refused(scenario, writer, identity, plan):  # before any folder or catalog
            return [self._conclude(refused, [], scenario)]
        try:
            run_catalog = self.new_catalog(f"{plan.scenario}-{plan.writer}")
        except OSError as exc:  # a full or unwritable results folder: this run's error, not the matrix's
            return [
                self._finish(
                    RunRecord(**identity, status="error", error=f"run set-up failed: {one_line(exc)}")
                )
            ]
        records: list[RunRecord] = []
        try:
            record, ends = self._attempt(plan, scenario, run_catalog, run_catalog.work, identity)
            if steps and record.status == "ok" and record.verdict is not None and record.verdict.passed:
                records.append(self._conclude(record, ends, scenario))
                records += self._maintain(plan, scenario, steps, maintainer, run_catalog)
        finally:  # the space its files took is back before its record is written (a full disk)
            self.release(run_catalog)
            release_freed_memory()  # and the memory its judging took, before the next worker
        return records or [self._conclude(record, ends, scenario)]

    def _maintain(
        self,
        plan: RunPlan,
        written: Scenario,
        steps: Sequence[Maintenance],
        maintainer: str,
        run_catalog: RunCatalog,
    ) -> list[RunRecord]:
        records = []
        for step in steps:
            step_plan = replace(plan, phase=step.value, maintainer=maintainer)
            _, work = self.store.new_work_folder(f"{plan.scenario}-{plan.writer}-{step.value}")
            records.append(
                self.run_on(step_plan, MaintenanceStep(step, written, maintainer), run_catalog, work)
            )
        return records

    def new_catalog(self, label: str) -> RunCatalog:
        """A catalog and namespace of a run's own, in a new work folder of the results."""
        number, work = self.store.new_work_folder(label)
        return self.stack.catalog_for_run(work, f"{self.store.run_id}_{number:03d}")

    def release(self, run_catalog: RunCatalog) -> None:
        """What a catalog from `new_catalog` holds removed (unless the settings keep it)."""
        self._release(run_catalog, keep=self.settings.keep_warehouse)

    def run_on(self, plan: RunPlan, scenario: Scenario, run_catalog: RunCatalog, work: Path) -> RunRecord:
        """One run of `plan` as `scenario` says, in `run_catalog` (which the caller releases), the
        workers' files in `work`: the rounds workload runs its phases so, on one table."""
        record, ends = self._attempt(plan, scenario, run_catalog, work)
        return self._conclude(record, ends, scenario)

    def _attempt(
        self,
        plan: RunPlan,
        scenario: Scenario,
        run_catalog: RunCatalog,
        work: Path,
        identity: dict[str, Any] | None = None,
    ) -> tuple[RunRecord, list[WorkerEnd]]:
        """The run's record, not yet written, and how each worker ended."""
        writer = get_writer(plan.writer)
        identity = identity or self._identity(plan, scenario, writer)
        if refused := self._refused(scenario, writer, identity, plan, run_catalog):
            return refused, []
        engine = _engine(plan)
        ends: list[WorkerEnd] = []
        try:
            services_alive()
            before = self._prepare(scenario, run_catalog, plan.sets, plan.layout)
            workers = self._workers(plan, scenario, writer, run_catalog, work)
            counted = self.stack.traffic()
            self._launch_all(workers, plan.cap_bytes)
            ends = [self._end(scenario, engine, plan, worker) for worker in workers]
            services_alive()  # a worker killed because a server died: the run's error, nothing to judge
            wrote = traffic_between(counted, self.stack.traffic())
            self._check_started(ends, plan.cap_bytes)
        except RunFailed as failed:
            return RunRecord(**identity, status="error", error=str(failed)), ends
        except OSError as exc:  # the harness's own files (spec, result) on a full or broken disk
            error = f"the harness could not run the worker: {one_line(exc)}"
            return RunRecord(**identity, status="error", error=error), ends
        try:  # the workers ran: whatever fails now, their figures and the table's verdict are kept
            expected = scenario.expectation(plan.sets, ends, plan.limit_rows)
            counted = self.stack.traffic()
            judgement = self._judge(scenario, engine, plan, ends, run_catalog, before, expected)
            judged = traffic_between(counted, self.stack.traffic())
            full_scan = take_full_scan(judgement.metrics)  # the oracle's read was the full scan
            services_alive()
            counted = self.stack.traffic()
            scan = (
                both_scans(full_scan, self._scan_cost(scenario, plan, run_catalog, work, expected))
                if self.settings.scan_cost
                else {}
            )
            scanned = traffic_between(counted, self.stack.traffic()) if self.settings.scan_cost else None
        except RunFailed as failed:
            record = build_record(identity, ends, None, harness_error=str(failed))
            return record.model_copy(update=traffic_figures(wrote, None, None)), ends
        record = build_record(identity, ends, judgement, {**scan, **traffic_figures(wrote, judged, scanned)})
        if self.settings.scan_cost:
            record = record.model_copy(update=total_cost_figures(record, self.settings.reads))
        record.service_peak_rss_bytes = service_peaks()  # the stack's servers, outside the box
        if self.settings.profile == "memray" and (flamegraph := render_flamegraph(work)):
            record.profile_flamegraph = str(flamegraph)
        return record, ends

    def _conclude(self, record: RunRecord, ends: list[WorkerEnd], scenario: Scenario) -> RunRecord:
        """The record written; bad input a worker met (not on purpose) is the command's error."""
        self._finish(record)
        bad_input = next(
            (end.result for end in ends if end.result and end.result.error_kind == "bad_input"), None
        )
        if bad_input is not None and not scenario.expects_bad_input:
            raise IcebenchError(bad_input.error or "bad input")
        return record

    def _refused(
        self,
        scenario: Scenario,
        writer: type[Writer],
        identity: dict[str, Any],
        plan: RunPlan,
        run_catalog: RunCatalog | None = None,
    ) -> RunRecord | None:
        """The record of a run refused before it starts: unsupported with the reason, or the error
        of a writer environment that could not be made or asked."""
        try:
            reason = self._refusal(scenario, writer, plan, run_catalog)
        except RunFailed as failed:
            return RunRecord(**identity, status="error", error=str(failed))
        return RunRecord(**identity, status="unsupported", error=reason) if reason else None

    def _refusal(
        self,
        scenario: Scenario,
        writer: type[Writer],
        plan: RunPlan,
        run_catalog: RunCatalog | None = None,
    ) -> str | None:
        """Why `writer` cannot run `scenario` here (recorded as unsupported), or None. RunFailed
        when the writer's own environment, where it is asked whether it can write, cannot be made."""
        # A maintenance step runs its maintainer here, whatever the writer needs to run.
        refusal = None if plan.maintainer else self._writer_refusal(writer)
        if reason := refusal or scenario.unsupported_reason(writer):
            return reason
        key_columns = list(plan.sets[scenario.source_set].manifest.key_columns)
        if reason := writer.supports_layout(plan.layout, key_columns):
            return f"{writer.name} cannot write a {plan.layout.label} table: {reason}"
        if run_catalog and (reason := writer.supports_catalog(run_catalog.properties)):
            return f"{writer.name} does not support this catalog: {reason}"
        return None

    def _writer_refusal(self, writer: type[Writer]) -> str | None:
        """Why the writer's workers cannot run here: its environment, the variant, its library."""
        return self._environment_refusal(writer) or self._variant_refusal(writer) or self._unavailable(writer)

    @property
    def variant_versions(self) -> dict[str, str]:
        """{library: version} of a version variant (not --fileio's, which names no library version)."""
        if self.variant is None or self.variant.library == FILE_IO_AXIS:
            return {}
        return {self.variant.library: self.variant.version}

    def _environment_refusal(self, writer: type[Writer]) -> str | None:
        """Why a writer with an environment (or a program) of its own cannot run here, if it cannot."""
        if issubclass(writer, ProgramWriter) and self.isolation == "docker":
            return f"{writer.name}'s worker is a program built on this machine, not in the worker container"
        if not writer.environment:
            return None
        if self.variant is not None:
            requirements = " ".join(writer.environment)
            return f"{writer.name} runs in its own environment ({requirements}), not a variant's"
        if self.isolation == "docker":
            return f"{writer.name} runs in its own local environment, not in the worker container"
        return None

    def _variant_refusal(self, writer: type[Writer]) -> str | None:
        """Why the variant does not apply to this writer (it would run as in the main environment)."""
        if self.variant is None or self.variant.changes(writer.libraries):
            return None
        library = self.variant.library
        if library == FILE_IO_AXIS:
            own = "writes its files with an engine of its own, not pyiceberg's FileIO"
            return f"{writer.name} {own}: --fileio changes nothing it runs"
        return f"{writer.name} does not use {library}: --{library} changes nothing it runs"

    def _unavailable(self, writer: type[Writer]) -> str | None:
        """Why the writer cannot write at all (`Writer.unavailable`), asked once per runner where
        its workers run."""
        if not writer.asks_availability():
            return None
        if writer.name not in self._unavailable_reasons:
            python = self._worker_python(writer)
            try:
                reason = unavailable_in(python, writer.name)
            except (IcebenchError, OSError, subprocess.SubprocessError) as exc:
                raise RunFailed(one_line(exc)) from exc
            self._unavailable_reasons[writer.name] = (
                f"{writer.name} does not support writing: {reason}" if reason else None
            )
        return self._unavailable_reasons[writer.name]

    def _worker_python(self, writer: type[Writer]) -> Path | None:
        """The interpreter the writer's workers run with: its own environment's, made on first use
        (a failed install is this run's error), the variant's, or this one's."""
        if not writer.environment:
            return self.python
        try:
            return requirements_env(writer.environment, self.envs_root)
        except (IcebenchError, OSError, subprocess.SubprocessError) as exc:
            raise RunFailed(f"{writer.name}'s environment: {one_line(exc)}") from exc

    def _identity(self, plan: RunPlan, scenario: Scenario, writer: type[Writer]) -> dict[str, Any]:
        """The record's fields known before anything runs."""
        fed = plan.sets[scenario.source_set]
        source = fed.manifest
        return {
            "run_id": self.store.run_id,
            "scenario": plan.scenario,
            "writer": plan.writer,
            "writer_source": writer.source_digest(),
            "writer_origin": writer_origin(writer),
            "preset": plan.preset,
            "repeat": plan.repeat,
            "round": plan.round,
            "phase": plan.phase,
            "maintainer": plan.maintainer,
            "stack": self.stack.name,
            "source_location": str(fed.directory) if on_s3(fed.directory) else None,
            "services": self.stack.services(),
            "catalog": self.stack.catalog,
            "operation": scenario.operation,
            "rows": min(source.rows, plan.limit_rows or source.rows),
            "limit_rows": plan.limit_rows,
            "columns": len(source.schema_fields),
            "batch_rows": plan.batch_rows,
            "cap_bytes": plan.cap_bytes,
            "isolation": self.isolation if plan.cap_bytes else "none",
            "versions": _engine(plan).versions() if plan.maintainer else self._versions_of(writer),
            "verified_with": self.settings.verify_with,
            "variant": self.variant.label if self.variant else None,
            "layout": plan.layout,
            "cap_probe": self.probing_caps,
            "started_at": now_iso(),
        }

    def _versions_of(self, writer: type[Writer]) -> dict[str, str]:
        """The versions a writer's workers run with, as far as this process knows them: this
        environment's, or what the writer's own pins, with the variant's (as built) on top, even
        for a run refused before it started."""
        return {
            **(pinned_versions(writer.environment) if writer.environment else writer.versions()),
            **(self.variant_versions if self._variant_refusal(writer) is None else {}),
        }

    def _prepare(
        self, scenario: Scenario, run_catalog: RunCatalog, sets: DataSets, layout: TableLayout
    ) -> TableState:
        """The table as the scenario prepares it, before any worker. A failure (a catalog out of
        reach, a full disk) is the run's recorded error, and the matrix goes on."""
        try:
            catalog = run_catalog.open()
            try:
                return capture_state(scenario.prepare(catalog, run_catalog.namespace, sets, layout))
            finally:
                close_catalog(catalog)
        except IcebenchError:  # bad input: one line for the whole command
            raise
        except Exception as exc:
            raise RunFailed(f"table set-up failed: {one_line(exc)}") from exc

    def _workers(
        self, plan: RunPlan, scenario: Scenario, writer: type[Writer], run_catalog: RunCatalog, work: Path
    ) -> list[WorkerRun]:
        """A worker per feed of the scenario; several get a folder each."""
        feeds = scenario.feeds()
        engine = _engine(plan)
        if plan.maintainer:  # a maintainer runs in this environment's Python
            python, program = self.python, None
        else:
            python, program = self._worker_python(writer), self._program(writer)
        workers = []
        for feed in feeds:
            folder = work / f"worker-{feed.name}" if len(feeds) > 1 else work
            folder.mkdir(exist_ok=True)
            spec = WorkerSpec(
                catalog={**run_catalog.properties, **self.worker_catalog},
                table=scenario.table_identifier(run_catalog.namespace),
                writer=plan.writer,
                maintainer=plan.maintainer,
                operation=feed.operation,
                key_columns=list(plan.sets[feed.source_set].manifest.key_columns),
                source_dir=plan.sets[feed.source_set].directory,
                batch_rows=plan.batch_rows,
                limit_rows=plan.limit_rows,
                cap_bytes=plan.cap_bytes,
                writer_options=self.settings.engine_table(engine.options),
                started_marker=folder / "worker.started",
                result_path=folder / "worker-result.json",
                progress_path=folder / "worker.progress",
                **scenario.spec_fields(feed, folder, work),
            )
            rows = plan.sets[feed.source_set].manifest.rows
            rows = min(rows, plan.limit_rows) if plan.limit_rows is not None else rows
            workers.append(WorkerRun(feed, spec, folder, python, program, rows))
        return workers

    def _program(self, writer: type[Writer]) -> list[str] | None:
        """The writer's own program (a worker in another language), or None for the Python worker."""
        built_from = self.built_from
        try:
            return writer.worker_command({built_from.library: built_from.version} if built_from else {})
        except IcebenchError as exc:  # its program is not built here: the harness's limit, not the writer's
            raise RunFailed(str(exc)) from exc

    def _launch_all(self, workers: list[WorkerRun], cap_bytes: int | None) -> None:
        """Runs the workers, each under its own cap; several at once from threads of this process."""
        if len(workers) == 1:
            progress = workers[0].spec.progress_path
            with watching(progress, self.on_progress) if progress and self.on_progress else nullcontext():
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

    def _launch(
        self, worker: WorkerRun, cap_bytes: int | None, on_start: Callable[[WorkerHandle], None] | None = None
    ) -> None:
        spec, work = worker.spec, worker.folder
        spec_path = work / "worker-spec.json"
        spec_path.write_text(spec.model_dump_json(indent=2))
        # The worker's temp files (dlt's pipeline folder, Spark's scratch) go here, and are removed
        # from here whatever its end: a worker OOM-killed or SIGKILLed runs no cleanup of its own.
        scratch = work / SCRATCH_FOLDER
        variables = {"TMPDIR": str(scratch), **self.worker_variables, **writer_file_variables()}
        limits = self._limits(worker_arguments(self.settings.profile, work), variables)
        limits["timeout_s"] = worker_timeout(self.settings.worker_timeout_s, worker.rows)
        try:
            scratch.mkdir(exist_ok=True)
            with self._capped(cap_bytes) as cap, self._executors_capped(cap_bytes) as executors:
                if executors is not None:
                    limits["environment"] = {**limits["environment"], **executors.variables()}
                if isinstance(cap, CgroupCap) and self.isolation == "docker":
                    worker.launched = launch_container(
                        cap, spec_path, worker.log, image=self.settings.worker_image,
                        read_only=[self.settings.data_dir, *local_source(spec), *writer_folders()],
                        writable=[self.store.folder],
                        on_start=on_start, **limits,
                    )  # fmt: skip
                else:
                    worker.launched = launch_worker(
                        cap, spec_path, worker.log, python=worker.python, program=worker.program,
                        on_start=on_start, **limits,
                    )  # fmt: skip
                worker.executors = executors.figures() if executors is not None else []
        finally:
            with signals_held():
                shutil.rmtree(scratch, ignore_errors=True)
        worker.result = read_report(spec.result_path, WorkerResult)

    def _limits(self, python_arguments: list[str], environment: dict[str, str]) -> dict[str, Any]:
        """What a process of the run is started with beside its cap: its time limit, how its
        memory is sampled, its command after `python` and the variables it gets beyond ours."""
        return {
            "timeout_s": self.settings.worker_timeout_s,
            "sample_interval_s": self.settings.sample_interval_s,
            "timeline_points": self.settings.timeline_points,
            "python_arguments": python_arguments,
            "environment": environment,
        }

    @contextmanager
    def _capped(self, cap_bytes: int | None) -> Iterator[MemoryCap]:
        """A fresh cap of the run's isolation for one process, removed after it, whatever its end."""
        cap = make_cap(self.isolation, cap_bytes)
        try:
            yield cap
        finally:
            with signals_held():
                cap.close()

    @contextmanager
    def _executors_capped(self, cap_bytes: int | None) -> Iterator[ExecutorCaps | None]:
        """On a cluster icebench starts (Spark's `standalone[N]`, Ray's `nodes`), the cgroup its
        executors or nodes cap themselves under, each at the run's cap (or `[engines.spark]
        executor_memory`, `[engines.ray] node_memory`), sampled while the worker runs and removed after it."""
        spark, ray = self.settings.engine_options(SparkOptions), self.settings.engine_options(RayOptions)
        capped = cap_bytes is not None and self.isolation in ("cgroup", "docker")
        cluster = f"--spark-master {spark.master}" if standalone_workers(spark.master) else None
        cluster = cluster or (f"[engines.ray] nodes = {ray.nodes}" if ray.nodes else None)
        if cluster is None or not capped:
            yield None
            return
        if (parent := executors_parent()) is None:
            raise RunFailed(f"{cluster}: its executors' caps need a writable cgroup v1")
        asked = spark.executor_memory if standalone_workers(spark.master) else ray.node_memory
        executors = ExecutorCaps(asked or cap_bytes, parent)
        try:
            with executors.sampled(self.settings.sample_interval_s):
                yield executors
        finally:
            with signals_held():
                executors.close()

    def _scan_cost(
        self, scenario: Scenario, plan: RunPlan, run_catalog: RunCatalog, work: Path, expected: Expectation
    ) -> dict[str, Any]:
        """What a selective read of the table costs now (harness/judge/scan_cost.py; the oracle's
        read was the full scan), in a process of its own under the run's cap. The table is as the
        write left it, or at its previous snapshot after a failed one (readable either way); the
        scan asks for the first 1% of the keys it should hold (`expected`).

        After the oracle: the verdict is on the table as the writer left it, untouched."""
        spec = ScanSpec(
            catalog=run_catalog.properties,
            table=scenario.table_identifier(run_catalog.namespace),
            keys=key_span(expected.key_ranges),
            key_columns=expected.key_columns,
            key_space=expected.key_space,
            result_path=work / "scan-result.json",
        )
        spec_path, log = work / "scan-spec.json", work / "scan.log"
        limits = self._limits(SCAN_PROGRAM, {})
        limits["timeout_s"] = worker_timeout(self.settings.worker_timeout_s, expected.rows)
        try:
            spec_path.write_text(spec.model_dump_json(indent=2))
            with self._capped(plan.cap_bytes) as cap:
                launched = launch_worker(cap, spec_path, log, **limits)
        except OSError as exc:  # a full disk: the harness's limit, the verdict already stands
            return {"scan_error": f"the harness could not run the scans: {one_line(exc)}"}
        return scan_figures(
            launched,
            read_report(spec.result_path, ScanReport),
            log,
            isolation=self.isolation if plan.cap_bytes else "none",
            timeout_s=limits["timeout_s"],
        )

    def _end(self, scenario: Scenario, writer: Engine, plan: RunPlan, worker: WorkerRun) -> WorkerEnd:
        """What came of one worker: its report, or what its scenario finds it left when it died."""
        launched = worker.launched
        assert launched is not None, "launched or raised"
        result = worker.result or scenario.report_of_death(
            worker.spec, launched.returncode, launched.oom_kills
        )
        fed = plan.sets[worker.feed.source_set].manifest.rows
        outcome = classify(
            worker.feed,
            min(fed, plan.limit_rows or fed),
            launched,
            result,
            worker.log,
            isolation=self.isolation if plan.cap_bytes else "none",
            timeout_s=worker_timeout(self.settings.worker_timeout_s, worker.rows),
            consumes_batches=writer.consumes_batches,
            fed=read_progress(worker.spec.progress_path) if worker.spec.progress_path else None,
            oom_after_feed_cause=self._known_cause(writer, result),
        )
        if refusal := format_version_refusal(plan.layout, outcome):
            outcome.status, outcome.error = "unsupported", refusal
        outcome.executors = merged_executors(worker.executors, result.executors if result is not None else [])
        if killed := executor_oom(outcome.executors):  # the cap of an executor, not the driver's
            driver = f"; the driver: {outcome.error}" if outcome.error else ""
            outcome.status, outcome.error = "oom", f"{killed}{driver}"
        return WorkerEnd(worker.feed, outcome, result, started=worker.spec.started_marker.exists())

    def _known_cause(self, writer: Engine, result: WorkerResult | None) -> str | None:
        """The writer's known cause of an OOM after the whole feed, if this run's version (as its
        worker reported it, else as this process knows it) is one it was seen in."""
        cause = writer.oom_after_feed_cause
        if cause is None or not issubclass(writer, Writer):
            return None
        ran_with = (result.versions if result is not None else None) or self._versions_of(writer)
        return cause.named() if cause.seen_in(ran_with) else None

    def _check_started(self, ends: list[WorkerEnd], cap_bytes: int | None) -> None:
        """A cap too small for a worker to start is the command's error, unless caps are being
        probed (find-cap), where it is the OOM that answers the probe."""
        killed = next((end for end in ends if end.outcome.status == "oom" and not end.started), None)
        if killed is not None and not self.starved_is_oom:
            log = Path(killed.outcome.worker_log or "")
            said = f"see {log}" if log.is_file() and log.stat().st_size else "it logged nothing"
            raise WorkerCouldNotStart(
                f"memory cap {format_size(cap_bytes)} is too small for the worker to start: the kernel "
                f"OOM-killed it while it loaded Python and its libraries, before its first write ({said})"
            )

    def _judge(
        self,
        scenario: Scenario,
        writer: Engine,
        plan: RunPlan,
        ends: list[WorkerEnd],
        run_catalog: RunCatalog,
        before: TableState,
        expected: Expectation,
    ) -> Judgement:
        """The oracle's verdict on the table against what the scenario `expected` of the run, its
        time and the harness's resident peak meanwhile."""
        error = run_error(ends)
        start = time.perf_counter()
        catalog = run_catalog.open()
        metrics: dict[str, Any] = {}
        table = None
        try:
            with measure_peak_rss() as peak:
                table = catalog.load_table(scenario.table_identifier(run_catalog.namespace))
                verdict, metrics = judge(
                    table,
                    expected=expected,
                    expected_schema=scenario.expected_schema(plan.sets),
                    error=error,
                    before=before,
                    single_commit=writer.single_commit,
                    verifier=self.verifier,
                    verifier_options=self.verifier_options,
                    outcome_checks=lambda evidence: scenario.outcome_checks(evidence, ends, plan.sets),
                    equality_reader=self.equality_reader,
                    layout=plan.layout,
                )
        except Exception as exc:  # what a writer left may break the reader too: a verdict, not a crash
            # A disk that cannot take the harness's own files (a verifier's spec): not the table's fault.
            if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
                raise RunFailed(f"the harness could not judge the table: {one_line(exc)}") from None
            if where := harness_fault(exc):  # the oracle's own bug is never the writer's FAIL
                raise RunFailed(f"the harness failed judging the table ({where}): {one_line(exc)}") from None
            verdict = unreadable_verdict(error, one_line(exc))
            metrics = left_behind(table) if table is not None else {}
        finally:
            close_catalog(catalog)
        verify_s = round(time.perf_counter() - start, 3)
        return Judgement(verdict, metrics, verify_s, peak.largest, peak.bytes, peak.largest_child)

    def _release(self, run_catalog: RunCatalog, keep: bool) -> None:
        """The run's tables and files removed; a failure to is said, never lost, never fatal."""
        if (died := dead_service()) is not None:  # its catalog or store is gone with it
            warn(f"what run {run_catalog.namespace} left in {run_catalog.work} stays: {died}")
            return
        try:
            with signals_held():  # a second Ctrl-C must not leave the namespace behind
                self.stack.release(run_catalog, keep=keep)
        except Exception as exc:
            left = f"what run {run_catalog.namespace} left in {run_catalog.work}"
            warn(f"could not remove {left}: {one_line(exc)}")

    def _finish(self, record: RunRecord) -> RunRecord:
        self.store.append(record)
        return record


def _engine(plan: RunPlan) -> Engine:
    """What the run's workers run: the writer, or a maintenance phase's maintainer."""
    return get_maintainer(plan.maintainer) if plan.maintainer else get_writer(plan.writer)


def merged_executors(capped: list[ExecutorFigures], reported: list[ExecutorFigures]) -> list[ExecutorFigures]:
    """The executors as their cgroups measured them, with where each ran and its heap peak as Spark
    reported them; Spark's figures alone where no cgroup measured them (a cluster not ours)."""
    if not capped:
        return reported
    spark = {executor.name: executor for executor in reported}
    return [
        executor.model_copy(update={"host": said.host, "peak_heap_bytes": said.peak_heap_bytes})
        if (said := spark.get(executor.name))
        else executor
        for executor in capped
    ]


def left_behind(table: Table) -> dict[str, Any]:
    """The orphans of a table the oracle could load but not judge: what a failed write left is
    counted all the same (none when even its metadata cannot be walked)."""
    try:
        orphans = orphan_files(table)
    except Exception:  # the metadata itself is what broke the judgement: nothing to count by
        return {}
    return {"orphan_files": len(orphans), "orphan_bytes": sum(orphans.values())}


def services_alive() -> None:
    """RunFailed when a server of the stack has died: the rest of the matrix is recorded as that
    error at once, not after each client's minutes of retries."""
    if (died := dead_service()) is not None:
        raise RunFailed(died)


def run_error(ends: list[WorkerEnd]) -> str | None:
    """The run's error: its only worker's, or each failed one's, named."""
    if len(ends) == 1:
        return ends[0].outcome.error  # also a kill point the write never reached
    failed = [end.outcome for end in ends if end.outcome.status != "ok"]
    return "; ".join(f"worker {o.name} ({o.source_set}): {o.error}" for o in failed) or None


def build_record(
    identity: dict[str, Any],
    ends: list[WorkerEnd],
    judgement: Judgement | None,
    scan: dict[str, Any] | None = None,
    harness_error: str | None = None,
) -> RunRecord:
    """The run's record, once: its identity, its workers' figures, the oracle's findings and what
    scanning the table cost (`scan`: RunRecord fields); with `harness_error`, the harness failed
    after the workers ran (no judgement): an error with their figures kept."""
    outcomes = [end.outcome for end in ends]
    figures = worker_figures(outcomes[0]) if len(outcomes) == 1 else combined_figures(outcomes)
    if not figures.get("versions"):  # no worker reported: the versions this process would run
        figures.pop("versions", None)
    if judgement is None:
        error = "; ".join(filter(None, [run_error(ends), harness_error]))
        return RunRecord(**{**identity, **figures, "status": "error", "error": error})
    known = {name: value for name, value in judgement.metrics.items() if name in RunRecord.model_fields}
    return RunRecord(
        **{**identity, **figures, **known, **(scan or {}), "error": run_error(ends)},
        verdict=judgement.verdict,
        verify_s=judgement.verify_s,
        verify_peak_rss_bytes=judgement.verify_peak_rss_bytes,
        oracle_peak_rss_bytes=judgement.oracle_peak_rss_bytes,
        verifier_peak_rss_bytes=judgement.verifier_peak_rss_bytes,
        workers=outcomes if len(outcomes) > 1 else [],
    )


# The rows a worker's time limit (worker_timeout_s) is for: a worker fed more gets as much more.
TIMEOUT_ROWS = 1_000_000


def worker_timeout(timeout_s: float, rows: int) -> float:
    """The time limit of a worker fed `rows`: `timeout_s` per million rows, never less than it (a
    fixed 30 minutes timed Spark out at 3M rows of `wide` on a loaded machine: the harness's limit,
    recorded as the writer's error)."""
    return timeout_s * max(1.0, rows / TIMEOUT_ROWS)


def local_source(spec: WorkerSpec) -> list[Path]:
    """The source folder a container worker must see (none: the source is on S3)."""
    return [] if on_s3(spec.source_dir) else [Path(spec.source_dir)]


def worker_figures(outcome: WorkerOutcome) -> dict[str, Any]:
    return outcome.model_dump(include=WORKER_FIGURES)


def combined_figures(outcomes: list[WorkerOutcome]) -> dict[str, Any]:
    """A concurrent run as a whole: its slowest wall time, its hungriest worker's memory, every
    failure (an OOM first)."""
    hungriest = max(outcomes, key=lambda outcome: outcome.peak_memory_bytes or 0)
    failed = [outcome for outcome in outcomes if outcome.status != "ok"]
    killed = next((outcome for outcome in outcomes if outcome.oom_limit), None)
    return {
        "box_cap_bytes": hungriest.box_cap_bytes,
        **(killed.model_dump(include=OOM_FIGURES) if killed else {}),
        "status": "oom" if any(o.status == "oom" for o in failed) else "error" if failed else "ok",
        "wall_s": max(outcome.wall_s or 0 for outcome in outcomes),
        "cpu_s": None if any(o.cpu_s is None for o in outcomes) else sum(o.cpu_s or 0 for o in outcomes),
        "write_s": max((o.write_s for o in outcomes if o.write_s is not None), default=None),
        "cap_bytes": hungriest.cap_bytes,
        "peak_memory_bytes": hungriest.peak_memory_bytes,
        "peak_rss_bytes": hungriest.peak_rss_bytes,
        "cache_at_peak_bytes": hungriest.cache_at_peak_bytes,
        "memory_timeline": hungriest.memory_timeline,
        "oom_kills": sum(outcome.oom_kills for outcome in outcomes),
        "batches": None
        if any(o.batches is None for o in outcomes)
        else sum(o.batches or 0 for o in outcomes),
        "versions": outcomes[0].versions,
        "worker_log": str(Path(outcomes[0].worker_log or "").parent.parent),  # the run's folder
    }
