"""The contract layer: what the parts of icebench hand each other, importing nothing of the project.

Reading a results folder must not load pyiceberg, Spark or the writer registry, so the models a
results line is made of live here, below everything else (tests/test_layers.py holds it there).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, PlainValidator, SerializerFunctionWrapHandler, field_serializer

Status = Literal["ok", "oom", "error", "unsupported"]
ErrorKind = Literal["bad_input", "memory", "write"]
# Whose memory limit an OOM kill hit: the worker's own cap, or the --harness-memory box around it.
OomLimit = Literal["worker cap", "harness box"]
# Where a fault scenario has the worker SIGKILL itself: once the first step (batch) is staged, on
# entering the first catalog commit, or once the commit that completes the operation returned.
KillPoint = Literal["data-files", "before-commit", "after-commit"]
KeyRanges = list[tuple[int, int]]
# A SIGKILLed process as its parent sees it: a process of ours (negative signal), or as a shell or a
# container reports it (128 + the signal).
SIGKILL_EXIT_CODES = (-signal.SIGKILL, 128 + signal.SIGKILL)


class Operation(StrEnum):
    APPEND = "append"
    REPLACE = "replace"
    UPSERT = "upsert"


class Maintenance(StrEnum):
    """What a maintenance phase of the rounds workload does to the table a writer left
    (harness/engines/maintainers/): the data it holds never changes."""

    COMPACT = "compact"  # small data files rewritten into files of the target size: one `replace` snapshot
    EXPIRE = "expire"  # snapshots but the newest expired, the files only they reached deleted
    ORPHANS = "orphans"  # files under the table's location that no metadata reaches, deleted


# The rounds workload's phases (harness/run/rounds.py), each its operation or maintenance step.
ROUND_PHASES: dict[str, Operation | Maintenance] = {
    "append": Operation.APPEND,
    "upsert": Operation.UPSERT,
    "replace": Operation.REPLACE,
    **{step.value: step for step in Maintenance},
}
DEFAULT_ROUND_PHASES = ("append", "upsert", "replace")


class EngineOptions(BaseModel):
    """A plug-in's options (a writer's or verifier's): what its engine needs beyond the run, such
    as Spark's master. Set in the config file's `[engines.<engine>]` table; this empty model is
    the options of a plug-in that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    engine: ClassVar[str | None] = None  # the [engines.<engine>] table it is read from; None: none


# Why a check failed: its text, or a function that makes it, called only once the check has failed
# (the text may need what only a failure has, such as the first of the missing files).
Reason = str | Callable[[], str | None]


def _told(reason: Reason) -> str | None:
    return reason if isinstance(reason, str) else reason()


class Check(BaseModel):
    """One check of the oracle on one table: what it expected, what it found, and why it failed."""

    name: str
    passed: bool
    expected: Any = None
    actual: Any = None
    reason: str | None = None
    upstream: str | None = None  # the upstream issue a known failure is, e.g. apache/iceberg-python#2467
    # The harness could not make the check (no reader of its can apply what the table holds): not
    # the writer's failure. The verdict does not pass, and the run reads "unjudged", never FAIL.
    harness_limit: bool = False

    @classmethod
    def holds(
        cls, name: str, condition: bool, reason: Reason, *, expected: Any = None, actual: Any = None
    ) -> Check:
        """Passed when `condition` holds; else failed for `reason`, made only then if a function."""
        told = None if condition else _told(reason)
        return cls(name=name, passed=condition, expected=expected, actual=actual, reason=told)

    @classmethod
    def equal(cls, name: str, expected: Any, actual: Any, reason: Reason | None = None) -> Check:
        """Passed when `actual` equals `expected`; else failed for `reason` (by default
        `expected 3, found 2`)."""
        otherwise = (lambda: f"expected {expected}, found {actual}") if reason is None else reason
        return cls.holds(name, expected == actual, otherwise, expected=expected, actual=actual)


# The engine the oracle reads every table with (harness/judge/readback.py).
ORACLE_READER = "pyiceberg"


