"""Batches split by partition into open parquet files rolled at the table's target size, then one
fast_append: the bounded-memory way to append to a partitioned table with pyiceberg
(harness/engines/writers/fanout_files.py)."""

from pyiceberg.table import Transaction

from harness.engines.writers.base import StepTimer, WriteJob, Writer, cleared_transaction
from harness.engines.writers.fanout_files import FanoutFiles, buffer_budget
from harness.engines.writers.staged_files import staged_files


class PyicebergFanout(Writer):
    name = "pyiceberg-fanout"
    description = "rows split by partition into parquet files rolled at the target size + one fast_append"
    single_commit = True

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        self._fanout(job, timer, job.table.transaction())

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        self._fanout(job, timer, cleared_transaction(job.table, timer))

    @staticmethod
    def _fanout(job: WriteJob, timer: StepTimer, txn: Transaction) -> None:
        with staged_files(job.table) as staged:
            files = FanoutFiles(txn.table_metadata, job.table.io, staged, buffer_budget(job.cap_bytes))
            for batch in job.source.batches():
                with timer.step():
                    files.add(batch)
            with timer.commit():  # the buffered rows' row groups and the footers, then the commit
                data_files = files.close()
                with txn.update_snapshot().fast_append() as append:
                    for data_file in data_files:
                        append.append_data_file(data_file)
                staged.commit(txn)
