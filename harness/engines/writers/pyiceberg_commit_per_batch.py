"""One table.append / table.upsert per batch: a commit (and snapshot) for every batch."""

from collections.abc import Callable
from functools import partial

import pyarrow as pa

from harness.engines.writers.base import StepTimer, WriteJob, Writer, as_table


class PyicebergCommitPerBatch(Writer):
    name = "pyiceberg-commit-per-batch"
    description = "table.append / table.upsert per batch (replace: overwrite with the first batch)"
    single_commit = False

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        _commit_each(job, timer, job.table.append)

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        _commit_each(job, timer, job.table.append, first=job.table.overwrite)

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        _commit_each(job, timer, partial(job.table.upsert, join_cols=job.key_columns))


def _commit_each(
    job: WriteJob,
    timer: StepTimer,
    call: Callable[[pa.Table], object],
    first: Callable[[pa.Table], object] | None = None,
) -> None:
    """`call` on each batch, a commit each; `first`, when given, instead of it on the first batch."""
    for index, batch in enumerate(job.source.batches()):
        with timer.step(), timer.commit():
            (first if first is not None and index == 0 else call)(as_table(batch))