class Verdict(BaseModel):
    passed: bool
    checks: list[Check]
    # The reader whose rows and checksum the content checks judged: the oracle's pyiceberg, or an
    # engine of --verify-with where pyiceberg cannot read the rows (equality deletes); None: none could.
    judged_by: str | None = ORACLE_READER

    @property
    def failed(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]

    @property
    def unjudged(self) -> bool:
        """It failed only where the harness could not judge: the writer is not to blame."""
        return bool(self.failed) and all(check.harness_limit for check in self.failed)


def _set_place(value: object) -> Path | str:
    """A set's folder, or its S3 prefix kept as written (a Path would fold `s3://` to `s3:/`)."""
    text = str(value)
    return text if text.startswith("s3://") else Path(text)


# Where a data set lives: a folder, or an S3 prefix (`s3://bucket/prefix`, generators/place.py).
SetPlace = Annotated[Path | str, PlainValidator(_set_place)]


class RowSource(BaseModel):
    """Generated rows the table must hold: a data set's folder, its first `rows` rows (None: all)."""

    directory: SetPlace
    rows: int | None = None


class Expectation(BaseModel):
    """Table content the oracle expects: row count, content checksum and key set (inclusive ranges).
    Built by the scenarios (scenarios/base.py), which know the data sets.

    `sources` are the rows themselves, where the scenario knows them: a later source's row replaces
    an earlier one's of the same key (an upsert's change set over its base). Read only after the
    checksum failed, to name the first differing key; None: not known, the checksum alone tells."""

    rows: int
    checksum: str
    key_ranges: KeyRanges
    gone_key_ranges: KeyRanges = []
    sources: list[RowSource] | None = None
    # The sets' key (DatasetManifest.key_columns and key_space): keys, scans, differences.
    key_columns: list[str] = ["id"]
    key_space: list[Path] = []
    # The rows the operation writes anew (an upsert's change set, an append's rows, a replacement):
    # on v3 tables each must carry a sequence number of the run (row_lineage). None: not known.
    changed_rows: int | None = None


class TableLayout(BaseModel, frozen=True):
    """How a scenario's table is laid out (docs/tables-and-caps.md): its partition fields in Iceberg's
    spelling (`day(c017_ts)`, `bucket[16](id)`), sort columns (`c001_int32`, `c002_int64 desc`)
    and table properties. Parsed and checked against the schema by harness/base/layout.py."""

    partition: tuple[str, ...] = ()
    sort: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def partitioned(self) -> bool:
        return bool(self.partition)

    @property
    def plain(self) -> bool:
        """Unpartitioned, unsorted, no properties: the table every run had before layouts."""
        return self == PLAIN_LAYOUT

    @property
    def label(self) -> str:
        """One short cell: `day(c017_ts)`, `unpartitioned sort c001_int32`, `bucket[16](id) +2 props`."""
        parts = [",".join(self.partition) or "unpartitioned"]
        if self.sort:
            parts.append("sort " + ",".join(self.sort))
        parts += [f"{key}={value}" for key, value in self.properties]
        return " ".join(parts)


PLAIN_LAYOUT = TableLayout()


class Rendezvous(BaseModel):
    """The workers of a concurrent run meet here once each has loaded the table and opened its
    source: all then write from the same snapshot, so their commits race for certain."""

    directory: Path
    name: str
    parties: int
    timeout_s: float = 120.0

    def arrive(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / self.name).touch()
        deadline = time.monotonic() + self.timeout_s
        while (arrived := len(list(self.directory.iterdir()))) < self.parties:
            if time.monotonic() > deadline:
                raise RendezvousMissed(
                    f"only {arrived} of {self.parties} concurrent workers were ready within "
                    f"{self.timeout_s:g} s (see the other workers' logs)"
                )
            time.sleep(0.01)


class RendezvousMissed(RuntimeError):
    pass


class WorkerSpec(BaseModel):
    catalog: dict[str, str]
    table: str
    writer: str
    operation: Operation | Maintenance
    key_columns: list[str]
    source_dir: SetPlace
    # A maintenance step's engine (harness/engines/maintainers/): it runs instead of the writer,
    # on the table the writer left, and reads no source.
    maintainer: str | None = None
    batch_rows: int
    limit_rows: int | None = None
    cap_bytes: int | None = None
    writer_options: dict[str, Any] = {}  # the writer's engine options; the worker validates them
    started_marker: Path
    result_path: Path
    progress_path: Path | None = None  # rows fed so far, for the CLI's bar (harness/base/progress.py)
    kill_at: KillPoint | None = None  # fault scenarios (crash-*): SIGKILL this process there
    kill_note_path: Path | None = None  # the KillNote goes here just before the kill
    rendezvous: Rendezvous | None = None  # concurrent scenarios: wait for the other workers first


