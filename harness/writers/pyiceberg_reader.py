"""Streaming input: a pa.RecordBatchReader handed to table.append / overwrite (pyiceberg 0.12+)."""

import pyarrow as pa

from harness.writers.base import Operation, StepTimer, WriteJob, Writer


class PyicebergReader(Writer):
    name = "pyiceberg-reader"
    description = "pa.RecordBatchReader into table.append / overwrite (one commit)"
    operations = frozenset({Operation.APPEND, Operation.REPLACE})
    single_commit = True

    def write(self, job: WriteJob, timer: StepTimer) -> None:
        reader = pa.RecordBatchReader.from_batches(job.source.schema, timer.timed(job.source.batches()))
        with timer.commit():
            if job.operation is Operation.APPEND:
                job.table.append(reader)
            else:
                job.table.overwrite(reader)
