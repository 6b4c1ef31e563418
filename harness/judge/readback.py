"""The oracle's read-back: the table file by file, in memory that grows neither with the table
nor with the row group size a writer chose. It is also the run's full scan: its reader's own
time is `full_scan_s` (see read_content), so the table is decoded once for both.

pyiceberg's own `scan().to_arrow_batch_reader()` materialises every file task as a list of
batches in its executor (apache/iceberg-python#3036): at 1M rows x 400 columns the reading
process grows to 4-8 GiB. Here the scan is planned, then each data file is read row group by row
group, and each row group a group of columns at a time (at most READ_BUDGET_BYTES of column
chunks, read through a buffer), each batch projected onto the table schema with pyiceberg's own
projection, so the rows are what any pyiceberg reader sees. The row hashes are chained across the
groups in per-row states, and the row group's position deletes applied once its last group came.

While reading, each file's own facts are gathered (rows before deletes; per column counts, min
and max, and the footer's column chunk bytes: harness/judge/statistics.py) and its manifest
entry's statistics held against them as its read ends, at no extra read. Then both are let go
(at 400 columns they are ~290 KiB a file: 290 MiB for 1,000 files), but the bounds of the columns
its partition spec reads and each column's null count.

Equality deletes are beyond pyiceberg 0.12 (its planning refuses them). A table that holds any is
still read, file by file with its position deletes, but without them: its file facts hold, its
rows are those of the files, and `equality_delete_files` says how many deletes were not applied,
so the oracle takes the visible rows from a reader that can apply them.

A read by whole row groups, narrowed to a key range (`scan_rows`), is the reader of the selective
scan (harness/judge/scan_cost.py): row groups whose key statistics rule the range out are
skipped, as any reader's row-group pruning would, and the visible rows are filtered.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from queue import Full, Queue
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import (
    PyArrowFileIO,
    _combine_positional_deletes,
    _get_column_projection_values,
    _read_deletes,
    _to_requested_schema,
    pyarrow_to_schema,
)
from pyiceberg.manifest import DataFile, DataFileContent, ManifestEntry, ManifestFile, clear_manifest_cache
from pyiceberg.schema import Schema, prune_columns
from pyiceberg.table import FileScanTask, Table
from pyiceberg.types import IcebergType

from generators.checksum import Checksum, RowHashes, absorb_columns, empty_row_states, finish_rows
from generators.keys import GENERATED_KEYS, KeyScan, KeySpace, key_nulls
from generators.source import row_group_batches
from harness.judge.key_tally import KeyTally
from harness.judge.nested import project_nested
from harness.judge.physical import physical_problems
from harness.judge.statistics import (
    Claims,
    Column,
    FileStats,
    footer_column_sizes,
    gather,
    primitive_columns,
    stats_problems,
)
from harness.services.own_memory import release_freed_memory

# Rows per decoded batch of the selective scan's reader: ~80 MiB at 400 mixed columns, small
# enough beside the row group buffer; kept, so that scans compare across revisions.
READ_BATCH_ROWS = 8_192
# The oracle decodes a column group at a time, so its batches can be longer: at wide 8,192 rows
# cost it 1.2x the time of 16,384 and saved no memory.
ORACLE_BATCH_ROWS = 16_384
PREFETCH_BATCHES = 2
# A row group is decoded a group of columns at a time, the group's column chunks held in at most
# this (or one column's): the writer's row group size no longer sets the oracle's memory (a
# 200,000-row group x 100 columns: Arrow's pool peak 282 MiB read whole, 73 MiB 25 columns at a time).
READ_BUDGET_BYTES = 8 << 20
READ_BUFFER_BYTES = 1 << 20  # read buffer of a column chunk: a chunk is never read whole
COLUMN_BYTES_HELD = 2 * READ_BUFFER_BYTES  # a column being read: its buffer and a decompressed page
Item = TypeVar("Item")


@dataclass(frozen=True)
class FileFacts:
    """One live data file as its manifest entry states it and as reading it showed."""

    # The manifest entry's data file; its column statistics (bounds, counts, sizes) let go once
    # held against the file (`stats_problems`).
    listed: DataFile
    rows: int  # rows in the file, before deletes
    # The columns its partition spec reads, as read (before deletes): the partition check's bounds.
    stats: FileStats = field(default_factory=FileStats)
    stats_problems: tuple[str, ...] = ()  # what its entry claims that the file contradicts

    @property
    def path(self) -> str:
        return self.listed.file_path


@dataclass
class TableContent:
    """What the table holds, as read: visible rows, their checksum and keys, and the files."""

    rows: int
    checksum: str
    tally: KeyTally  # every visible row's key number in `key_space` (generators/keys.py), tallied
    null_keys: int
    key_space: KeySpace = GENERATED_KEYS  # the space the keys were numbered in, its index built
    # Only when asked (read_content's keep_keys, once a checksum has failed: 16 bytes a row): each
    # visible row's key number and hash (generators/checksum.py), to trace the first differing key.
    keys: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    row_hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    keys_kept: bool = False
    files: list[FileFacts] = field(default_factory=list)
    manifests: int = 0
    # Live equality-delete files of the snapshot, not applied: rows, checksum and keys are the
    # files' rows, not the table's, when this is not 0.
    equality_delete_files: int = 0
    delete_files: int = 0  # distinct position-delete files the planned files carry
    # The read as a full scan: loading the table, planning it and the reader's own time (files
    # opened, deletes read and applied, columns decoded and projected), not its waits for the hashing.
    scan_s: float = 0.0
    # Data files' columns whose physical type breaks the table schema's (harness/judge/physical.py).
    physical_problems: list[str] = field(default_factory=list)
    nulls: Counter[int] = field(default_factory=Counter)  # per field id, in the files as stored

    @property
    def data_files(self) -> list[str]:
        return [facts.path for facts in self.files]

    @property
    def rows_in_files(self) -> int:
        return sum(facts.rows for facts in self.files)


def read_content(
    table: Table,
    batch_rows: int = ORACLE_BATCH_ROWS,
    keys: KeySpace = GENERATED_KEYS,
    keep_keys: bool = False,
) -> TableContent:
    """One pass over the current snapshot: checksum, keys and file facts, a row group at a time,
    each read a group of columns at a time (_column_batches). Its memory does not grow with the
    rows: the checksum is summed and the keys tallied (key_tally.py) as each row group finishes;
    `keep_keys` keeps each row's key and hash too (16 bytes a row), to trace a failed checksum.

    A reader thread decodes, single-threaded, while this one hashes and another gathers the
    statistics, at most PREFETCH_BATCHES behind (Arrow's decoding and the hash kernels release
    the GIL): the reader keeps one core, the oracle's work the other. The pass is the run's full
    scan too: it starts as a fresh reader's (the table loaded, its manifests read and planned),
    and `scan_s` is that plus the reader thread's time spent reading, never its waits for the
    oracle. Threaded decoding would finish no sooner here (both cores are busy) and would make the
    reader's time the oracle's too."""
    clear_manifest_cache()  # planned from its manifests as a fresh reader plans it
    started = time.perf_counter()
    table = table.refresh()
    snapshot = table.current_snapshot()
    manifests = snapshot.manifests(table.io) if snapshot else []
    tasks, equality_deletes = planned_tasks(table, manifests)
    reading = _Clock(time.perf_counter() - started)
    checksum, tally, null_keys = Checksum(), KeyTally(), 0
    rows = [0] * len(tasks)
    kept: list[_RowGroupContent] = []
    hashing: _RowGroupHashing | None = None
    stats = [FileStats() for _ in tasks]
    settling = _Settling(table, tasks, stats)
    projections = _Projections(table)
    pieces = _timed(_column_batches(table, tasks, batch_rows, stats, projections), reading)
    with _Behind(PREFETCH_BATCHES) as statistics:
        for piece in _prefetched(pieces, PREFETCH_BATCHES):
            settling.submit_before(piece.unit.task, statistics, rows)  # the files before it are read
            hashing = hashing or _RowGroupHashing(piece.unit, keys)
            if piece.batch is not None:
                statistics.submit(gather, stats[piece.unit.task], settling.columns, piece.batch)
                hashing.absorb(piece)
                continue
            part = hashing.finish()
            hashing = None
            checksum.add_rows(part.hashes)
            rows[part.unit.task] += part.unit.rows
            tally.add(part.keys)
            null_keys += part.null_keys
            if keep_keys:
                kept.append(part)
        settling.submit_before(len(tasks), statistics, rows)
    return TableContent(
        rows=checksum.rows,
        checksum=checksum.hex,
        tally=tally,
        null_keys=null_keys,
        keys=np.concatenate([part.keys for part in kept]) if kept else np.empty(0, np.int64),
        row_hashes=np.concatenate([part.keyed_hashes for part in kept]) if kept else np.empty(0, np.uint64),
        keys_kept=keep_keys,
        files=settling.files,
        manifests=len(manifests),
        equality_delete_files=equality_deletes.count,
        delete_files=len({delete.file_path for task in tasks for delete in task.delete_files}),
        scan_s=reading.seconds,
        key_space=keys,
        physical_problems=projections.physical,
        nulls=settling.nulls,
    )


class _Settling:
    """Each file's facts settled, in task order, once its read has ended: its entry's statistics
    held against what was read (statistics.py), then let go with all but the columns its partition
    spec reads. `settle` runs on the statistics thread, after the file's last `gather`."""

    def __init__(self, table: Table, tasks: list[FileScanTask], stats: list[FileStats]) -> None:
        self.tasks, self.stats = tasks, stats
        self.claims: list[Claims | None] = [Claims.taken_from(task.file) for task in tasks]  # packed
        release_freed_memory()  # the entries' dicts, back to the kernel before Arrow's read buffers
        self.columns: list[Column] = primitive_columns(table.metadata.schema())
        self.partition_sources = {
            spec_id: {field.source_id for field in spec.fields} for spec_id, spec in table.specs().items()
        }
        self.files: list[FileFacts] = []
        self.nulls: Counter[int] = Counter()
        self.submitted = 0  # tasks whose settling is submitted

    def submit_before(self, task: int, statistics: _Behind, rows: list[int]) -> None:
        """Submits the settling of every file before `task` not submitted yet (their rows are all
        counted: a row group's last piece comes before the next file's first)."""
        while self.submitted < task:
            statistics.submit(self.settle, self.submitted, rows[self.submitted])
            self.submitted += 1

    def settle(self, index: int, rows: int) -> None:
        listed, read = self.tasks[index].file, self.stats[index]
        claims, self.claims[index] = self.claims[index], None  # checked, then let go
        assert claims is not None
        problems = tuple(stats_problems(claims, read, rows, self.columns))
        for field_id, found in read.columns.items():
            self.nulls[field_id] += found.nulls
        sources = self.partition_sources.get(listed.spec_id, set())
        kept = FileStats({field_id: found for field_id, found in read.columns.items() if field_id in sources})
        self.stats[index] = kept
        self.files.append(FileFacts(listed, rows, kept, problems))


