"""Data files built per batch by pyiceberg and added with fast_append().append_data_file, one txn.

This is the strategy of the dlt streaming PR. `_dataframe_to_data_files` is private pyiceberg API;
its file names come from (write uuid, counter), so all batches must share one counter.
"""

import itertools

from pyiceberg.io.pyarrow import _dataframe_to_data_files
from pyiceberg.table import Transaction

from harness.engines.writers.base import StepTimer, WriteJob, Writer, as_table, cleared_transaction


class PyicebergFastAppend(Writer):
    name = "pyiceberg-fast-append"
    description = "_dataframe_to_data_files per batch + fast_append().append_data_file (one txn)"
    single_commit = True
    share_counter = True

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        self._fast_append(job, timer, job.table.transaction())

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        self._fast_append(job, timer, cleared_transaction(job.table, timer))

    def _fast_append(self, job: WriteJob, timer: StepTimer, txn: Transaction) -> None:
        metadata = txn.table_metadata  # read once: every access replays the staged updates
        counter = itertools.count(0)
        with txn.update_snapshot().fast_append() as fast_append:
            for batch in job.source.batches():
                with timer.step():
                    data_files = _dataframe_to_data_files(
                        table_metadata=metadata,
                        df=as_table(batch),
                        io=job.table.io,
                        write_uuid=fast_append.commit_uuid,
                        counter=counter if self.share_counter else None,
                    )
                    for data_file in data_files:
                        fast_append.append_data_file(data_file)
        with timer.commit():
            txn.commit_transaction()


class PyicebergFastAppendNaive(PyicebergFastAppend):
    name = "pyiceberg-fast-append-naive"
    description = "trap: as pyiceberg-fast-append but a fresh file counter per batch (same file names)"
    share_counter = False
