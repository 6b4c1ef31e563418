"""The one small interface every writer backend implements: a method per operation it supports."""

from __future__ import annotations

import hashlib
import inspect
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.table import Table, Transaction

from generators.source import ParquetSource
from harness.base.builds import library_version
from harness.base.errors import IcebenchError
from harness.base.registry import source_hash
from harness.model import EngineOptions, ExecutorFigures, Operation, TableLayout
from harness.services import rust_worker
from harness.services.envs import PYICEBERG_ALONE, USED_THROUGH


@dataclass
class WriteJob:
    """What to do: `operation` the rows of `source` into `table` (upsert matches on `key_columns`)."""

    table: Table
    source: ParquetSource
    operation: Operation
    key_columns: list[str]
    cap_bytes: int | None = None  # the worker's memory cap, for engines that size their own heap
    options: EngineOptions = field(default_factory=EngineOptions)  # the writer's own `options` model


@dataclass
class StepTimer:
    """Durations a writer reports: one step per batch staged, one entry per catalog commit; and on a
    cluster, its executors as the engine's metrics gave them."""

    steps: list[float] = field(default_factory=list)
    commits: list[float] = field(default_factory=list)
    executors: list[ExecutorFigures] = field(default_factory=list)

    @contextmanager
    def step(self) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.steps.append(time.perf_counter() - start)

    @contextmanager
    def commit(self) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.commits.append(time.perf_counter() - start)

    def timed(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """For writers that consume a stream: a step is the time the consumer spends on one batch."""
        for batch in batches:
            start = time.perf_counter()
            yield batch
            self.steps.append(time.perf_counter() - start)


# The version of this contract (Writer, WriteJob, StepTimer; docs/writers.md). A writer from outside
# icebench written for another version is refused by name before it runs.
WRITER_CONTRACT = 1


@dataclass(frozen=True)
class KnownCause:
    """Why a writer fails so, as seen in these releases of `library` (a PEP 440 specifier): named
    in a record only when the run's own version is one of them, never on a build or another release
    (there, the record says what was measured on it)."""

    text: str
    library: str
    releases: str

    def seen_in(self, versions: dict[str, str]) -> bool:
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version

        ran = versions.get(self.library, "missing")
        try:
            version = Version(ran)
        except InvalidVersion:
            return False
        return version.local is None and version in SpecifierSet(self.releases)  # a build (+...) is none

    def named(self) -> str:
        return f"{self.text} (seen in {self.library} {self.releases})"


def library_versions(libraries: tuple[str, ...]) -> dict[str, str]:
    """The installed versions of `libraries` and of those they use underneath (pyiceberg-core)."""
    used_through = [library for library, carrier in USED_THROUGH.items() if carrier in libraries]
    return {library: library_version(library) for library in (*libraries, *used_through)}


def defines_method(cls: type, base: type, name: str) -> bool:
    """Whether `cls` (a plug-in of `base`) defines the method `name`. Only plain methods of the
    plug-in's own classes count: nothing of `base` or object, no class methods, no private names;
    a subclass that sets the name to None drops a method it inherited."""
    if name.startswith("_"):
        return False
    for owner in cls.__mro__:
        if owner is not base and owner is not object and name in vars(owner):
            return inspect.isfunction(vars(owner)[name])
    return False


class UnsupportedOperation(IcebenchError):
    """A writer was asked for an operation it has no method for."""


class Writer:
    """A write strategy. Subclasses in harness/engines/writers/ are found by name, nothing to register.

    A writer supports an operation by defining the method named after it, `append(job, timer)`,
    `replace(job, timer)` or `upsert(job, timer)`: perform the job, raise on failure (the table
    must stay at its previous snapshot). `write` is the one place that picks the method.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    contract: ClassVar[int] = WRITER_CONTRACT  # the contract it was written for
    # Its engine's options ([engines.<engine>] of the config file), as `job.options`; empty: none.
    options: ClassVar[type[EngineOptions]] = EngineOptions
    # True when the whole operation lands as one catalog commit (readers never see half of it).
    single_commit: ClassVar[bool]
    libraries: ClassVar[tuple[str, ...]] = ("pyiceberg", "pyarrow")
    # pip requirements of a worker environment of its own, layered over the main one
    # (harness/services/envs.py), for libraries that cannot share it: a fork of pyiceberg, a client
    # pinned to an older dlt. Empty: the workers run in the main environment.
    environment: ClassVar[tuple[str, ...]] = ()
    # In the matrix when no writers are named (`make bench`); slow engines opt out.
    in_default_matrix: ClassVar[bool] = True
    # False for engines that read the source themselves: their steps are phases, not batches,
    # so batch counts and the late/early ratio do not apply.
    consumes_batches: ClassVar[bool] = True
    # Commits go through pyiceberg's Transaction (directly or, like dlt, underneath): the worker
    # counts pyiceberg's retries after commit conflicts. False for engines that commit on their own.
    pyiceberg_commits: ClassVar[bool] = True
    # The maintainer (harness/engines/maintainers/) of the rounds' maintenance phases on its table,
    # unless --maintainer names another: what a user of this writer would maintain the table with.
    maintained_with: ClassVar[str] = "pyiceberg"
    # Why this writer's memory grows once it has taken every row, in the releases it was seen in: an
    # OOM kill after the whole source was fed names it when the run's version is one of them.
    oom_after_feed_cause: ClassVar[KnownCause | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "write" in vars(cls):  # a second dispatch would bypass supports()
            raise TypeError(f"{cls.__name__}: define append/replace/upsert, not write()")

    def write(self, job: WriteJob, timer: StepTimer) -> None:
        """Perform `job` with the method of its operation."""
        if not self.supports(job.operation):
            raise UnsupportedOperation(f"{self.name} does not support {job.operation}")
        getattr(self, str(job.operation))(job, timer)

    @classmethod
    def supports(cls, operation: Operation) -> bool:
        """True when this writer defines a method named after `operation`."""
        return defines_method(cls, Writer, str(operation))

    # Why it cannot write a partitioned table, naming the upstream issue where there is one; None: it can.
    unpartitioned_only: ClassVar[str | None] = None
    # Why an operation it has no method for is missing upstream (the issue that would add it),
    # told with "does not support": {"upsert": "no row deltas yet (owner/repo#N)"}.
    lacks: ClassVar[dict[str, str]] = {}

    @classmethod
    def source_digest(cls) -> str | None:
        """What the record's `writer_source` says: results of changed code are not compared with
        the old code's. The writer module's file; a program writer's adds its program's sources."""
        return source_hash(cls)

    @classmethod
    def writes_through_pyiceberg_io(cls) -> bool:
        """Whether its files go through pyiceberg's FileIO (what --fileio changes): pyiceberg is
        its only engine."""
        return tuple(cls.libraries) == PYICEBERG_ALONE

    @classmethod
    def worker_command(cls, variant_versions: dict[str, str]) -> list[str] | None:
        """The program its workers are, when not the Python worker (harness/engines/worker.py):
        started in the cap with the spec's path after it. `variant_versions`: the library versions
        a variant asks for ({library: version})."""
        return None

    @classmethod
    def supports_layout(cls, layout: TableLayout, key_columns: list[str]) -> str | None:
        """None when this writer can write a table laid out so (partitioned, sorted; upserts match
        on `key_columns`), else why not: recorded as unsupported."""
        return cls.unpartitioned_only if layout.partitioned else None

    @classmethod
    def supports_catalog(cls, catalog_properties: dict[str, str]) -> str | None:
        """None when this writer can work on the run's catalog, else the reason (recorded as unsupported)."""
        return None

    @classmethod
    def unavailable(cls) -> str | None:
        """None when the installed libraries can do this writer's work, else why not: a library that
        ships no write path yet. Recorded as `unsupported` with that reason in every scenario, so the
        row stays visible. Asked where the workers run (in the writer's own environment if it has
        one: harness/engines/availability.py); writers that keep this default are never asked."""
        return None

    # It reads a set on S3 (`--source s3://...`) itself: its engine is handed the S3 location.
    reads_s3_itself: ClassVar[bool] = False

    @classmethod
    def s3_source_gap(cls) -> str | None:
        """None when it can be fed a set on S3, else why not: a writer fed batches is (the worker
        reads them from S3); one that reads the files itself or runs a program of its own is handed
        local paths only, unless it says it reads S3 itself. The harness's limit, said before any run."""
        own_program = cls.worker_command.__func__ is not Writer.worker_command.__func__  # type: ignore[attr-defined]
        if cls.reads_s3_itself or (cls.consumes_batches and not own_program):
            return None
        return "it reads its source files itself and icebench hands it local paths only"

    @classmethod
    def prepare_s3_source(cls) -> None:
        """Fetches what its engine needs to read a set on S3, once, before any run (never on a
        run's clock or in its cap)."""

    @classmethod
    def asks_availability(cls) -> bool:
        return cls.unavailable.__func__ is not Writer.unavailable.__func__  # type: ignore[attr-defined]

    @classmethod
    def versions(cls) -> dict[str, str]:
        """Its libraries' versions, and those of the libraries it uses through them (pyiceberg-core)."""
        return library_versions(cls.libraries)


@contextmanager
def snapshot_split(table: Table, timer: StepTimer) -> Iterator[None]:
    """Times one call of an engine that writes and commits on its own as a step (until the first
    snapshot it added was stamped) plus a commit (the rest). Iceberg stamps a snapshot once its data
    files are written and before the catalog swap; a replace's first snapshot is its delete.

    Both clocks are this machine's: the engine commits from this process.
    """
    before = {snapshot.snapshot_id for snapshot in table.metadata.snapshots}
    started = time.time()
    yield
    finished = time.time()
    added = [s.timestamp_ms for s in table.refresh().metadata.snapshots if s.snapshot_id not in before]
    stamped = min(added) / 1000 if added else finished
    stamped = min(max(stamped, started), finished)  # millisecond stamps may fall just outside
    timer.steps.append(stamped - started)
    timer.commits.append(finished - stamped)


class ProgramWriter(Writer):
    """A writer whose worker is a program of its own in another language, speaking the Python
    worker's contract (the WorkerSpec in; the result, progress and kill note out). The harness starts
    that program in the cap; nothing of the writer runs in Python. Its operations are listed here
    (tests hold the list to what the program says of itself)."""

    operations: ClassVar[tuple[Operation, ...]]
    pyiceberg_commits = False

    @classmethod
    def supports(cls, operation: Operation) -> bool:
        return operation in cls.operations


class RustWriter(ProgramWriter):
    """A writer of the Rust worker (rust/, built by harness/services/rust_worker.py): iceberg-rust's
    crates, at the version `rust/Cargo.toml` pins or the one `--iceberg-rust` asks for."""

    libraries = ("iceberg-rust",)
    lacks: ClassVar[dict[str, str]] = {
        "replace": "iceberg-rust has only fast append: no overwrite or delete-files transaction yet "
        "(apache/iceberg-rust#2186, #2269)",
        "upsert": "iceberg-rust has only fast append: no row-delta transaction yet "
        "(apache/iceberg-rust#2186, #1104)",
    }

    @classmethod
    def worker_command(cls, variant_versions: dict[str, str]) -> list[str]:
        return [str(rust_worker.worker_binary(variant_versions.get(rust_worker.LIBRARY)))]

    @classmethod
    def source_digest(cls) -> str | None:
        module = source_hash(cls)
        return hashlib.sha256(f"{module}:{rust_worker.source_digest()}".encode()).hexdigest()[:12]

    @classmethod
    def versions(cls) -> dict[str, str]:
        """The built worker's crates; the pinned iceberg-rust version until it is built."""
        try:
            reported = rust_worker.describe(rust_worker.worker_binary())["versions"]
        except IcebenchError:
            return {"iceberg-rust": rust_worker.pinned_version()}
        return {str(name): str(value) for name, value in reported.items()}


WriteMode = Literal["append", "overwrite"]


class ModeWriter(Writer):
    """An engine whose one write call takes a mode (polars, daft): append is "append", replace
    "overwrite" (delete every row, then append, in one transaction)."""

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        self.write_mode(job, timer, "append")

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        self.write_mode(job, timer, "overwrite")

    def write_mode(self, job: WriteJob, timer: StepTimer, mode: WriteMode) -> None:
        raise NotImplementedError


def as_table(batch: pa.RecordBatch) -> pa.Table:
    return pa.Table.from_batches([batch])


def cleared_transaction(table: Table, timer: StepTimer) -> Transaction:
    """A transaction that starts by deleting every row (a replace), the delete timed as a step."""
    txn = table.transaction()
    with timer.step():
        txn.delete(AlwaysTrue())
    return txn