@dataclass
class _Clock:
    """Seconds spent on one side of a hand-over."""

    seconds: float = 0.0


def _timed(items: Iterator[Item], clock: _Clock) -> Iterator[Item]:
    """`items`, the time spent making each added to `clock` (not the time the caller holds them)."""
    while True:
        started = time.perf_counter()
        try:
            item = next(items)
        except StopIteration:
            return
        finally:
            clock.seconds += time.perf_counter() - started
        yield item


@dataclass(frozen=True)
class _RowGroup:
    """A row group of a planned task: the oracle's unit of reading."""

    task: int  # index into the planned tasks
    index: int  # the row group's number in its file
    rows: int
    # Its rows' positions in it left by the file's position deletes (None: all of them).
    kept: np.ndarray | None = None

    @property
    def visible_rows(self) -> int:
        return self.rows if self.kept is None else len(self.kept)


@dataclass(frozen=True)
class _Piece:
    """Some columns of some rows of a row group, projected onto the table schema: all of those
    rows (the file's facts) and the visible ones (the table's content)."""

    unit: _RowGroup
    offset: int  # the row group's visible row the visible batch starts at
    batch: pa.RecordBatch | None  # None: the row group's last piece has come
    visible: pa.RecordBatch | None = None  # `batch` less the position-deleted rows


