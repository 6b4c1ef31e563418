"""Base data sets: wide tables of random values, one parquet file per worker task."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from generators.checksum import CHECKSUM_VERSION, Checksum
from generators.manifest import (
    DatasetManifest,
    FileEntry,
    file_entry,
    part_name,
    prepare_dataset_dir,
    schema_fields,
)
from generators.parallel import Progress, report_progress, run_tasks
from generators.place import CrcOutput, Place, child, empty_folder, name_of, on_s3, place_of
from generators.presets import MAX_COLUMNS, MAX_FILES, MAX_FIRST_KEY
from generators.schema import (
    COLUMN_TYPES,
    EVOLVED_COLUMN,
    KEY_COLUMN,
    column_tag,
    recent_timestamps,
    wide_schema,
)
from harness.base.row_counts import MAX_ROWS

ROW_GROUP_VALUE_BYTES = 48 * 2**20
NULL_FRACTION = 0.1
BOOL_NULL_FRACTION = 0.02
STRING_POOL_SIZE = 4096
_POOL_SEED = 0x1CEBE4C4  # fixed: the pools are vocabularies, the per-row picks carry the seed
_TS_RANGE = tuple(int(datetime(year, 1, 1, tzinfo=UTC).timestamp()) * 10**6 for year in (2000, 2030))
_DAY_RANGE = tuple((date(year, 1, 1) - date(1970, 1, 1)).days for year in (2000, 2030))
# Every second timestamp column (c017_ts, c037_ts, ...) spans 30 days, as event times do: a `day`
# partition of it has 30 partitions where one of the others' would have 11,000.
_RECENT_TS_RANGE = tuple(int(datetime(2026, 1, day, tzinfo=UTC).timestamp()) * 10**6 for day in (1, 31))
# Bumped when what a base set holds changes: a cached set of another generation is made again.
GENERATION = 2

ColumnGenerator = Callable[[np.random.Generator, int], pa.Array]


def rows_per_group(columns: int) -> int:
    """About 48 MB of 8-byte values per row group, so memory stays flat whatever the row count."""
    return min(max(ROW_GROUP_VALUE_BYTES // (columns * 8), 1_000), 100_000)


def parquet_writer(path: Path | CrcOutput, schema: pa.Schema) -> pq.ParquetWriter:
    # Integer-backed decimals are what pyiceberg's add_files accepts.
    strings = [field.name for field in schema if pa.types.is_string(field.type)]
    return pq.ParquetWriter(
        path, schema, compression="snappy", use_dictionary=strings, store_decimal_as_integer=True
    )


def write_row_group(writer: pq.ParquetWriter, batch: pa.RecordBatch, checksum: Checksum) -> None:
    """Checksum a batch from build_batch() and write it as one row group."""
    checksum.update(batch)  # before decoding: pooled strings hash once per distinct value
    writer.write_batch(batch.cast(writer.schema), row_group_size=len(batch))
    report_progress(len(batch))


def build_batch(schema: pa.Schema, ids: np.ndarray, rng: np.random.Generator) -> pa.RecordBatch:
    """Rows with the given keys and fresh random values; string columns come dictionary-encoded
    over their pool (write_row_group decodes them)."""
    arrays = [
        pa.array(ids, pa.int64()) if name == KEY_COLUMN else _generator(name)(rng, len(ids))
        for name in schema.names
    ]
    return pa.RecordBatch.from_arrays(arrays, names=schema.names)


def _generator(name: str) -> ColumnGenerator:
    if recent_timestamps(name):
        return _RECENT_TIMESTAMPS
    return _GENERATORS[column_tag(name)]


def _valid_mask(rng: np.random.Generator, count: int, null_fraction: float) -> np.ndarray | None:
    return rng.random(count) >= null_fraction if null_fraction else None


def _bitmap(mask: np.ndarray | None) -> pa.Buffer | None:
    return None if mask is None else pa.py_buffer(np.packbits(mask, bitorder="little"))


def _from_numpy(kind: pa.DataType, count: int, data: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    return pa.Array.from_buffers(kind, count, [_bitmap(valid), pa.py_buffer(data)])


def _integers(kind: pa.DataType, low: int, high: int) -> ColumnGenerator:
    def generate(rng: np.random.Generator, count: int) -> pa.Array:
        values = rng.integers(low, high, count, dtype=f"int{kind.bit_width}")
        return _from_numpy(kind, count, values, _valid_mask(rng, count, NULL_FRACTION))

    return generate


def _floats(rng: np.random.Generator, count: int) -> pa.Array:
    values = rng.standard_normal(count) * 1e6
    return _from_numpy(pa.float64(), count, values, _valid_mask(rng, count, NULL_FRACTION))


def _booleans(rng: np.random.Generator, count: int) -> pa.Array:
    values = np.packbits(rng.random(count) < 0.5, bitorder="little")
    return _from_numpy(pa.bool_(), count, values, _valid_mask(rng, count, BOOL_NULL_FRACTION))


def _decimals(kind: pa.Decimal128Type, limit: int) -> ColumnGenerator:
    """Unscaled values in (-limit, limit) that fit int64, stored as decimal128's two LE words."""

    def generate(rng: np.random.Generator, count: int) -> pa.Array:
        unscaled = rng.integers(1 - limit, limit, count, dtype=np.int64)
        words = np.column_stack([unscaled, unscaled >> 63])  # high word: sign extension
        return _from_numpy(kind, count, words, _valid_mask(rng, count, NULL_FRACTION))

    return generate


