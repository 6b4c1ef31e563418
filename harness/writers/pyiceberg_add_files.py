"""Write each batch as a parquet file under the table location, then register them with one add_files."""

from pyiceberg.expressions import AlwaysTrue

from harness.writers.base import Operation, StepTimer, WriteJob, Writer
from harness.writers.staged_files import staged_files


class PyicebergAddFiles(Writer):
    name = "pyiceberg-add-files"
    description = "pq.write_table per batch + one add_files (replace: delete + add_files in one txn)"
    operations = frozenset({Operation.APPEND, Operation.REPLACE})
    single_commit = True

    def write(self, job: WriteJob, timer: StepTimer) -> None:
        with staged_files(job.table) as staged:
            staged.write_batches(job.source.batches(), timer)
            with timer.commit():
                txn = job.table.transaction()
                if job.operation is Operation.REPLACE:
                    txn.delete(AlwaysTrue())
                txn.add_files(staged.paths, check_duplicate_files=False)
                staged.commit(txn)