@dataclass
class _RowGroupContent:
    """What one row group of a data file holds: its visible rows' hashes, their keys, its raw facts."""

    unit: _RowGroup
    hashes: RowHashes  # every visible row's
    keys: np.ndarray  # the visible non-null keys
    keyed_hashes: np.ndarray  # the hashes of the rows in `keys`, in its order
    null_keys: int


class _RowGroupHashing:
    """A row group's visible rows hashed as its column groups arrive: per-row states (40 bytes a
    row) that each piece's columns are absorbed into, in name order; finished once all have come."""

    def __init__(self, unit: _RowGroup, keys: KeySpace) -> None:
        self.unit = unit
        self.keys = keys
        self.states = empty_row_states(unit.visible_rows)
        self.key_parts: dict[str, list[pa.Array]] = {name: [] for name in keys.columns}

    def absorb(self, piece: _Piece) -> None:
        assert piece.visible is not None
        absorb_columns(self.states[:, piece.offset : piece.offset + piece.visible.num_rows], piece.visible)
        for name, parts in self.key_parts.items():
            if name in piece.visible.column_names:
                parts.append(piece.visible.column(name))

    def finish(self) -> _RowGroupContent:
        hashes = finish_rows(self.states)
        key = pa.table({name: pa.chunked_array(parts) for name, parts in self.key_parts.items() if parts})
        if key.num_columns < len(self.key_parts):  # a key column the files lack: every key is null
            key = pa.table({"absent": pa.nulls(self.unit.visible_rows)})
        valid = ~key_nulls(key, self.keys.columns)
        numbers = self.keys.numbers(key.filter(valid)) if valid.any() else np.empty(0, np.int64)
        return _RowGroupContent(
            unit=self.unit,
            hashes=hashes,
            keys=numbers,
            keyed_hashes=hashes.first_lanes[valid],
            null_keys=int(len(valid) - np.count_nonzero(valid)),
        )


