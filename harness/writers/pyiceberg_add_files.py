"""Write each batch as a parquet file under the table location, then register them with one add_files."""

import uuid

import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue

from harness.writers.base import Operation, StepTimer, WriteJob, Writer, as_table


class PyicebergAddFiles(Writer):
    name = "pyiceberg-add-files"
    description = "pq.write_table per batch + one add_files (replace: delete + add_files in one txn)"
    operations = frozenset({Operation.APPEND, Operation.REPLACE})
    single_commit = True

    def write(self, job: WriteJob, timer: StepTimer) -> None:
        table, io = job.table, job.table.io
        locations = table.location_provider()
        prefix = f"icebench-{uuid.uuid4()}"
        paths: list[str] = []
        try:
            for index, batch in enumerate(job.source.batches()):
                with timer.step():
                    path = locations.new_data_location(f"{prefix}-{index:05d}.parquet")
                    paths.append(path)
                    with io.new_output(path).create(overwrite=False) as stream:
                        # add_files wants decimals as INT32/INT64 where the precision allows it.
                        pq.write_table(as_table(batch), stream, store_decimal_as_integer=True)
            with timer.commit():
                txn = table.transaction()
                if job.operation is Operation.REPLACE:
                    txn.delete(AlwaysTrue())
                txn.add_files(paths, check_duplicate_files=False)
                txn.commit_transaction()
        except BaseException:
            # Nothing was committed: the files we wrote are ours alone to remove.
            for path in paths:
                io.delete(path)
            raise