ExecutorSource = Literal["cgroup", "spark-rest-api", "ray-metrics"]


class ExecutorFigures(BaseModel):
    """One executor of a cluster the driver ran on, by what measured it: `cgroup`, its own capped
    cgroup on a cluster icebench started (its kernel peak, sampled rss, OOM kills), or
    `spark-rest-api`, the driver's /applications/{id}/allexecutors on a cluster it did not start
    (peakMemoryMetrics: the process tree's rss and the JVM's heap, as the executor last reported),
    or `ray-metrics`, a node of a Ray cluster it did not start (the summed rss of the node's Ray
    processes as its metrics agent served them, sampled: harness/engines/ray_metrics.py)."""

    name: str  # "executor 0": Spark's executor id
    host: str | None = None  # where it ran (host:port)
    source: ExecutorSource
    cap_bytes: int | None = None  # its cgroup's limit as the kernel held it (None: not capped)
    peak_memory_bytes: int | None = None  # memory.max_usage_in_bytes (page cache included)
    peak_rss_bytes: int | None = None
    peak_heap_bytes: int | None = None  # Spark's JVMHeapMemory peak
    oom_kills: int = 0
    unmeasured: str | None = None  # why no figure came (a node whose metrics did not answer)


class WorkerResult(BaseModel):
    status: Literal["ok", "error"]
    error: str | None = None
    error_kind: ErrorKind | None = None
    step_latencies_s: list[float] = []
    commit_latencies_s: list[float] = []
    write_s: float | None = None
    batches: int = 0
    peak_rss_bytes: int | None = None
    versions: dict[str, str] = {}
    kill_missed: str | None = None  # the write ended without reaching the kill point asked for: why
    commit_retries: int | None = None  # pyiceberg's retries after a commit conflict (None: not its commits)
    file_io: str | None = None  # the FileIO pyiceberg wrote through, with its library's version (--fileio)
    # A cluster's executors as the driver read them from the engine's metrics (spark-rest-api, ray-metrics).
    executors: list[ExecutorFigures] = []


class KillNote(WorkerResult):
    """What the worker leaves just before it SIGKILLs itself: its one chance to tell what had landed."""

    status: Literal["ok", "error"] = "error"
    point: KillPoint
    how: str = "SIGKILL"
    rows: int  # rows of the source
    rows_fed: int = 0  # rows the source had handed to the writer
    rows_committed: int = 0  # rows the source had handed over when the writer's last commit returned
    # The snapshot the writer's table object held (pyiceberg updates it in place on each commit):
    # the last committed snapshot as the writer saw it, the one the table must be at afterwards.
    committed_snapshot_id: int | None = None

    def describe(self) -> str:
        return (
            f"killed by {self.how} at {self.point} as the scenario asked ({len(self.step_latencies_s)} "
            f"steps, {len(self.commit_latencies_s)} commits returned; {self.rows_committed:,} of "
            f"{self.rows:,} rows committed)"
        )


class Feed(BaseModel):
    """One worker of a run: the data set it is fed and the operation it performs with it."""

    name: str  # "" for a run's only worker; a, b, ... for a concurrent scenario's
    source_set: str
    operation: Operation | Maintenance