def _row_groups(
    task: int, parquet: pq.ParquetFile, positions: list[pa.ChunkedArray] | None
) -> list[_RowGroup]:
    """The file's row groups, each with the positions the file's position deletes leave of it."""
    units, start = [], 0
    for row_group in range(parquet.num_row_groups):
        rows = parquet.metadata.row_group(row_group).num_rows
        kept = _combine_positional_deletes(positions, start, start + rows).to_numpy() if positions else None
        units.append(_RowGroup(task, row_group, rows, kept))
        start += rows
    return units


@contextlib.contextmanager
def _parquet(table: Table, path: str, buffer_size: int = 0) -> Iterator[pq.ParquetFile]:
    """A data file opened through the table's FileIO; with `buffer_size`, each column chunk is read
    through a buffer of that size, never whole."""
    with (
        table.io.new_input(path).open() as stream,
        pq.ParquetFile(stream, buffer_size=buffer_size) as parquet,
    ):
        yield parquet


def _column_batches(
    table: Table,
    tasks: list[FileScanTask],
    batch_rows: int,
    stats: list[FileStats],
    projections: _Projections,
) -> Iterator[_Piece]:
    """Each row group's columns, READ_BUDGET_BYTES of column chunks at a time, in name order: Arrow
    holds a page and a read buffer per column it reads, so this, not the row group size a writer
    chose, bounds the oracle's memory, with batches of `batch_rows` rows. Each file's footer
    column sizes go into its `stats` as it is opened; its position deletes are read (each delete
    file once) and applied here, as a reader applies them. The next file is read ahead while
    this one is decoded (at wide in the 4 GiB box, where the table's 3.9 GB never stay in the
    page cache, the read went 10.8 -> 8.8 s)."""
    deletes = DeleteCache(table, tasks)
    for index, task in enumerate(tasks):
        if index == 0:
            _read_ahead(task.file.file_path)
        if index + 1 < len(tasks):
            _read_ahead(tasks[index + 1].file.file_path)
        with _parquet(table, task.file.file_path, buffer_size=READ_BUFFER_BYTES) as parquet:
            reading = projections.of(task, parquet)
            stats[index].column_sizes = footer_column_sizes(parquet.metadata, reading.in_file)
            for unit in _row_groups(index, parquet, deletes.positions_for(task)):
                metadata = parquet.metadata.row_group(unit.index)
                for group in reading.groups_within(metadata, READ_BUDGET_BYTES):
                    yield from _group_pieces(parquet, unit, group, reading, batch_rows)
                yield _Piece(unit, unit.visible_rows, None)
        deletes.done(task)


def _read_ahead(path: str) -> None:
    """Asks the kernel to read a local data file into the page cache in the background."""
    scheme, _, local = PyArrowFileIO.parse_location(path)
    if scheme != "file":
        return
    with contextlib.suppress(OSError):
        descriptor = os.open(local, os.O_RDONLY)
        try:
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_WILLNEED)
        finally:
            os.close(descriptor)


