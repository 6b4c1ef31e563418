"""Upsert without pyiceberg's upsert: the change set written batch by batch as parquet files under
the table location, the rows it replaces deleted copy-on-write, everything in one commit.

Both writers read the change set's key column alone first (sorted, unique int64 keys in numpy),
then stage one file per batch. They differ in how the replaced rows go:

- `pyiceberg-delete-add-files`: `txn.delete(In(key, keys))` + `txn.add_files`; two snapshots (the
  delete's OVERWRITE, then the APPEND), one commit. pyiceberg 0.12 turns the keys into a set of
  Literal objects and binds it 7 times (~0.7 KB and ~45 s per million keys), cannot prune files
  by their bounds beyond 200 literals, and rewrites each data file that holds a key by loading it
  whole (`ArrowScan.to_table`): memory grows with the largest data file and with the key count.
- `pyiceberg-rewrite-add-files`: the rewrite done here. Files whose key bounds hold no change key
  are skipped, the key column of the others read to see whether any row goes; those files are
  streamed row group by row group, the replaced rows dropped (binary search in the sorted keys),
  the rest written to a new file. One snapshot drops the rewritten files and adds the new ones
  and the change files. Memory: a batch, 8 bytes per change key and the statistics of the files
  the commit adds, whatever the table's size.

Both need an unpartitioned table (add_files takes a file only if it lies in one partition), one
integer key column and unique keys in the change set; the rewrite writer refuses a table with
delete files (merge-on-read), which its reader does not apply. docs/writers.md: "The two bounded upserts".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.expressions import In
from pyiceberg.manifest import ManifestContent, ManifestEntryStatus
from pyiceberg.table import Table, TableProperties, Transaction
from pyiceberg.types import IntegerType, LongType

from generators.source import ParquetSource, row_group_batches
from harness.engines.writers.base import StepTimer, WriteJob, Writer
from harness.engines.writers.staged_files import StagedFiles, staged_files

if TYPE_CHECKING:
    from pyiceberg.io import FileIO
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema
    from pyiceberg.table.name_mapping import NameMapping

FIELD_ID = b"PARQUET:field_id"


@dataclass(frozen=True)
class ChangeKeys:
    """The change set's keys: sorted, unique, 8 bytes each (no Python object per key)."""

    column: str
    field_id: int
    key_type: IntegerType | LongType
    values: np.ndarray

    @classmethod
    def of(cls, job: WriteJob) -> ChangeKeys:
        """Checks what both writers need, then reads the key column alone from the source."""
        if len(job.key_columns) != 1:
            raise ValueError(f"an upsert by add_files matches one key column, not {job.key_columns}")
        if not job.table.spec().is_unpartitioned():
            raise ValueError("an upsert by add_files needs an unpartitioned table (a partition per file)")
        field = job.table.schema().find_field(job.key_columns[0])
        if not isinstance(field.field_type, IntegerType | LongType):
            raise ValueError(f"key column {field.name} is {field.field_type}: an integer key is needed")
        return cls(field.name, field.field_id, field.field_type, _sorted_unique_keys(job.source, field.name))

    def members(self, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """A boolean mask: which of these key values are change keys (a null key never is)."""
        if not len(self.values):
            return np.zeros(len(column), dtype=bool)
        values = pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        found = self.values.take(np.searchsorted(self.values, values), mode="clip") == values
        if column.null_count:
            found &= column.is_valid().to_numpy(zero_copy_only=False)
        return found

    def may_be_in(self, data_file: DataFile) -> bool:
        """False when the file's key bounds hold no change key: the file cannot be affected."""
        from pyiceberg.conversions import from_bytes

        lower = (data_file.lower_bounds or {}).get(self.field_id)
        upper = (data_file.upper_bounds or {}).get(self.field_id)
        if lower is None or upper is None:
            return True
        try:
            low, high = from_bytes(self.key_type, lower), from_bytes(self.key_type, upper)
        except (ValueError, TypeError):  # bounds written for another width (type promotion): read it
            return True
        at = int(np.searchsorted(self.values, low))
        return at < len(self.values) and int(self.values[at]) <= high


class PyicebergDeleteAddFiles(Writer):
    name = "pyiceberg-delete-add-files"
    description = "upsert: change set as parquet files + txn.delete(In(key, keys)) + add_files, one txn"
    single_commit = True  # upserts only: append / replace would be pyiceberg-add-files

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        keys = ChangeKeys.of(job)
        with staged_files(job.table) as staged:
            staged.write_batches(job.source.batches(), timer)
            with timer.commit():
                txn = job.table.transaction()
                self.replace_rows(job, txn, staged, keys)
                staged.commit(txn)

    def replace_rows(self, job: WriteJob, txn: Transaction, staged: StagedFiles, keys: ChangeKeys) -> None:
        """Stage in `txn`: the rows holding these keys deleted, the staged change files added."""
        change_files = list(staged.paths)
        if len(keys.values):
            staged_before = {snapshot.snapshot_id for snapshot in txn.table_metadata.snapshots}
            txn.delete(In(keys.column, keys.values.tolist()))
            staged.adopt(_data_files_added(txn, job.table.io, staged_before))
        txn.add_files(change_files, check_duplicate_files=False)


class PyicebergRewriteAddFiles(PyicebergDeleteAddFiles):
    name = "pyiceberg-rewrite-add-files"
    description = "upsert: change set as parquet files; affected files rewritten in batches; one snapshot"

    def replace_rows(self, job: WriteJob, txn: Transaction, staged: StagedFiles, keys: ChangeKeys) -> None:
        from pyiceberg.io.pyarrow import parquet_files_to_data_files

        change_files = list(staged.paths)
        replaced: list[DataFile] = []
        rewritten: list[str] = []
        mapping = txn.table_metadata.name_mapping()
        batch_rows = job.source.batch_rows
        for data_file in _live_data_files(job.table) if len(keys.values) else []:
            if not keys.may_be_in(data_file):
                continue
            rewrite = _rewrite_without(job.table, data_file.file_path, keys, mapping, staged, batch_rows)
            if rewrite is not None:
                replaced.append(data_file)
                if rewrite.path is not None:
                    rewritten.append(rewrite.path)
        if mapping is None:  # as add_files does: the files it adds carry no field ids
            schema_mapping = txn.table_metadata.schema().name_mapping.model_dump_json()
            txn.set_properties(**{TableProperties.DEFAULT_NAME_MAPPING: schema_mapping})
        added = parquet_files_to_data_files(job.table.io, txn.table_metadata, iter(rewritten + change_files))
        # One snapshot: no reader ever sees the replaced rows gone and their new versions not yet in.
        update = txn.update_snapshot()
        producer = update.overwrite() if replaced else update.fast_append()
        with producer as snapshot:
            for data_file in replaced:
                snapshot.delete_data_file(data_file)
            for data_file in added:
                snapshot.append_data_file(data_file)


def _live_data_files(table: Table) -> Iterator[DataFile]:
    """The current snapshot's data files, one manifest at a time: plan_files() would hold an entry
    for every file of the table at once (~160 KiB each with 400 columns of statistics)."""
    snapshot = table.current_snapshot()
    for manifest in snapshot.manifests(table.io) if snapshot else []:
        if manifest.content != ManifestContent.DATA:
            if manifest.has_added_files() or manifest.has_existing_files():
                raise ValueError("the table has delete files (merge-on-read), which this rewrite ignores")
            continue
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            yield entry.data_file


def _data_files_added(txn: Transaction, io: FileIO, staged_before: set[int]) -> list[str]:
    """The data files the snapshots staged in `txn` since then added: the files pyiceberg's delete
    rewrote, already written, which no snapshot holds if the commit fails."""
    added: list[str] = []
    for snapshot in txn.table_metadata.snapshots:
        if snapshot.snapshot_id in staged_before:
            continue
        for manifest in snapshot.manifests(io):
            if manifest.added_snapshot_id == snapshot.snapshot_id:
                entries = manifest.fetch_manifest_entry(io, discard_deleted=True)
                added += [e.data_file.file_path for e in entries if e.status == ManifestEntryStatus.ADDED]
    return added


@dataclass(frozen=True)
class Rewritten:
    path: str | None  # None: every row of the file was replaced, nothing to write


def _rewrite_without(
    table: Table,
    path: str,
    keys: ChangeKeys,
    mapping: NameMapping | None,
    staged: StagedFiles,
    batch_rows: int,
) -> Rewritten | None:
    """The data file at `path` minus its rows holding change keys, streamed into a new staged file
    (None: no row goes, the file stays). The new file holds the original's columns (with their
    field ids, if it had them) under the table's current names, as add_files wants them; columns
    dropped from the table since are left out, columns added since stay absent (read as nulls)."""
    with table.io.new_input(path).open() as stream, pq.ParquetFile(stream) as parquet:
        names = _current_names(parquet.schema_arrow, table.schema(), mapping)
        key = next((column for column, name in names.items() if name == keys.column), None)
        if key is None:
            raise ValueError(f"data file {path} has no column for key {keys.column}")
        # The key column alone first: overlapping bounds prove nothing, and a file no change
        # touches must not be rewritten.
        going = sum(
            int(np.count_nonzero(keys.members(batch.column(0))))
            for batch in row_group_batches(parquet, batch_rows, columns=[key])
        )
        if going == 0:
            return None
        if going == parquet.metadata.num_rows:
            return Rewritten(None)
        schema = pa.schema([parquet.schema_arrow.field(column).with_name(names[column]) for column in names])
        with staged.writer(schema, tag="rewrite-") as writer:
            for batch in row_group_batches(parquet, batch_rows, columns=list(names), use_threads=True):
                kept = batch.filter(pa.array(~keys.members(batch.column(key))))
                if kept.num_rows:
                    writer.write_batch(pa.RecordBatch.from_arrays(kept.columns, schema=schema))
        return Rewritten(staged.paths[-1])


def _current_names(
    file_schema: pa.Schema, table_schema: Schema, mapping: NameMapping | None
) -> dict[str, str]:
    """Each column of a data file that the table still has -> its current name. A column is known
    by its field id if the file has them, else by the table's name mapping (files added with
    add_files carry none; the mapping keeps the names they were written under), else by name."""
    mapped = {name: field.field_id for field in mapping or () for name in field.names}
    names: dict[str, str] = {}
    for column in file_schema:
        if column.metadata and FIELD_ID in column.metadata:
            field_id: int | None = int(column.metadata[FIELD_ID])
        else:
            field_id = mapped.get(column.name)
        current = table_schema.find_column_name(field_id) if field_id is not None else None
        if current is None and field_id is None and column.name in table_schema.column_names:
            current = column.name
        if current is not None:
            names[column.name] = current
    return names


def _sorted_unique_keys(source: ParquetSource, column: str) -> np.ndarray:
    """The source's key column as one int64 array, sorted; duplicate or null keys are an error
    (an upsert must know which row wins), raised before anything is written."""
    keys = np.empty(source.rows, dtype=np.int64)
    filled = 0
    for chunk in source.column(column):
        if chunk.null_count:
            raise ValueError(f"the change set has {chunk.null_count:,} rows without a key ({column} is null)")
        keys[filled : filled + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
        filled += len(chunk)
    keys.sort()
    if duplicates := int(np.count_nonzero(keys[1:] == keys[:-1])):
        raise ValueError(f"the change set repeats {duplicates:,} keys of {column}: no upsert executed")
    return keys