class WorkerFigures(BaseModel):
    """How a worker ended and what it measured, declared once: each WorkerOutcome has them, and a
    RunRecord has its only worker's (harness/run/runner.py copies them by these names) or, for a
    concurrent run, the whole run's."""

    status: Status
    error: str | None = None
    wall_s: float | None = None
    # User + system CPU seconds of every process in the worker's cgroup (cpuacct.usage; None where
    # the isolation accounts none). Unlike wall time, it hardly moves when other work shares the CPUs.
    cpu_s: float | None = None
    write_s: float | None = None
    # The kernel's peak for the whole worker (memory.max_usage_in_bytes): includes page cache, so
    # at a size where files fill the cap it reads the cap for every writer.
    peak_memory_bytes: int | None = None
    # The worker's resident peak: its cgroup's anonymous memory (memory.stat total_rss, sampled)
    # or its VmHWM, whichever is larger. The figure that tells writers apart.
    peak_rss_bytes: int | None = None
    cache_at_peak_bytes: int | None = None  # page cache (memory.stat total_cache) at the kernel's peak
    oom_kills: int = 0
    # The cap that applied: the worker's as the kernel held it, or the harness box's if smaller.
    cap_bytes: int | None = None
    box_cap_bytes: int | None = None  # the --harness-memory box the workers ran in (None: none)
    oom_limit: OomLimit | None = None  # whose limit an OOM kill hit: the worker's cap or the box
    box_usage_at_kill_bytes: int | None = None  # the box's usage (page cache included) at the kill
    box_rss_at_kill_bytes: int | None = None  # and its resident part: harness, oracle, worker
    batches: int | None = None
    late_early_ratio: float | None = None
    step_latencies_s: list[float] = []
    commit_latencies_s: list[float] = []
    versions: dict[str, str] = {}
    # The FileIO pyiceberg wrote through (--fileio), with its library's version; None: the writer's own IO.
    file_io: str | None = None
    worker_log: str | None = None
    # On a cluster: each executor's figures (their caps, peaks and OOM kills apart from the driver's).
    executors: list[ExecutorFigures] = []
    # (seconds, usage, rss) samples, downsampled with the peak kept: written on the record, whose
    # workers' entries (RunRecord.workers) go without theirs.
    memory_timeline: list[tuple[float, int, int]] = []


class WorkerOutcome(WorkerFigures):
    """What came of one worker, under its own cap, with its own figures. A run's only worker's
    become the record's; a concurrent run lists each (RunRecord.workers) and records their whole."""

    name: str  # a, b, ... ("" for a run's only worker)
    source_set: str  # the generated set it was fed
    operation: Operation | Maintenance | None = None  # None: written before workers said what they did
    rows: int
    commit_retries: int | None = None  # pyiceberg's retries after commit conflicts (None: not counted)


@dataclass(frozen=True)
class WorkerEnd:
    """One worker as the runner left it for the scenario to judge: what it was asked, what it
    reported (a fault scenario's note, if the scenario found one) and how it was classified."""

    feed: Feed
    outcome: WorkerOutcome
    result: WorkerResult | None = None
    started: bool = True  # it got as far as its first write (its started marker exists)