def _group_pieces(
    parquet: pq.ParquetFile, unit: _RowGroup, group: _ColumnGroup, reading: _FileProjection, batch_rows: int
) -> Iterator[_Piece]:
    """One column group of a row group, batch by batch, each with its visible rows."""
    read = parquet.iter_batches(
        batch_rows, row_groups=[unit.index], columns=group.file_columns, use_threads=False
    )
    offset, visible_offset = 0, 0
    for batch in read:
        projected = reading.project(batch, group)
        visible = projected
        if unit.kept is not None:
            low, high = np.searchsorted(unit.kept, (offset, offset + batch.num_rows))
            visible = projected.take(pa.array(unit.kept[low:high] - offset))
        yield _Piece(unit, visible_offset, projected, visible)
        offset += batch.num_rows
        visible_offset += visible.num_rows


@dataclass(frozen=True)
class _ColumnGroup:
    """Table columns hashed together (consecutive in name order), and the file's columns behind them."""

    ids: frozenset[int]  # the table's top-level field ids
    requested: Schema  # the table schema pruned to the group's field ids
    file_schema: Schema  # the file's projection pruned to those of them the file has
    file_columns: list[str]

    @cached_property
    def nested(self) -> dict[int, tuple[str, IcebergType]]:
        """The struct, list and map columns the file has, by field id: their names and types in
        the file, projected by harness/judge/nested.py (pyiceberg's projection loses nulls)."""
        return {
            column.field_id: (column.name, column.field_type)
            for column in self.file_schema.fields
            if not column.field_type.is_primitive
        }


@dataclass
class _FileProjection:
    """How a data file's columns become the table's, as pyiceberg's reader does it (by field id:
    renames, promotions, columns added after the file was written), a column group at a time."""

    table_schema: Schema
    in_file: Schema  # the file's schema pruned to the table's field ids
    missing: dict[int, Any]  # values of the columns the file lacks (identity partitions)
    # Its columns whose physical type breaks the table's (harness/judge/physical.py), the first file
    # of the layout named: the projection below reads them with pyiceberg's allowances.
    physical: list[str] = field(default_factory=list)
    _groups: dict[frozenset[int], _ColumnGroup] = field(default_factory=dict)
    # Per column group and batch schema: the batch's columns that projecting it only relabels
    # (their order and the projected schema), or None where it casts or fills in a column.
    _relabels: dict[tuple[int, pa.Schema], tuple[list[int], pa.Schema] | None] = field(default_factory=dict)

    @classmethod
    def of(cls, table: Table, task: FileScanTask, parquet: pq.ParquetFile) -> _FileProjection:
        metadata = table.metadata
        schema = metadata.schema()
        file_schema = pyarrow_to_schema(
            parquet.schema_arrow,
            metadata.name_mapping(),
            downcast_ns_timestamp_to_us=True,
            format_version=metadata.format_version,
        )
        missing = _get_column_projection_values(
            task.file, schema, schema, metadata.specs().get(task.file.spec_id), file_schema.field_ids
        )
        return cls(
            schema,
            prune_columns(file_schema, _top_level_ids(schema), select_full_types=True),
            missing,
            physical_problems(task.file.file_path, schema, parquet.schema_arrow, file_schema),
        )

    @property
    def whole(self) -> _ColumnGroup:
        return self.group(frozenset(_top_level_ids(self.table_schema)))

    def groups_within(self, row_group: pq.RowGroupMetaData, budget: int) -> list[_ColumnGroup]:
        """The table's columns in name order (the checksum's chain order), cut into groups whose
        column chunks Arrow holds in at most `budget` bytes while reading (at least one column
        each): a chunk whole, or a page and the read buffer where it is larger."""
        chunks = _chunk_bytes(row_group)
        groups: list[tuple[set[int], int]] = []  # field ids, bytes held
        alone = False  # the last group is a nested column's, which no other column joins
        for column in sorted(self.table_schema.fields, key=lambda column: column.name):
            name = self._file_name(column.field_id)
            held = min(chunks.get(name, 0), COLUMN_BYTES_HELD) if name is not None else 0
            nested = name is not None and not column.field_type.is_primitive
            over = name is not None and groups and groups[-1][1] and groups[-1][1] + held > budget
            if not groups or nested or alone or over:
                groups.append((set(), 0))
            alone = nested
            ids, group_held = groups[-1]
            ids.add(column.field_id)
            groups[-1] = (ids, group_held + held)
        return [self.group(frozenset(ids)) for ids, _ in groups]

    def group(self, ids: frozenset[int]) -> _ColumnGroup:
        if ids not in self._groups:
            pruned = prune_columns(self.in_file, ids & _top_level_ids(self.in_file), select_full_types=True)
            self._groups[ids] = _ColumnGroup(
                ids=ids,
                requested=prune_columns(self.table_schema, set(ids), select_full_types=True),
                file_schema=pruned,
                file_columns=[column.name for column in pruned.columns],
            )
        return self._groups[ids]

    def _file_name(self, field_id: int) -> str | None:
        try:
            return self.in_file.find_field(field_id).name
        except ValueError:  # added after the file was written
            return None

    def project(self, batch: pa.RecordBatch, group: _ColumnGroup) -> pa.RecordBatch:
        """`batch` as pyiceberg's reader projects it, but for its struct, list and map columns
        (group.nested), which pyiceberg's projection can damage."""
        if not group.nested:
            return self._project_flat(batch, group)
        flat = self.group(group.ids.difference(group.nested))
        projected = self._project_flat(batch.select(flat.file_columns), flat) if flat.ids else None
        columns = []
        for column in group.requested.fields:
            if column.field_id in group.nested:
                name, file_type = group.nested[column.field_id]
                columns.append(project_nested(batch.column(name), file_type, column.field_type))
            else:
                assert projected is not None
                columns.append(projected.column(column.name))
        return pa.RecordBatch.from_arrays(columns, names=[column.name for column in group.requested.fields])

    def _project_flat(self, batch: pa.RecordBatch, group: _ColumnGroup) -> pa.RecordBatch:
        """pyiceberg's projection. It walks the schemas for every batch (a third of a wide scan's
        time); where its projection of the first batch of a layout only relabelled columns, later
        ones are relabelled alike without the walk."""
        key = (id(group), batch.schema)
        if (relabel := self._relabels.get(key)) is not None:
            columns, schema = relabel
            return pa.RecordBatch.from_arrays([batch.column(index) for index in columns], schema=schema)
        projected = _to_requested_schema(
            group.requested,
            group.file_schema,
            batch,
            downcast_ns_timestamp_to_us=True,
            projected_missing_fields=self.missing,
            allow_timestamp_tz_mismatch=True,
        )
        self._relabels.setdefault(key, _relabelling(batch, projected))
        return projected


