"""Upsert without pyiceberg's upsert: the change set written batch by batch as parquet files under
the table location, the rows it replaces deleted copy-on-write, everything in one commit.

Both writers read the change set's key columns alone first (an integer key sorted in numpy, any
other key type or several columns as one Arrow array for its hash lookup), then stage one file
per batch. They differ in how the
replaced rows go:

- `pyiceberg-delete-add-files`: `txn.delete(In(key, keys))` + `txn.add_files`; two snapshots (the
  delete's OVERWRITE, then the APPEND), one commit. pyiceberg 0.12 turns the keys into a set of
  Literal objects and binds it 7 times (~0.7 KB and ~45 s per million keys), cannot prune files
  by their bounds beyond 200 literals, and rewrites each data file that holds a key by loading it
  whole (`ArrowScan.to_table`): memory grows with the largest data file and with the key count.
- `pyiceberg-rewrite-add-files`: the rewrite done here. Files whose key bounds hold no change key
  are skipped, the key column of the others read to see whether any row goes; those files are
  streamed row group by row group, the replaced rows dropped (binary search in the sorted keys),
  the rest written to a new file. One snapshot drops the rewritten files and adds the new ones
  and the change files. Memory: a batch, the change keys (8 bytes each for an integer key, the
  keys' own size and Arrow's hash table otherwise) and the statistics of the files the commit
  adds, whatever the table's size.

Both need an unpartitioned table (add_files takes a file only if it lies in one partition) and
unique keys in the change set, the delete writer one key column (its In filter); the rewrite
writer refuses a table with delete files (merge-on-read), which its reader does not apply.
docs/writers.md: "The two bounded upserts".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.expressions import In
from pyiceberg.manifest import ManifestContent, ManifestEntryStatus
from pyiceberg.table import Table, TableProperties, Transaction
from pyiceberg.types import IcebergType, IntegerType, LongType

from generators.keys import plain
from generators.source import row_group_batches
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
    """The change set's keys, whatever their columns and types: an integer key as sorted int64 in
    numpy (8 bytes a key, no Python object per key), any other as one Arrow array that Arrow's
    hash lookup (`is_in`) probes, several columns joined into one string per key."""

    columns: tuple[str, ...]
    first_field_id: int
    first_type: IcebergType
    integers: np.ndarray | None  # sorted int64 keys, for one integer column
    values: pa.Array | None  # the keys as one array, for any other
    low: Any  # the first column's smallest and largest change key
    high: Any

    @classmethod
    def of(cls, job: WriteJob) -> ChangeKeys:
        """Checks what both writers need, then reads the key columns alone from the source."""
        if not job.table.spec().is_unpartitioned():
            raise ValueError("an upsert by add_files needs an unpartitioned table (a partition per file)")
        schema = job.table.schema()
        fields = [schema.find_field(name) for name in job.key_columns]
        keys = pa.table({f.name: pa.chunked_array(job.source.column(f.name)) for f in fields})
        return cls.of_keys(keys, fields[0].field_id, fields[0].field_type)

    @classmethod
    def of_keys(cls, keys: pa.Table, first_field_id: int, first_type: IcebergType) -> ChangeKeys:
        for name in keys.column_names:
            if nulls := keys.column(name).null_count:
                raise ValueError(f"the change set has {nulls:,} rows without a key ({name} is null)")
        integral = keys.num_columns == 1 and isinstance(first_type, IntegerType | LongType)
        integers = np.sort(keys.column(0).to_numpy().astype(np.int64)) if integral else None
        values = None if integral else _one_array(keys)
        distinct = len(np.unique(integers)) if integers is not None else pc.count_distinct(values).as_py()
        if duplicates := keys.num_rows - distinct:
            named = ", ".join(keys.column_names)
            raise ValueError(f"the change set repeats {duplicates:,} keys of {named}: no upsert executed")
        bounds = pc.min_max(plain(keys.column(0)))
        return cls(
            tuple(keys.column_names), first_field_id, first_type, integers, values,
            bounds["min"].as_py(), bounds["max"].as_py(),
        )  # fmt: skip

    @property
    def count(self) -> int:
        keys = self.integers if self.integers is not None else self.values
        return len(keys) if keys is not None else 0

    def members(self, keys: pa.Table) -> np.ndarray:
        """A boolean mask: which rows of `keys` (the key columns, by their current names) hold a
        change key (a row with a null key never does)."""
        if not self.count or not keys.num_rows:
            return np.zeros(keys.num_rows, dtype=bool)
        if self.integers is not None:
            column = keys.column(0)
            values = pc.fill_null(column, 0).to_numpy().astype(np.int64, copy=False)
            found = self.integers.take(np.searchsorted(self.integers, values), mode="clip") == values
            return found & column.is_valid().to_numpy(zero_copy_only=False)
        assert self.values is not None
        probe = _one_array(keys).cast(self.values.type)
        return pc.fill_null(pc.is_in(probe, value_set=self.values), False).to_numpy(zero_copy_only=False)

    def may_be_in(self, data_file: DataFile) -> bool:
        """False when the file's bounds of the first key column hold no change key: the file cannot
        be affected."""
        from pyiceberg.conversions import from_bytes

        lower = (data_file.lower_bounds or {}).get(self.first_field_id)
        upper = (data_file.upper_bounds or {}).get(self.first_field_id)
        if lower is None or upper is None:
            return True
        try:
            low, high = from_bytes(self.first_type, lower), from_bytes(self.first_type, upper)
            if self.integers is None:
                return bool(low <= self.high and high >= self.low)
        except (ValueError, TypeError):  # bounds written for another width or type: read it
            return True
        at = int(np.searchsorted(self.integers, low))
        return at < len(self.integers) and int(self.integers[at]) <= high


_SEPARATOR = "\x1f"  # between a composite key's columns (the ASCII unit separator)


def _one_array(keys: pa.Table) -> pa.Array:
    """The key columns as one array: the column itself, or its columns as text joined by
    _SEPARATOR (a null where any is null)."""
    if keys.num_columns == 1:
        column = plain(keys.column(0)).combine_chunks()
        return column.cast(pa.string()) if pa.types.is_large_string(column.type) else column
    texts = [keys.column(name).cast(pa.string()).combine_chunks() for name in keys.column_names]
    return pc.binary_join_element_wise(*texts, _SEPARATOR)


class PyicebergDeleteAddFiles(Writer):
    name = "pyiceberg-delete-add-files"
    description = "upsert: change set as parquet files + txn.delete(In(key, keys)) + add_files, one txn"
    single_commit = True  # upserts only: append / replace would be pyiceberg-add-files
    one_key_column = True  # txn.delete(In(key, values)) matches one column

    unpartitioned_only = (
        "an upsert by add_files needs an unpartitioned table: add_files reads a file's partition "
        "from its column bounds, and the change set's files span partitions "
        "(bucket: apache/iceberg-python#3032)"
    )

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        if self.one_key_column and len(job.key_columns) != 1:
            raise ValueError(f"txn.delete(In(...)) matches one key column, not {', '.join(job.key_columns)}")
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
        if keys.count:
            staged_before = {snapshot.snapshot_id for snapshot in txn.table_metadata.snapshots}
            values = [value for chunk in job.source.column(keys.columns[0]) for value in chunk.to_pylist()]
            txn.delete(In(keys.columns[0], values))
            staged.adopt(_data_files_added(txn, job.table.io, staged_before))
        txn.add_files(change_files, check_duplicate_files=False)


class PyicebergRewriteAddFiles(PyicebergDeleteAddFiles):
    name = "pyiceberg-rewrite-add-files"
    description = "upsert: change set as parquet files; affected files rewritten in batches; one snapshot"
    one_key_column = False

    def replace_rows(self, job: WriteJob, txn: Transaction, staged: StagedFiles, keys: ChangeKeys) -> None:
        from pyiceberg.io.pyarrow import parquet_files_to_data_files

        change_files = list(staged.paths)
        replaced: list[DataFile] = []
        rewritten: list[str] = []
        mapping = txn.table_metadata.name_mapping()
        batch_rows = job.source.batch_rows
        for data_file in _live_data_files(job.table) if keys.count else []:
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
        names = current_names(parquet.schema_arrow, table.schema(), mapping)
        in_file = {name: column for column, name in names.items()}
        if missing := [name for name in keys.columns if name not in in_file]:
            raise ValueError(f"data file {path} has no column for key {missing[0]}")
        key = [in_file[name] for name in keys.columns]

        def going(batch: pa.RecordBatch) -> np.ndarray:
            return keys.members(
                pa.table({name: batch.column(column) for name, column in zip(keys.columns, key, strict=True)})
            )

        # The key columns alone first: overlapping bounds prove nothing, and a file no change
        # touches must not be rewritten.
        gone = sum(
            int(np.count_nonzero(going(batch)))
            for batch in row_group_batches(parquet, batch_rows, columns=key)
        )
        if gone == 0:
            return None
        if gone == parquet.metadata.num_rows:
            return Rewritten(None)
        schema = pa.schema([parquet.schema_arrow.field(column).with_name(names[column]) for column in names])
        with staged.writer(schema, tag="rewrite-") as writer:
            for batch in row_group_batches(parquet, batch_rows, columns=list(names), use_threads=True):
                kept = batch.filter(pa.array(~going(batch)))
                if kept.num_rows:
                    writer.write_batch(pa.RecordBatch.from_arrays(kept.columns, schema=schema))
        return Rewritten(staged.paths[-1])


def current_names(
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
