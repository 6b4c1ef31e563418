"""Streaming input: a pa.RecordBatchReader handed to table.append / overwrite (pyiceberg 0.12+)."""

from collections.abc import Callable

import pyarrow as pa

from harness.engines.writers.base import StepTimer, WriteJob, Writer


class PyicebergReader(Writer):
    name = "pyiceberg-reader"
    description = "pa.RecordBatchReader into table.append / overwrite (one commit)"
    single_commit = True

    unpartitioned_only = (
        "pyiceberg takes a RecordBatchReader into unpartitioned tables only "
        "(NotImplementedError; apache/iceberg-python#2152)"
    )

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        _stream(job, timer, job.table.append)

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        _stream(job, timer, job.table.overwrite)


def _stream(job: WriteJob, timer: StepTimer, call: Callable[[pa.RecordBatchReader], object]) -> None:
    reader = pa.RecordBatchReader.from_batches(job.source.schema, timer.timed(job.source.batches()))
    with timer.commit():
        call(reader)