def _top_level_ids(schema: Schema) -> set[int]:
    """A schema's top-level field ids: a struct, list or map column is read with all its fields."""
    return {column.field_id for column in schema.fields}


def _relabelling(batch: pa.RecordBatch, projected: pa.RecordBatch) -> tuple[list[int], pa.Schema] | None:
    """Which of `batch`'s columns `projected` holds, in its order, if each is one of them as it
    was (the same buffers, type, offset and length); None if any column was cast, sliced or made."""
    buffers = {
        tuple(buffer.address if buffer else 0 for buffer in column.buffers()): index
        for index, column in enumerate(batch.columns)
    }
    if len(buffers) != batch.num_columns:  # columns without buffers of their own: not told apart
        return None
    columns = []
    for column in projected.columns:
        found = buffers.get(tuple(buffer.address if buffer else 0 for buffer in column.buffers()))
        if found is None or not len(column):
            return None
        original = batch.column(found)
        if (original.type, original.offset, len(original)) != (column.type, column.offset, len(column)):
            return None
        columns.append(found)
    return columns, projected.schema


class _Projections:
    """One _FileProjection per layout of data file: files alike (one Arrow schema, spec and
    partition) share it, and with it pyiceberg's schema walks (~10 ms a file at 400 columns) and
    the relabellings it learnt."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._by_layout: dict[tuple[bytes, int, str], _FileProjection] = {}

    @property
    def physical(self) -> list[str]:
        """Every layout's physical type problems (one file named per layout)."""
        return [problem for projection in self._by_layout.values() for problem in projection.physical]

    def of(self, task: FileScanTask, parquet: pq.ParquetFile) -> _FileProjection:
        layout = (parquet.schema_arrow.serialize().to_pybytes(), task.file.spec_id, str(task.file.partition))
        if layout not in self._by_layout:
            self._by_layout[layout] = _FileProjection.of(self.table, task, parquet)
        return self._by_layout[layout]


