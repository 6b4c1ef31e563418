"""Maintenance with pyiceberg. Its 0.12 release expires snapshots in the metadata alone
(`table.maintenance.expire_snapshots()`, no file is deleted) and has no compaction
(apache/iceberg-python#1092) and no orphan-file removal, so icebench does the rest itself, as
Iceberg Java's actions do:

- compact: Spark's `rewrite_data_files` bin-pack by default. In each partition, the data files under
  `small_file_ratio` of the table's target size, when there are `min_input_files` of them or they
  add up to more than the target, are read a row group at a time and written again as files of
  the target size (the fan-out writer's, harness/engines/writers/fanout_files.py), in one snapshot.
  pyiceberg cannot commit a `replace` snapshot (its summaries refuse the operation: "Operation not
  implemented: replace"), so the rewrite is an `overwrite`, which the spec allows for it. A table
  with delete files is refused: the rows of their data files would need them applied.
- expire: every snapshot but the newest `retain_last` expired by pyiceberg (one commit), then the
  files that only they needed deleted.
- orphans: files under the table's location that no metadata reaches, deleted. No age limit: a
  rounds phase never runs beside a write (Iceberg Java keeps files younger than 3 days for that).

Memory: a batch, the fan-out writer's buffer, and the manifest entries of the files rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar, cast

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.table import Table

from generators.source import row_group_batches
from harness.base.layout import target_file_bytes
from harness.base.table_files import live_files, table_files, table_filesystem
from harness.engines.maintainers.base import Maintainer, MaintenanceJob
from harness.engines.writers.base import StepTimer
from harness.engines.writers.fanout_files import FanoutFiles, buffer_budget
from harness.engines.writers.pyiceberg_delete_add_files import current_names
from harness.engines.writers.staged_files import staged_files
from harness.model import EngineOptions

if TYPE_CHECKING:
    from pyiceberg.table.name_mapping import NameMapping


class PyicebergMaintenanceOptions(EngineOptions):
    engine: ClassVar[str | None] = "pyiceberg-maintenance"
    # Iceberg Java's bin-pack defaults (min-input-files, min-file-size-bytes as 75% of the target).
    min_input_files: int = Field(5, ge=2, description="small files a partition needs for a rewrite")
    small_file_ratio: float = Field(
        0.75, gt=0, le=1, description="a file under this share of the target size is small"
    )
    retain_last: int = Field(1, ge=1, description="the newest snapshots an expiry keeps")


class PyicebergMaintainer(Maintainer):
    name = "pyiceberg"
    description = "bin-pack compaction (icebench's), pyiceberg's expire_snapshots + the files freed, orphans"
    options = PyicebergMaintenanceOptions

    def compact(self, job: MaintenanceJob, timer: StepTimer) -> None:
        table = job.table
        groups = small_file_groups(table, cast(PyicebergMaintenanceOptions, job.options))
        if not groups:
            return  # nothing worth a rewrite: no snapshot, as Iceberg Java's action
        with staged_files(table) as staged:
            txn = table.transaction()
            written = FanoutFiles(txn.table_metadata, table.io, staged, buffer_budget(job.cap_bytes))
            mapping = txn.table_metadata.name_mapping()
            for data_file in (data_file for group in groups for data_file in group):
                with timer.step():
                    for batch in _table_rows(table, data_file.file_path, mapping, job.batch_rows):
                        written.add(batch)
            with timer.commit():
                added = written.close()
                with txn.update_snapshot().overwrite() as rewrite:
                    for data_file in (data_file for group in groups for data_file in group):
                        rewrite.delete_data_file(data_file)
                    for data_file in added:
                        rewrite.append_data_file(data_file)
                staged.commit(txn)

    def expire(self, job: MaintenanceJob, timer: StepTimer) -> None:
        table = job.table
        retain = cast(PyicebergMaintenanceOptions, job.options).retain_last
        newest_first = sorted(table.metadata.snapshots, key=lambda s: s.timestamp_ms, reverse=True)
        referenced = {ref.snapshot_id for ref in table.metadata.refs.values()}  # branch and tag heads stay
        expired = [s.snapshot_id for s in newest_first[retain:] if s.snapshot_id not in referenced]
        if not expired:
            return
        with timer.step():
            needed_before = set(live_files(table))
        with timer.commit():
            table.maintenance.expire_snapshots().by_ids(expired).commit()
        with timer.step():  # after the commit, as Java's: a failed commit must have freed nothing
            freed = needed_before - set(live_files(table.refresh()))
            for path in sorted(freed):
                table.io.delete(path)

    def orphans(self, job: MaintenanceJob, timer: StepTimer) -> None:
        table = job.table
        with timer.step():
            filesystem = table_filesystem(table, table.location())
            for path in sorted(table_files(table).orphans):
                filesystem.delete_file(path)


def small_file_groups(table: Table, options: PyicebergMaintenanceOptions) -> list[list[DataFile]]:
    """The current snapshot's small data files, by partition, in the partitions worth a rewrite."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    small = options.small_file_ratio * target_file_bytes(table.metadata.properties)
    by_partition: dict[tuple[int, str], list[DataFile]] = {}
    for manifest in snapshot.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            data_file = entry.data_file
            if data_file.content != DataFileContent.DATA:
                raise ValueError(
                    f"icebench's compaction rewrites tables without delete files; this one has "
                    f"{data_file.content.name.lower()} file {data_file.file_path}"
                )
            if data_file.file_size_in_bytes < small:
                by_partition.setdefault((data_file.spec_id, repr(data_file.partition)), []).append(data_file)
    target = target_file_bytes(table.metadata.properties)
    return [
        files
        for files in by_partition.values()
        if len(files) > 1
        and (len(files) >= options.min_input_files or sum(f.file_size_in_bytes for f in files) > target)
    ]


def _table_rows(
    table: Table, path: str, mapping: NameMapping | None, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """A data file's rows a row group at a time, its columns under the table's current names (by
    field id, else the name mapping); columns added since it was written are left to the fan-out
    writer, which writes them as nulls."""
    with table.io.new_input(path).open() as stream, pq.ParquetFile(stream) as parquet:
        names = current_names(parquet.schema_arrow, table.schema(), mapping)
        for batch in row_group_batches(parquet, batch_rows, columns=list(names), use_threads=True):
            renamed = [names[column] for column in batch.schema.names]
            yield pa.RecordBatch.from_arrays(batch.columns, names=renamed)
