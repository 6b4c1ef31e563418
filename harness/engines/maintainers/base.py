"""The one small interface of a maintenance engine: a method per step it can take (`compact`,
`expire`, `orphans`), as a writer has one per operation. A step runs in a worker of its own under
the cap, on the table a writer left, and reads no source."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pyiceberg.table import Table

from harness.engines.writers.base import (
    KnownCause,
    StepTimer,
    UnsupportedOperation,
    defines_method,
    library_versions,
)
from harness.model import EngineOptions, Maintenance


@dataclass
class MaintenanceJob:
    """What to do: `step` on `table`, in batches of `batch_rows` rows where it reads rows."""

    table: Table
    step: Maintenance
    batch_rows: int
    cap_bytes: int | None = None  # the worker's memory cap, for engines that size their buffers
    options: EngineOptions = field(default_factory=EngineOptions)


class Maintainer:
    """A maintenance engine. Subclasses in harness/engines/maintainers/ are found by name.

    It supports a step by defining the method named after it, `compact(job, timer)`,
    `expire(job, timer)` or `orphans(job, timer)`: perform it, raise on failure (the table must
    stay at its snapshot, and every file a snapshot still in the metadata needs must stay).
    Timing as a writer's: `timer.step()` around the work, `timer.commit()` around each commit.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    libraries: ClassVar[tuple[str, ...]] = ("pyiceberg", "pyarrow")
    options: ClassVar[type[EngineOptions]] = EngineOptions
    # Why a step it has no method for is missing upstream: {"orphans": "... (owner/repo#N)"}.
    lacks: ClassVar[dict[str, str]] = {}
    # As a writer's, for the runner: a maintenance step is no feed of batches, and no writer's
    # known cause of an OOM is ever put on it; what it must commit, its phase's checks say.
    consumes_batches: ClassVar[bool] = False
    oom_after_feed_cause: ClassVar[KnownCause | None] = None
    single_commit: ClassVar[bool] = False
    pyiceberg_commits: ClassVar[bool] = True  # its commits' retries are counted, as a writer's
    compaction_snapshots: ClassVar[int] = 1  # the snapshots (and commits) its `compact` makes at most

    def maintain(self, job: MaintenanceJob, timer: StepTimer) -> None:
        if not self.supports(job.step):
            raise UnsupportedOperation(f"maintainer {self.name} does not support {job.step}")
        getattr(self, str(job.step))(job, timer)

    @classmethod
    def supports(cls, step: Maintenance) -> bool:
        return defines_method(cls, Maintainer, str(step))

    @classmethod
    def unsupported_reason(cls, step: Maintenance) -> str | None:
        """None when it can take `step`, else why not (recorded as unsupported)."""
        if cls.supports(step):
            return None
        why = cls.lacks.get(str(step))
        return f"maintainer {cls.name} does not support {step}" + (f": {why}" if why else "")

    @classmethod
    def versions(cls) -> dict[str, str]:
        return library_versions(cls.libraries)