@cache
def _string_pool(min_length: int, max_length: int) -> pa.StringArray:
    rng = np.random.default_rng([_POOL_SEED, min_length, max_length])
    lengths = rng.integers(min_length, max_length + 1, STRING_POOL_SIZE)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    chars = rng.integers(ord(" "), ord("~") + 1, offsets[-1], dtype=np.uint8)  # printable ASCII
    return pa.StringArray.from_buffers(STRING_POOL_SIZE, pa.py_buffer(offsets), pa.py_buffer(chars))


def _strings(min_length: int, max_length: int, null_fraction: float = NULL_FRACTION) -> ColumnGenerator:
    def generate(rng: np.random.Generator, count: int) -> pa.Array:
        picks = rng.integers(0, STRING_POOL_SIZE, count, dtype=np.int32)
        indices = _from_numpy(pa.int32(), count, picks, _valid_mask(rng, count, null_fraction))
        return pa.DictionaryArray.from_arrays(indices, _string_pool(min_length, max_length))

    return generate


_GENERATORS: dict[str, ColumnGenerator] = {
    "int32": _integers(COLUMN_TYPES["int32"], -(2**31), 2**31),
    "int64": _integers(COLUMN_TYPES["int64"], -(2**63), 2**63),
    "float64": _floats,
    "str": _strings(0, 16),
    "dec10": _decimals(COLUMN_TYPES["dec10"], 10**10),
    "dec38": _decimals(COLUMN_TYPES["dec38"], 2**63),
    "ts": _integers(COLUMN_TYPES["ts"], *_TS_RANGE),
    "date": _integers(COLUMN_TYPES["date"], *_DAY_RANGE),
    "bool": _booleans,
    "text": _strings(20, 200),
    EVOLVED_COLUMN: _strings(20, 200, null_fraction=0.0),
}


_RECENT_TIMESTAMPS = _integers(COLUMN_TYPES["ts"], *_RECENT_TS_RANGE)


@dataclass(frozen=True)
class BaseFile:
    """One file of a base set: its keys and its random streams ([seed, index, row group])."""

    path: Place
    index: int
    columns: int
    seed: int
    first_key: int
    rows: int


def base_batches(task: BaseFile) -> Iterator[pa.RecordBatch]:
    """The file's rows, one batch per row group (strings dictionary-encoded, see build_batch)."""
    schema = wide_schema(task.columns)
    group_rows = rows_per_group(task.columns)
    for group, start in enumerate(range(0, task.rows, group_rows)):
        rng = np.random.default_rng([task.seed, task.index, group])
        stop = min(start + group_rows, task.rows)
        yield build_batch(
            schema, np.arange(task.first_key + start, task.first_key + stop, dtype=np.int64), rng
        )


