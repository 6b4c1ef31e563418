"""One transaction, one txn.append / txn.upsert per batch, a single commit at the end."""

from collections.abc import Callable
from functools import partial

import pyarrow as pa
from pyiceberg.table import Transaction

from harness.engines.writers.base import StepTimer, WriteJob, Writer, as_table, cleared_transaction


class PyicebergTxnBatches(Writer):
    name = "pyiceberg-txn-batches"
    description = "one transaction; txn.append / txn.upsert per batch (replace: delete + appends)"
    single_commit = True

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        txn = job.table.transaction()
        _stage_each_then_commit(job, timer, txn, txn.append)

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        txn = cleared_transaction(job.table, timer)
        _stage_each_then_commit(job, timer, txn, txn.append)

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        txn = job.table.transaction()
        _stage_each_then_commit(job, timer, txn, partial(txn.upsert, join_cols=job.key_columns))


def _stage_each_then_commit(
    job: WriteJob, timer: StepTimer, txn: Transaction, stage: Callable[[pa.Table], object]
) -> None:
    for batch in job.source.batches():
        with timer.step():
            stage(as_table(batch))
    with timer.commit():
        txn.commit_transaction()
