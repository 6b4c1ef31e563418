"""One transaction, one txn.append / txn.upsert per batch, a single commit at the end."""

from pyiceberg.expressions import AlwaysTrue

from harness.writers.base import Operation, StepTimer, WriteJob, Writer, as_table


class PyicebergTxnBatches(Writer):
    name = "pyiceberg-txn-batches"
    description = "one transaction; txn.append / txn.upsert per batch (replace: delete + appends)"
    operations = frozenset(Operation)
    single_commit = True

    def write(self, job: WriteJob, timer: StepTimer) -> None:
        txn = job.table.transaction()
        if job.operation is Operation.REPLACE:
            with timer.step():
                txn.delete(AlwaysTrue())
        for batch in job.source.batches():
            with timer.step():
                if job.operation is Operation.UPSERT:
                    txn.upsert(as_table(batch), join_cols=job.key_columns)
                else:
                    txn.append(as_table(batch))
        with timer.commit():
            txn.commit_transaction()
