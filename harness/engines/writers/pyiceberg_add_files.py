"""Write each batch as a parquet file under the table location, then register them with one add_files."""

from pyiceberg.expressions import AlwaysTrue

from harness.engines.writers.base import StepTimer, WriteJob, Writer
from harness.engines.writers.staged_files import staged_files


class PyicebergAddFiles(Writer):
    name = "pyiceberg-add-files"
    description = "pq.write_table per batch + one add_files (replace: delete + add_files in one txn)"
    single_commit = True

    unpartitioned_only = (
        "add_files reads a file's partition from its column bounds, so a file must hold one "
        "partition and no transform may scramble order (bucket: apache/iceberg-python#3032); "
        "this writer's files are one per batch, across partitions (pyiceberg-fanout splits them)"
    )

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        self._add_files(job, timer, delete_first=False)

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        self._add_files(job, timer, delete_first=True)

    @staticmethod
    def _add_files(job: WriteJob, timer: StepTimer, delete_first: bool) -> None:
        with staged_files(job.table) as staged:
            staged.write_batches(job.source.batches(), timer)
            with timer.commit():
                txn = job.table.transaction()
                if delete_first:
                    txn.delete(AlwaysTrue())
                txn.add_files(staged.paths, check_duplicate_files=False)
                staged.commit(txn)
