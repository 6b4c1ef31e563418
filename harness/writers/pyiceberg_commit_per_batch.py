"""One table.append / table.upsert per batch: a commit (and snapshot) for every batch."""

from harness.writers.base import Operation, StepTimer, WriteJob, Writer, as_table


class PyicebergCommitPerBatch(Writer):
    name = "pyiceberg-commit-per-batch"
    description = "table.append / table.upsert per batch (replace: overwrite with the first batch)"
    operations = frozenset(Operation)
    single_commit = False

    def write(self, job: WriteJob, timer: StepTimer) -> None:
        for index, batch in enumerate(job.source.batches()):
            with timer.step(), timer.commit():
                if job.operation is Operation.UPSERT:
                    job.table.upsert(as_table(batch), join_cols=job.key_columns)
                elif job.operation is Operation.REPLACE and index == 0:
                    job.table.overwrite(as_table(batch))
                else:
                    job.table.append(as_table(batch))
