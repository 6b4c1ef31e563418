"""The one small interface every writer backend implements."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import ClassVar

import pyarrow as pa
from pyiceberg.table import Table

from harness.model import Operation
from harness.source import ParquetSource
from harness.spark import DEFAULT_MASTER


@dataclass
class WriteJob:
    """What to do: `operation` the rows of `source` into `table` (upsert matches on `key_columns`)."""

    table: Table
    source: ParquetSource
    operation: Operation
    key_columns: list[str]
    cap_bytes: int | None = None  # the worker's memory cap, for engines that size their own heap
    spark_master: str = DEFAULT_MASTER  # Spark writers: local[*] or a cluster URL


@dataclass
class StepTimer:
    """Durations a writer reports: one step per batch staged, one entry per catalog commit."""

    steps: list[float] = field(default_factory=list)
    commits: list[float] = field(default_factory=list)

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


class Writer(ABC):
    """A write strategy. Subclasses in harness/writers/ are found by name, nothing to register."""

    name: ClassVar[str]
    description: ClassVar[str]
    operations: ClassVar[frozenset[Operation]]
    # True when the whole operation lands as one catalog commit (readers never see half of it).
    single_commit: ClassVar[bool]
    libraries: ClassVar[tuple[str, ...]] = ("pyiceberg", "pyarrow")
    # In the matrix when no writers are named (`make bench`); slow engines opt out.
    in_default_matrix: ClassVar[bool] = True
    # False for engines that read the source themselves: their steps are phases, not batches,
    # so batch counts and the late/early ratio do not apply.
    consumes_batches: ClassVar[bool] = True
    # Commits go through pyiceberg's Transaction (directly or, like dlt, underneath): the worker
    # counts pyiceberg's retries after commit conflicts. False for engines that commit on their own.
    pyiceberg_commits: ClassVar[bool] = True

    @abstractmethod
    def write(self, job: WriteJob, timer: StepTimer) -> None:
        """Perform `job`; raise on failure (the table must stay at its previous snapshot)."""

    @classmethod
    def supports(cls, operation: Operation) -> bool:
        return operation in cls.operations

    @classmethod
    def supports_catalog(cls, catalog_properties: dict[str, str]) -> str | None:
        """None when this writer can work on the run's catalog, else the reason (recorded as unsupported)."""
        return None

    @classmethod
    def versions(cls) -> dict[str, str]:
        found = {}
        for library in cls.libraries:
            try:
                found[library] = version(library)
            except PackageNotFoundError:
                found[library] = "missing"
        return found


def as_table(batch: pa.RecordBatch) -> pa.Table:
    return pa.Table.from_batches([batch])
