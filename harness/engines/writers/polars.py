"""polars: `LazyFrame.sink_iceberg` (streaming) and `DataFrame.write_iceberg` (materialising).

Both read the source parquet files themselves (a lazy `scan_parquet` in manifest order, cut at
`limit_rows`), so their steps are phases, not batches. `polars-sink` streams the scan into data
files under the table (its own parquet writer and object store), then commits them with one
pyiceberg transaction (a fast append; replace: delete every row + append, mode="overwrite"),
tagged with a `polars.sink-uuid` snapshot property that makes a retried commit land once.
`polars-write` collects the whole source into one DataFrame and hands it to pyiceberg's
`table.append` / `table.overwrite`. Neither offers an upsert. polars is imported only here,
inside functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engines.writers.base import ModeWriter, StepTimer, WriteJob, WriteMode, snapshot_split
from harness.engines.writers.source_scan import scanned

if TYPE_CHECKING:
    import polars as pl

    from generators.source import ParquetSource

# FileIO properties polars' object store understands (the rest, e.g. a REST catalog's `uri`, it
# would pass through as unknown options).
STORAGE_PREFIXES = ("s3.", "client.", "gcs.", "adls.")


class PolarsSink(ModeWriter):
    name = "polars-sink"
    description = "polars scan_parquet + LazyFrame.sink_iceberg (streams; replace: mode=overwrite)"
    single_commit = True  # one transaction: its files as one fast append (replace: delete + append)
    libraries = ("polars", "pyiceberg", "pyarrow")
    consumes_batches = False  # polars scans the files itself: its steps are the write and the commit

    def write_mode(self, job: WriteJob, timer: StepTimer, mode: WriteMode) -> None:
        """The scan streamed into the table: a step until the commit's snapshot, then the commit."""
        frame = _scan(job.source)
        with scanned(job.source), snapshot_split(job.table, timer):
            frame.sink_iceberg(job.table, mode=mode, storage_options=storage_options(job))


class PolarsWrite(ModeWriter):
    name = "polars-write"
    description = "polars read of the whole source + DataFrame.write_iceberg (table.append / overwrite)"
    single_commit = True
    libraries = ("polars", "pyiceberg", "pyarrow")
    consumes_batches = False  # polars reads the files itself: its steps are the read and the write

    def write_mode(self, job: WriteJob, timer: StepTimer, mode: WriteMode) -> None:
        """The whole source as one DataFrame (a step), then write_iceberg (the commit: pyiceberg
        writes the data files inside the call)."""
        with scanned(job.source), timer.step():
            frame = _scan(job.source).collect()
        with timer.commit():
            frame.write_iceberg(job.table, mode=mode)


def _scan(source: ParquetSource) -> pl.LazyFrame:
    import polars as pl

    frame = pl.scan_parquet([str(path) for path in source.paths])
    return frame if source.limit_rows is None else frame.head(source.limit_rows)


def storage_options(job: WriteJob) -> dict[str, str]:
    """The table's FileIO storage properties (its S3 endpoint, region, addressing; keys only where
    the catalog vends them, else polars takes them from the AWS_* environment as pyiceberg does).
    Without them polars' object store ignores the endpoint and goes to AWS."""
    properties = job.table.io.properties
    return {key: str(value) for key, value in properties.items() if key.startswith(STORAGE_PREFIXES)}
