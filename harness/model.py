"""The contract layer: what the parts of icebench hand each other, importing nothing of the project.

Reading a results folder must not load pyiceberg, Spark or the writer registry, so the models a
results line is made of live here, below everything else (tests/test_layers.py holds it there).
"""

from __future__ import annotations

import time
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

Status = Literal["ok", "oom", "error", "unsupported"]
ErrorKind = Literal["bad_input", "memory", "write"]
# Where a fault scenario has the worker SIGKILL itself: once the first step (batch) is staged, on
# entering the first catalog commit, or once the commit that completes the operation returned.
KillPoint = Literal["data-files", "before-commit", "after-commit"]
KeyRanges = list[tuple[int, int]]


class Operation(StrEnum):
    APPEND = "append"
    REPLACE = "replace"
    UPSERT = "upsert"


class EngineOptions(BaseModel):
    """A plug-in's options (a writer's or verifier's): what its engine needs beyond the run, such
    as Spark's master. Set in the config file's `[engines.<engine>]` table; this empty model is
    the options of a plug-in that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    engine: ClassVar[str | None] = None  # the [engines.<engine>] table it is read from; None: none


class Check(BaseModel):
    """One check of the oracle on one table: what it expected, what it found, and why it failed."""

    name: str
    passed: bool
    expected: Any = None
    actual: Any = None
    reason: str | None = None
    upstream: str | None = None  # the upstream issue a known failure is, e.g. apache/iceberg-python#2467


class Verdict(BaseModel):
    passed: bool
    checks: list[Check]

    @property
    def failed(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]


class Expectation(BaseModel):
    """Table content the oracle expects: row count, content checksum and key set (inclusive ranges).
    Built by the scenarios (scenarios/base.py), which know the data sets."""

    rows: int
    checksum: str
    key_ranges: KeyRanges
    gone_key_ranges: KeyRanges = []


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
    operation: Operation
    key_columns: list[str]
    source_dir: Path
    batch_rows: int
    limit_rows: int | None = None
    cap_bytes: int | None = None
    writer_options: dict[str, Any] = {}  # the writer's engine options; the worker validates them
    started_marker: Path
    result_path: Path
    kill_at: KillPoint | None = None  # fault scenarios (crash-*): SIGKILL this process there
    kill_note_path: Path | None = None  # the KillNote goes here just before the kill
    rendezvous: Rendezvous | None = None  # concurrent scenarios: wait for the other workers first


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


class WorkerOutcome(BaseModel):
    """One of the workers of a concurrent run, each under its own cap, with its own figures."""

    name: str  # a, b, ...
    source_set: str  # the generated set it appended
    rows: int
    status: Status
    error: str | None = None
    wall_s: float | None = None
    write_s: float | None = None
    peak_memory_bytes: int | None = None
    peak_rss_bytes: int | None = None
    oom_kills: int = 0
    step_latencies_s: list[float] = []
    commit_latencies_s: list[float] = []
    commit_retries: int | None = None  # pyiceberg's retries after commit conflicts (None: not counted)
    worker_log: str | None = None


class RunRecord(BaseModel):
    """Everything measured about one scenario x writer run. Field meanings are in the README."""

    run_id: str
    scenario: str
    writer: str
    preset: str
    repeat: int = 0  # 0, 1, ... for repeated runs of one pair (matrix --repeat)
    variant: str | None = None  # e.g. "pyiceberg 0.9.1": the workers ran with that version
    stack: str
    operation: str
    status: Status
    error: str | None = None
    rows: int | None = None
    limit_rows: int | None = None  # set on the points of a scale run: a prefix of the source
    columns: int | None = None
    batch_rows: int
    batches: int | None = None
    wall_s: float | None = None
    write_s: float | None = None
    # The kernel's peak for the whole worker (memory.max_usage_in_bytes): includes page cache, so
    # at a size where files fill the cap it reads the cap for every writer.
    peak_memory_bytes: int | None = None
    # The worker's resident peak: its cgroup's anonymous memory (memory.stat total_rss, sampled)
    # or its VmHWM, whichever is larger. The figure that tells writers apart.
    peak_rss_bytes: int | None = None
    cache_at_peak_bytes: int | None = None  # page cache (memory.stat total_cache) at the kernel's peak
    memory_timeline: list[tuple[float, int, int]] = []
    step_latencies_s: list[float] = []
    commit_latencies_s: list[float] = []
    late_early_ratio: float | None = None
    snapshots_added: int | None = None
    data_files: int | None = None
    manifests: int | None = None
    metadata_files: int | None = None
    metadata_bytes: int | None = None
    orphan_files: int | None = None  # files under the table location no metadata reaches
    orphan_bytes: int | None = None
    # The current snapshot's summary after the run (operation, added/deleted/total files and records).
    snapshot_summary: dict[str, str] = {}
    verify_s: float | None = None  # the oracle's read-back and checks
    verify_peak_rss_bytes: int | None = None  # the harness process's resident peak meanwhile
    cap_bytes: int | None = None
    isolation: str
    oom_kills: int = 0
    versions: dict[str, str] = {}
    verdict: Verdict | None = None
    verified_with: str = "pyiceberg"  # engine(s) that read the table back: pyiceberg, or spark too
    started_at: str
    worker_log: str | None = None
    profile_flamegraph: str | None = None  # --profile memray: flame graph HTML at peak memory
    workers: list[WorkerOutcome] = []  # concurrent scenarios: each worker; the fields above: the whole run
