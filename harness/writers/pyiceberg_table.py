"""Baseline: materialise the whole source as one Arrow table, then one pyiceberg call."""

from harness.writers.base import Operation, StepTimer, WriteJob, Writer


class PyicebergTable(Writer):
    name = "pyiceberg-table"
    description = "whole source as one pa.Table; table.append / overwrite / upsert"
    operations = frozenset(Operation)
    single_commit = True

    def write(self, job: WriteJob, timer: StepTimer) -> None:
        with timer.step():
            data = job.source.read_all()
        with timer.commit():
            if job.operation is Operation.APPEND:
                job.table.append(data)
            elif job.operation is Operation.REPLACE:
                job.table.overwrite(data)
            else:
                job.table.upsert(data, join_cols=job.key_columns)