def _chunk_bytes(row_group: pq.RowGroupMetaData) -> dict[str, int]:
    """Per top-level column, its column chunk's uncompressed bytes."""
    sizes: dict[str, int] = {}
    for index in range(row_group.num_columns):
        chunk = row_group.column(index)
        name = chunk.path_in_schema.split(".")[0]
        sizes[name] = sizes.get(name, 0) + chunk.total_uncompressed_size
    return sizes


def rows_with_key(table: Table, key: KeyScan) -> pa.Table:
    """The visible rows of one `key` (one, in a sound table), reading only the row groups whose
    key statistics allow it."""
    snapshot = table.current_snapshot()
    tasks, _ = planned_tasks(table, snapshot.manifests(table.io) if snapshot else [])
    batches = list(scan_rows(table, tasks, key))
    return pa.Table.from_batches(batches) if batches else table.schema().as_arrow().empty_table()


def planned_tasks(
    table: Table, manifests: list[ManifestFile]
) -> tuple[list[FileScanTask], _EqualityDeletesSetAside]:
    """The file tasks of `manifests`, their equality-delete files set aside (and counted)."""
    equality_deletes = _EqualityDeletesSetAside()
    planner = table.scan()._manifest_planner  # plan_files() with an entry filter
    return list(planner.plan_files(manifests, manifest_entry_filter=equality_deletes.keep)), equality_deletes


@dataclass
class _EqualityDeletesSetAside:
    """A manifest entry filter that keeps everything but equality-delete files, and counts those."""

    count: int = 0

    def keep(self, entry: ManifestEntry) -> bool:
        if entry.data_file.content == DataFileContent.EQUALITY_DELETES:
            self.count += 1
            return False
        return True


