"""daft: `read_parquet` of the source files + `DataFrame.write_iceberg` (append / overwrite).

daft reads the files itself (its native runner, several threads), writes the data files through
its own object store client (configured from the table's FileIO properties), then commits them
with one pyiceberg transaction: a fast append (a merge append when the table asks for manifest
merging); overwrite deletes every row first, in the same transaction. daft has no upsert.
daft 0.6.14 is the last release that installs beside pyarrow 26 (0.7 wants pyarrow < 26).
daft is imported only here, inside functions.
"""

from __future__ import annotations

from harness.engines.writers.base import ModeWriter, StepTimer, WriteJob, WriteMode, snapshot_split
from harness.engines.writers.source_scan import scanned


class DaftWriter(ModeWriter):
    name = "daft"
    description = "daft read_parquet + DataFrame.write_iceberg (append; replace: mode=overwrite), one commit"
    single_commit = True  # one transaction (replace: its delete and append together)
    libraries = ("daft", "pyiceberg", "pyarrow")
    consumes_batches = False  # daft reads the files itself: its steps are the write and the commit

    def write_mode(self, job: WriteJob, timer: StepTimer, mode: WriteMode) -> None:
        """The whole write as one daft call: a step until its snapshot was stamped, then the commit."""
        import daft

        frame = daft.read_parquet([str(path) for path in job.source.paths])
        if job.source.limit_rows is not None:
            frame = frame.limit(job.source.limit_rows)
        with scanned(job.source), snapshot_split(job.table, timer):
            frame.write_iceberg(job.table, mode=mode)