class RunRecord(WorkerFigures):
    """Everything measured about one scenario x writer run. Field meanings are in docs/results.md."""

    # The shape of this line (RESULTS_SCHEMA_VERSION below): 2 added schema_version and
    # writer_source; lines written before carry no schema_version and read as 1.
    schema_version: int = 2
    run_id: str
    scenario: str
    writer: str
    writer_source: str | None = None  # short sha256 of the writer's code (Writer.source_digest)
    writer_origin: str | None = None  # a writer from outside icebench: its file or module:class
    preset: str
    repeat: int = 0  # 0, 1, ... for repeated runs of one pair (matrix --repeat)
    variant: str | None = None  # e.g. "pyiceberg 0.9.1": the workers ran with that version
    layout: TableLayout = PLAIN_LAYOUT  # the table's partitioning, sort order and properties
    cap_probe: bool = False  # a run of matrix --find-cap's bisection (reports/caps.py reads them)
    # The rounds workload: which round (1, 2, ...) and phase of it this run was, on a table the
    # writer has written in every earlier phase. None for the matrix's runs.
    round: int | None = None
    phase: str | None = None
    maintainer: str | None = None  # a maintenance phase's engine (the writer is the table's)
    stack: str
    # The S3 prefix the source set was read from (`--source s3://...`); None: a local folder.
    source_location: str | None = None
    operation: str
    rows: int | None = None
    limit_rows: int | None = None  # set on the points of a scale run: a prefix of the source
    columns: int | None = None
    batch_rows: int
    snapshots_added: int | None = None
    snapshots_removed: int | None = None  # expired: in the metadata before the run, not after
    snapshots: int | None = None  # in the metadata after the run
    data_files: int | None = None
    data_bytes: int | None = None  # the current snapshot's data files' bytes
    # The current snapshot's data files and their bytes before the run (a maintenance step's gain).
    data_files_before: int | None = None
    data_bytes_before: int | None = None
    manifests: int | None = None
    metadata_files: int | None = None
    metadata_bytes: int | None = None
    # The current snapshot's data files by partition (harness/judge/partitions.py): how many
    # partitions, the most files one holds, and the files' median size against the target size
    # the table asks for (write.target-file-size-bytes, Iceberg's default where unset).
    partitions: int | None = None
    files_per_partition_max: int | None = None
    data_file_median_bytes: int | None = None
    target_file_bytes: int | None = None
    orphan_files: int | None = None  # files under the table location no metadata reaches
    orphan_bytes: int | None = None
    # The current snapshot's summary after the run (operation, added/deleted/total files and records).
    snapshot_summary: dict[str, str] = {}
    verify_s: float | None = None  # the oracle's read-back and checks
    # The judging side's resident peak meanwhile: the largest of the oracle's (the harness process)
    # and a verifier's child process's, each recorded below; all run under the oracle's cap.
    verify_peak_rss_bytes: int | None = None
    oracle_peak_rss_bytes: int | None = None
    verifier_peak_rss_bytes: int | None = None  # None: no verifier's child read the table
    # The downstream cost the write left (harness/judge/scan_cost.py): the full scan is the
    # oracle's read (load, plan, and its reader's own time decoding on one core); the selective
    # scan, a program of its own, reads the first 1% of the key span (a row filter that prunes
    # files and row groups by their statistics). None: not measured (--no-scan-cost).
    full_scan_s: float | None = None
    full_scan_files: int | None = None  # data files planned
    full_scan_delete_files: int | None = None  # delete files the planned files carry
    full_scan_rows: int | None = None  # rows returned
    selective_scan_s: float | None = None
    selective_scan_files: int | None = None
    selective_scan_delete_files: int | None = None
    selective_scan_rows: int | None = None
    scan_peak_rss_bytes: int | None = None  # the selective scan's resident peak, under the run's cap
    scan_error: str | None = None  # why a scan failed (e.g. equality deletes pyiceberg cannot plan)
    # What the run cost the object store, counted by the stack's S3 request counter (local-services:
    # harness/services/s3_counter.py; empty / None where nothing counts, as on the embedded stack).
    # The write: every request of the workers and of the catalog's commits, by kind (put,
    # upload_part, get, get_range, head, list, delete, ...), and the bytes sent to the store
    # ("in") and received from it ("out"); then each scan's requests and bytes received.
    object_store_requests: dict[str, int] = {}
    object_store_bytes: dict[str, int] = {}
    write_requests: int | None = None  # object_store_requests summed
    write_requests_usd: float | None = None  # their price on AWS S3 Standard (s3_counter.PRICE_URL)
    full_scan_requests: int | None = None  # the oracle's read-back (all of its judging)
    full_scan_bytes_out: int | None = None
    full_scan_requests_usd: float | None = None  # at list prices, as write_requests_usd
    selective_scan_requests: int | None = None
    selective_scan_bytes_out: int | None = None
    selective_scan_requests_usd: float | None = None
    # What owning the table the run left costs (harness/run/classify.py total_cost_figures): the
    # run's own step (write_s, write_requests_usd) and `reads` full and selective scans of its
    # table (--reads). None where a part was not measured (no scans; no counter, as on embedded).
    reads: int | None = None
    total_cost_s: float | None = None
    total_cost_usd: float | None = None
    isolation: str
    # The services the stack started (S3 server, REST catalog), outside the box: each one's
    # resident peak since it started, by name.
    service_peak_rss_bytes: dict[str, int] = {}
    services: dict[str, str] = {}  # the stack's servers by role, with versions (SeaweedFS 4.48, ...)
    catalog: str | None = None  # --catalog, where not the stack's default; part of the run key
    verdict: Verdict | None = None
    verified_with: str = "pyiceberg"  # engine(s) that read the table back: pyiceberg, or spark too
    started_at: str
    profile_flamegraph: str | None = None  # --profile memray: flame graph HTML at peak memory
    # Concurrent scenarios: each worker, without its memory timeline; the figures: the whole run's.
    workers: list[WorkerOutcome] = []

    @field_serializer("workers", mode="wrap")
    def _workers_without_timelines(
        self, workers: list[WorkerOutcome], handler: SerializerFunctionWrapHandler
    ) -> list[dict[str, Any]]:
        return [{k: v for k, v in worker.items() if k != "memory_timeline"} for worker in handler(workers)]

    @property
    def survived_cap(self) -> bool:
        """Ran to its end under its cap: neither OOM-killed nor failed (a wrong table still counts:
        the cap is about memory, the verdict about the table)."""
        return self.status == "ok"