def scan_rows(
    table: Table, tasks: list[FileScanTask], keys: KeyScan | None = None, batch_rows: int = READ_BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """The rows a pyiceberg reader sees in the planned `tasks` (position deletes applied), whole
    row groups at a time (the selective scan's reader, harness/judge/scan_cost.py); with `keys`,
    only the rows whose key is in that range, and only the row groups whose statistics allow one."""
    yield from _prefetched(_visible_batches(table, tasks, batch_rows, keys), PREFETCH_BATCHES)


def _visible_batches(
    table: Table, tasks: list[FileScanTask], batch_rows: int, keys: KeyScan | None = None
) -> Iterator[pa.RecordBatch]:
    deletes = DeleteCache(table, tasks)
    projections = _Projections(table)
    for task in tasks:
        yield from _read_task(table, task, projections, deletes.positions_for(task), batch_rows, keys)
        deletes.done(task)


class _Behind:
    """Calls run in order by a thread of their own, at most `depth` behind their submission (the
    submitter waits past that, so the batches they hold stay bounded); leaving waits for them
    all and raises the first error."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="oracle-statistics")
        self.pending: deque[Future[Any]] = deque()

    def __enter__(self) -> _Behind:
        return self

    def submit(self, call: Callable[..., Any], *arguments: Any) -> None:
        while len(self.pending) >= self.depth:
            self.pending.popleft().result()
        self.pending.append(self.pool.submit(call, *arguments))

    def __exit__(self, *exc_info: object) -> None:
        try:
            while self.pending:
                pending = self.pending.popleft()
                if exc_info[0] is None:
                    pending.result()
                else:
                    pending.cancel()
        finally:
            self.pool.shutdown(wait=True)


def _prefetched(batches: Iterator[Item], depth: int) -> Iterator[Item]:
    """`batches`, produced by a thread at most `depth` ahead (Arrow's decoding releases the GIL)."""
    queue: Queue[Item | BaseException | None] = Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Item | BaseException | None) -> bool:
        """False once the consumer has gone (never blocks past that)."""
        while not stop.is_set():
            with contextlib.suppress(Full):
                queue.put(item, timeout=0.1)
                return True
        return False

    def produce() -> None:
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(None)
        except BaseException as exc:  # handed over: the consumer raises it
            put(exc)

    producer = threading.Thread(target=produce, name="oracle-reader", daemon=True)
    producer.start()
    try:
        while (item := queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        producer.join()


def _read_task(
    table: Table,
    task: FileScanTask,
    projections: _Projections,
    positions: list[pa.ChunkedArray] | None,
    batch_rows: int,
    keys: KeyScan | None = None,
) -> Iterator[pa.RecordBatch]:
    """Each bounded batch of one data file as a reader sees it; with `keys`, of the row groups that
    may hold such a key, the visible rows filtered to the range.

    Read with ParquetFile.iter_batches one row group at a time, not a dataset scanner, which
    pre-buffers and decodes more (a file of one 100,000-row x 400-column row group: harness peak
    1.73 GiB scanned, 1.38 GiB so). Arrow's reader still holds memory in proportion to the row
    group (~7.7 KB per row here): the writer's row group size, not the table's, bounds the scan
    (the oracle reads a group of columns at a time: _column_batches)."""
    with _parquet(table, task.file.file_path) as parquet:
        reading = projections.of(task, parquet)
        whole = reading.whole
        start = 0  # the file position of the batch's first row: position deletes count from 0
        wanted = _row_groups_to_read(parquet, _file_key_names(table, whole.file_schema, keys), keys)
        for row_group, read in enumerate(wanted):
            if not read:
                start += parquet.metadata.row_group(row_group).num_rows
                continue
            for batch in row_group_batches(
                parquet, batch_rows, whole.file_columns, use_threads=True, row_groups=[row_group]
            ):
                yield _visible(reading.project(batch, whole), positions, start, keys)
                start += batch.num_rows


def _visible(
    batch: pa.RecordBatch, positions: list[pa.ChunkedArray] | None, start: int, keys: KeyScan | None
) -> pa.RecordBatch:
    """What a reader sees of a batch that starts at file position `start`: position deletes
    applied, and with `keys` the rows of that key range alone."""
    if positions:
        batch = batch.take(_combine_positional_deletes(positions, start, start + batch.num_rows))
    if keys is None:
        return batch
    return batch.filter(keys.mask(batch))


def _file_key_names(table: Table, file_schema: Schema, keys: KeyScan | None) -> list[str | None]:
    """Each bounded key column's name in a data file (matched by field id: a file may predate a
    rename); None where the file lacks it."""
    if keys is None:
        return []
    names: list[str | None] = []
    for column in keys.columns:
        try:
            names.append(file_schema.find_field(table.schema().find_field(column).field_id).name)
        except ValueError:  # no such key column in this file
            names.append(None)
    return names


def _row_groups_to_read(
    parquet: pq.ParquetFile, key_names: list[str | None], keys: KeyScan | None
) -> list[bool]:
    """Per row group, whether it may hold a key of `keys` by its key columns' min/max statistics
    (every row group without `keys`, or where the statistics are missing or not comparable)."""
    metadata = parquet.metadata
    paths = [metadata.schema.column(index).path for index in range(metadata.num_columns)]
    wanted = [True] * metadata.num_row_groups
    if keys is None:
        return wanted
    for name, (_, low, high) in zip(key_names, keys.bounds, strict=True):
        if name not in paths:
            continue
        column = paths.index(name)
        for row_group in range(metadata.num_row_groups):
            statistics = metadata.row_group(row_group).column(column).statistics
            if statistics is None or not statistics.has_min_max:
                continue
            try:
                wanted[row_group] &= bool(statistics.min <= high and statistics.max >= low)
            except TypeError:  # statistics of a type Python cannot compare with the bounds
                continue
    return wanted


class DeleteCache:
    """Position deletes per data file, each delete file read once and dropped after its last
    task is done. (Equality deletes never get here: read_content sets them aside.)"""

    def __init__(self, table: Table, tasks: list[FileScanTask]) -> None:
        self.io = table.io
        self.uses = Counter(delete.file_path for task in tasks for delete in task.delete_files)
        self.read: dict[str, dict[str, pa.ChunkedArray]] = {}

    def positions_for(self, task: FileScanTask) -> list[pa.ChunkedArray] | None:
        positions = []
        for delete in task.delete_files:
            if delete.file_path not in self.read:
                self.read[delete.file_path] = _read_deletes(self.io, delete)
            if (found := self.read[delete.file_path].get(task.file.file_path)) is not None:
                positions.append(found)
        return positions or None

    def done(self, task: FileScanTask) -> None:
        for delete in task.delete_files:
            self.uses[delete.file_path] -= 1
            if not self.uses[delete.file_path]:
                self.read.pop(delete.file_path, None)