def _write_base_file(task: BaseFile) -> tuple[FileEntry, Checksum]:
    return write_set_file(task.path, wide_schema(task.columns), base_batches(task), task.rows)


def write_set_file(
    path: Place, schema: pa.Schema, batches: Iterator[pa.RecordBatch], rows: int
) -> tuple[FileEntry, Checksum]:
    """A generated set's file: each batch hashed and written as a row group (on S3, streamed
    straight to the object store, its CRC-32 taken on the way)."""
    checksum = Checksum()
    if on_s3(path):
        with CrcOutput(path) as output:
            with parquet_writer(output, schema) as writer:
                for batch in batches:
                    write_row_group(writer, batch, checksum)
            output.flush()
        return FileEntry(name=name_of(path), rows=rows, bytes=output.size, crc32=output.crc_hex()), checksum
    with parquet_writer(path, schema) as writer:
        for batch in batches:
            write_row_group(writer, batch, checksum)
    return file_entry(path, rows), checksum


def file_rows(rows: int, files: int) -> list[int]:
    """`rows` split over `files` files, the first ones a row longer where they do not divide."""
    return [rows // files + (index < rows % files) for index in range(files)]


def plan_base(
    out: Place, *, rows: int, columns: int, files: int, seed: int, first_key: int
) -> list[BaseFile]:
    """Checks the arguments, empties `out` and splits the keys into one task per file."""
    if not 1 <= files <= min(rows, MAX_FILES) or rows > MAX_ROWS or columns > MAX_COLUMNS:
        raise ValueError(
            f"need 1 <= files <= rows <= {MAX_ROWS}, files <= {MAX_FILES}, columns <= {MAX_COLUMNS}; "
            f"got files={files}, rows={rows}, columns={columns}"
        )
    if not 0 <= first_key <= MAX_FIRST_KEY:
        raise ValueError(f"first_key must be from 0 to {MAX_FIRST_KEY}, got {first_key}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    wide_schema(columns)  # validates the column count
    out = place_of(out)
    empty_folder(out) if on_s3(out) else prepare_dataset_dir(Path(out))
    tasks, next_key = [], first_key
    for index, count in enumerate(file_rows(rows, files)):
        tasks.append(BaseFile(child(out, part_name(index)), index, columns, seed, next_key, count))
        next_key += count
    return tasks


def base_manifest(
    out: Place, tasks: list[BaseFile], results: list[tuple[FileEntry, Checksum]]
) -> DatasetManifest:
    """Writes manifest.json into `out` for the files of `tasks`, given each file's entry and checksum."""
    first, rows = tasks[0], sum(task.rows for task in tasks)
    manifest = DatasetManifest(
        kind="base",
        rows=rows,
        columns=first.columns,
        seed=first.seed,
        schema_fields=schema_fields(wide_schema(first.columns)),
        files=[entry for entry, _ in results],
        checksum=sum((checksum for _, checksum in results), Checksum()).hex,
        checksum_version=CHECKSUM_VERSION,
        key_ranges=[(first.first_key, first.first_key + rows - 1)],
    )
    manifest.save(place_of(out))
    return manifest


def generate_base(
    out: Place,
    *,
    rows: int,
    columns: int,
    files: int,
    seed: int,
    first_key: int = 0,
    workers: int | None = None,
    progress: Progress | None = None,
) -> DatasetManifest:
    """Write `files` parquet files holding keys first_key .. first_key+rows-1, plus manifest.json.

    Files are written on worker processes (spawned), so a calling script needs the usual
    `if __name__ == "__main__":` guard.
    """
    tasks = plan_base(out, rows=rows, columns=columns, files=files, seed=seed, first_key=first_key)
    return base_manifest(out, tasks, run_tasks(_write_base_file, tasks, workers=workers, progress=progress))