# --- Results: their schema version, the environment, the run key and the metrics -------------

RESULTS_SCHEMA_VERSION: int = RunRecord.model_fields["schema_version"].default
UNVERSIONED_SCHEMA = 1  # a results line without schema_version was written before it existed


class Machine(BaseModel):
    platform: str
    python: str
    cpus: int | None
    memory_bytes: int


class GitState(BaseModel):
    """The icebench checkout the harness ran from: results name the code that made them."""

    commit: str
    dirty: bool  # tracked files differ from the commit

    @property
    def text(self) -> str:
        """`26d4569fbf09`, or `26d4569fbf09 (modified)`."""
        return f"{self.commit[:12]}{' (modified)' if self.dirty else ''}"


class Environment(BaseModel):
    """environment.json: where and with what a results folder was made (informative only)."""

    created_at: str | None = None
    machine: Machine | None = None
    isolation: str | None = None
    versions: dict[str, str] = {}
    settings: dict[str, Any] = {}
    icebench_git: GitState | None = None  # None: not run from a git checkout


class MachineSpeed(BaseModel, frozen=True):
    """How long the calibration workload took (harness/services/calibration.py): the machine's speed
    when a results folder was made, which the gate divides time ratios by."""

    cpu_s: float
    wall_s: float


def _size_text(size: int) -> str:
    for unit, factor in (("g", 2**30), ("m", 2**20)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


class RunKey(BaseModel, frozen=True):
    """What makes runs repeats of one another; `text` names it in baselines, compare and gate.
    `writer_source` is kept beside it, not in it: a changed writer is the same key, not comparable."""

    scenario: str
    writer: str
    preset: str
    stack: str
    isolation: str
    cap_bytes: int | None
    batch_rows: int
    limit_rows: int | None = None  # the scale axis: the points of a fit are fed this prefix
    variant: str | None = None
    layout: str | None = None  # TableLayout.label; None: the plain table
    catalog: str | None = None  # --catalog; None: the stack's own
    round: int | None = None  # the rounds workload: round and phase
    phase: str | None = None
    writer_source: str | None = None

    @property
    def batches(self) -> int | None:
        """The scale axis as a batch count (the last batch of a prefix may be short)."""
        return None if self.limit_rows is None else -(-self.limit_rows // self.batch_rows)

    def _setup_parts(self) -> list[str]:
        cap = "no cap" if self.cap_bytes is None else _size_text(self.cap_bytes)
        axis = [f"{self.batches} batches"] if self.batches is not None else []
        rounds = [f"round {self.round} {self.phase}"] if self.round is not None else []
        return [f"{self.isolation} {cap}", f"{self.batch_rows} rows/batch", *axis, *rounds]

    @property
    def setup(self) -> str:
        """Isolation, cap, batch size and the axis: how the pair ran, in one cell."""
        return ", ".join(self._setup_parts())

    @property
    def text(self) -> str:
        parts = (
            self.scenario,
            self.writer,
            self.preset,
            self.stack if self.catalog is None else f"{self.stack} {self.catalog}",
            *self._setup_parts(),
            self.variant,
            self.layout,
        )
        return KEY_SEPARATOR.join(part for part in parts if part)

    def without_axis(self) -> RunKey:
        """The key of the fit the point belongs to."""
        return self.model_copy(update={"limit_rows": None})


KEY_SEPARATOR = "|"


def run_key(record: RunRecord) -> RunKey:
    """The record's fields of the key's names, its layout as the label (None: the plain table)."""
    layout = None if record.layout.plain else record.layout.label
    return RunKey(**{**{name: getattr(record, name) for name in RunKey.model_fields}, "layout": layout})


Unit = Literal["s", "bytes", "count", "ratio", "exponent", "usd"]


class Floor(BaseModel, frozen=True):
    """A metric is gated only when the current value of `metric` reaches this: below, it is noise."""

    name: str  # its key in the [gate] table
    metric: str
    value: float
    why: str


class Gate(BaseModel, frozen=True):
    """How `icebench gate` holds a metric by default: worse than the baseline by more than `limit`
    (a ratio or a difference, as the metric compares) fails. `<kind>_ratio` / `<kind>_delta` in
    the [gate] table overrides the limit."""

    kind: str  # the regression's kind in the gate's table
    limit: float
    floor: Floor | None = None
    # A time: its ratio is divided by the machine's, the calibration's on this clock (MachineSpeed).
    clock: Literal["cpu", "wall"] | None = None


class Metric(BaseModel, frozen=True):
    """One figure icebench measures: a RunRecord field (`of="run"`) or a figure of the growth fit
    of a scale axis (`of="fit"`). Summary columns, baselines, compare, plots and the gate's
    thresholds all come from METRICS."""

    name: str
    label: str
    unit: Unit
    aggregate: Literal["median", "max"] = "max"  # over the repeats of one key: noisy times as medians
    compare: Literal["ratio", "delta"] = "ratio"  # delta where a ratio means little (exponents, 0 -> n)
    better: Literal["lower", "higher"] = "lower"
    summary: bool = True  # a column of the summary table (run metrics)
    plot: bool = False  # a panel of the report's metrics figure
    gate: Gate | None = None  # gated by default
    of: Literal["run", "fit"] = "run"

    @property
    def threshold(self) -> str | None:
        """Its limit's key in the [gate] table."""
        return None if self.gate is None else f"{self.gate.kind}_{self.compare}"

    def worse(self, change: float, limit: float) -> bool:
        """Whether a ratio or difference (current against base) is worse than `limit` allows."""
        if self.compare == "ratio":
            return change > limit if self.better == "lower" else change < 1 / limit
        return change > limit if self.better == "lower" else change < -limit


# Gates with a floor: below it (the current value of the floor's metric) the figure is noise.
_WALL_TIME = Gate(
    kind="wall_time",
    limit=1.5,
    clock="wall",
    floor=Floor(name="min_wall_s", metric="wall_s", value=1.0, why="sub-second times are start-up noise"),
)
# CPU time is the compute a run took: load from other work moves it less than wall time, but it does
# move it (a shared core's caches), and another machine's CPU moves it more: hence the calibration.
_CPU_TIME = Gate(
    kind="cpu_time",
    limit=1.5,
    clock="cpu",
    floor=Floor(name="min_cpu_s", metric="cpu_s", value=1.0, why="sub-second CPU times are start-up noise"),
)
# A full scan of `tiny` is well under a second, mostly the reader's start: gated from a second up.
_SCAN_TIME = Gate(
    kind="scan_time",
    limit=1.5,
    clock="wall",
    floor=Floor(name="min_full_scan_s", metric="full_scan_s", value=1.0, why="sub-second scans are noise"),
)
# A write or a scan makes the same requests each time it does the same work: any more is a change.
_NO_MORE_REQUESTS = Gate(kind="write_requests", limit=1.0)
_NO_MORE_SCAN_REQUESTS = Gate(kind="scan_requests", limit=1.0)
_GROWTH = Gate(
    kind="growth_exponent",
    limit=0.3,
    floor=Floor(
        name="min_scale_write_s",
        metric="longest_write_s",
        value=2.0,
        why="fits over sub-second totals are start-up noise",
    ),
)

# A metric per line. The order is the summary's and compare's column order. `peak rss` leads: it
# tells writers apart where `peak mem` (the kernel's, page cache included) reads the cap for all.
# fmt: off
METRICS: tuple[Metric, ...] = (
    Metric(name="peak_rss_bytes", label="peak rss", unit="bytes", gate=Gate(kind="peak_memory", limit=1.25)),
    Metric(name="peak_memory_bytes", label="peak mem", unit="bytes"),
    Metric(name="wall_s", label="wall s", unit="s", aggregate="median", plot=True, gate=_WALL_TIME),
    Metric(name="cpu_s", label="cpu s", unit="s", aggregate="median", gate=_CPU_TIME),
    Metric(name="write_s", label="write s", unit="s", aggregate="median"),
    Metric(name="verify_s", label="verify s", unit="s", aggregate="median", plot=True),
    Metric(name="oracle_peak_rss_bytes", label="oracle peak", unit="bytes", summary=False),
    Metric(name="batches", label="batches", unit="count"),
    Metric(name="late_early_ratio", label="late/early", unit="ratio", aggregate="median"),
    Metric(name="snapshots_added", label="snapshots", unit="count", plot=True),
    Metric(name="data_files", label="data files", unit="count", plot=True),
    Metric(name="manifests", label="manifests", unit="count", compare="delta", gate=Gate(kind="manifests", limit=0)),  # noqa: E501
    Metric(name="metadata_files", label="metadata files", unit="count"),
    Metric(name="metadata_bytes", label="metadata bytes", unit="bytes", plot=True),
    Metric(name="partitions", label="partitions", unit="count", compare="delta"),
    Metric(name="files_per_partition_max", label="files/partition", unit="count", compare="delta"),
    Metric(name="data_file_median_bytes", label="file size", unit="bytes", better="higher"),
    Metric(name="target_file_bytes", label="target size", unit="bytes", summary=False),
    Metric(name="orphan_files", label="orphans", unit="count", compare="delta", gate=Gate(kind="orphan_files", limit=0)),  # noqa: E501
    Metric(name="orphan_bytes", label="orphan bytes", unit="bytes", compare="delta", summary=False),
    Metric(name="full_scan_s", label="full scan s", unit="s", aggregate="median", gate=_SCAN_TIME),
    Metric(name="selective_scan_s", label="selective scan s", unit="s", aggregate="median", summary=False),
    Metric(name="full_scan_delete_files", label="scan delete files", unit="count", compare="delta", summary=False, gate=Gate(kind="scan_delete_files", limit=0)),  # noqa: E501
    Metric(name="selective_scan_files", label="selective scan files", unit="count", compare="delta", summary=False),  # noqa: E501
    Metric(name="scan_peak_rss_bytes", label="scan rss", unit="bytes", summary=False),
    Metric(name="write_requests", label="S3 requests", unit="count", plot=True, gate=_NO_MORE_REQUESTS),
    Metric(name="write_requests_usd", label="S3 $ (list)", unit="usd"),
    Metric(name="full_scan_requests", label="full scan requests", unit="count", summary=False),
    Metric(name="total_cost_s", label="total s", unit="s", aggregate="median", summary=False),
    Metric(name="total_cost_usd", label="total $", unit="usd", summary=False),
    Metric(name="selective_scan_requests", label="selective scan requests", unit="count", summary=False, gate=_NO_MORE_SCAN_REQUESTS),  # noqa: E501
    Metric(name="growth_exponent", label="growth exponent", unit="exponent", aggregate="median", compare="delta", of="fit", gate=_GROWTH),  # noqa: E501
    Metric(name="tail_exponent", label="tail exponent", unit="exponent", aggregate="median", compare="delta", of="fit"),  # noqa: E501
    Metric(name="longest_write_s", label="longest write s", unit="s", aggregate="median", of="fit"),
)
# fmt: on


def metrics(of: Literal["run", "fit"]) -> list[Metric]:
    """The registry's metrics of runs or of fits, read when called (tests register more)."""
    return [metric for metric in METRICS if metric.of == of]


def total_cost(steps: Sequence[float | None], read: Sequence[float | None], reads: int) -> float | None:
    """What owning a table costs: the steps that made it and `reads` times one read of it (a full
    and a selective scan), in seconds or in dollars; None where a part was not measured."""
    if any(value is None for value in (*steps, *read)):
        return None
    return sum(value or 0.0 for value in steps) + reads * sum(value or 0.0 for value in read)


def metric(name: str) -> Metric | None:
    return next((m for m in METRICS if m.name == name), None)
