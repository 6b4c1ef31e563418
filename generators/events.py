"""The `events` shape: an event log as a product team keeps one, every Iceberg type in it.

A string key (`event_id`, `EVT-000000000042`), a UTC timestamp spread over 30 days in file order
(each file a few days, as a log is written), then value columns cycling through every Iceberg
type: structs (one nested in another), lists, maps (a map of lists), timestamps with and without
zone, date, time, uuid, binary, fixed, decimals up to 38 digits, boolean, floats. Nulls at every
level: a null struct, list or map, a null element, a null field.

Written as the wide sets are (generators/wide.py): one file per worker task, one row group per
batch, every batch hashed while it is built, strings drawn from fixed pools. The key is ranked
(generators/keys.py): `keys.parquet` lists the keys in file order, so the change set and the
replacement are derived as for your own data (generators/your_changes.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from generators.checksum import CHECKSUM_VERSION, Checksum
from generators.keys import KEY_SPACE_FILE
from generators.manifest import (
    DatasetManifest,
    FileEntry,
    part_name,
    prepare_dataset_dir,
    schema_fields,
)
from generators.parallel import Progress, run_tasks
from generators.wide import (
    _GENERATORS,
    NULL_FRACTION,
    STRING_POOL_SIZE,
    BaseFile,
    _bitmap,
    _from_numpy,
    _string_pool,
    _valid_mask,
    file_rows,
    rows_per_group,
    write_set_file,
)

EVENT_KEY = "event_id"
EVENT_TIME = "occurred_at"
KEY_DIGITS = 12
SPAN_US = 30 * 86_400 * 10**6  # the events' 30 days
JITTER_US = 3_600 * 10**6  # an event's time: its place in the log, give or take an hour
_START_US = int(datetime(2026, 10, 1, tzinfo=UTC).timestamp()) * 10**6
_POOL = (8, 64)  # lengths of the strings inside nested values: names, SKUs, cities, URLs
ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.string())])
ITEM = pa.struct([("sku", pa.string()), ("qty", pa.int32()), ("price", pa.decimal128(38, 9))])

MAP_KEYS = pa.array([f"k{index:04d}" for index in range(STRING_POOL_SIZE)])
# Type tag -> Arrow type of the value columns, in the order they cycle.
EVENT_TYPES: dict[str, pa.DataType] = {
    "user": pa.struct([("id", pa.int64()), ("name", pa.string()), ("home", ADDRESS)]),
    "tags": pa.list_(pa.string()),
    "props": pa.map_(pa.string(), pa.string()),
    "items": pa.list_(ITEM),
    "scores": pa.map_(pa.string(), pa.list_(pa.float64())),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "str": pa.string(),
    "dec10": pa.decimal128(10, 3),
    "dec38": pa.decimal128(38, 9),
    "ts": pa.timestamp("us", tz="UTC"),
    "ts_local": pa.timestamp("us"),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "uuid": pa.uuid(),
    "bin": pa.binary(),
    "fixed": pa.binary(8),
    "bool": pa.bool_(),
}
_TAGS = tuple(EVENT_TYPES)


def events_schema(columns: int) -> pa.Schema:
    """`event_id`, `occurred_at`, then `columns - 2` value columns (at least one of each type
    from 22 columns on); every field nullable, as Iceberg makes them optional."""
    if columns < 3:
        raise ValueError(f"an events table needs at least 3 columns, got {columns}")
    width = max(3, len(str(columns)))
    fields = [pa.field(EVENT_KEY, pa.string()), pa.field(EVENT_TIME, pa.timestamp("us", tz="UTC"))]
    for index in range(2, columns):
        tag = _TAGS[(index - 2) % len(_TAGS)]
        fields.append(pa.field(f"e{index:0{width}d}_{tag}", EVENT_TYPES[tag]))
    return pa.schema(fields)


def event_keys(first: int, count: int) -> pa.Array:
    """`EVT-` and 12 digits for each of the keys first .. first+count-1, built without Python
    strings (a row of fixed-width bytes each)."""
    numbers = np.arange(first, first + count, dtype=np.int64)
    digits = (numbers[:, None] // 10 ** np.arange(KEY_DIGITS - 1, -1, -1)) % 10 + ord("0")
    width = 4 + KEY_DIGITS
    chars = np.empty((count, width), np.uint8)
    chars[:, :4] = np.frombuffer(b"EVT-", np.uint8)
    chars[:, 4:] = digits
    offsets = np.arange(0, (count + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(chars.reshape(-1)))


def _mask(rng: np.random.Generator, count: int, fraction: float = NULL_FRACTION) -> pa.Array:
    return pa.array(rng.random(count) < fraction)


def _offsets(rng: np.random.Generator, nulls: pa.Array, most: int) -> np.ndarray:
    """List offsets of 0..`most` elements a row, a null row holding none."""
    lengths = rng.integers(0, most + 1, len(nulls), dtype=np.int32)
    lengths[nulls.to_numpy(zero_copy_only=False)] = 0
    return np.concatenate([[0], np.cumsum(lengths, dtype=np.int32)])


def _words(rng: np.random.Generator, count: int, nulls: float = NULL_FRACTION) -> pa.Array:
    """Short strings from a fixed pool, plain (inside nested values), some null."""
    picks = rng.integers(0, STRING_POOL_SIZE, count, dtype=np.int32)
    indices = _from_numpy(pa.int32(), count, picks, _valid_mask(rng, count, nulls))
    return _string_pool(*_POOL).take(indices)  # a null index takes a null


def _nested(tag: str, rng: np.random.Generator, count: int) -> pa.Array:
    kind = EVENT_TYPES[tag]
    nulls = _mask(rng, count)
    if tag == "user":
        home = pa.StructArray.from_arrays(
            [_words(rng, count), _words(rng, count)], fields=list(ADDRESS), mask=_mask(rng, count)
        )
        user_ids = _GENERATORS["int64"](rng, count)
        return pa.StructArray.from_arrays([user_ids, _words(rng, count), home], fields=list(kind), mask=nulls)
    offsets = pa.array(_offsets(rng, nulls, 4))
    elements = int(offsets[-1].as_py())
    if tag == "tags":
        return pa.ListArray.from_arrays(offsets, _words(rng, elements), mask=nulls)
    if tag == "props":
        return pa.MapArray.from_arrays(offsets, _map_keys(rng, offsets), _words(rng, elements), mask=nulls)
    if tag == "items":
        item = pa.StructArray.from_arrays(
            [_words(rng, elements), _GENERATORS["int32"](rng, elements), _GENERATORS["dec38"](rng, elements)],
            fields=list(ITEM),
            mask=_mask(rng, elements, 0.02),
        )
        return pa.ListArray.from_arrays(offsets, item, mask=nulls)
    inner_nulls = _mask(rng, elements)
    inner_offsets = _offsets(rng, inner_nulls, 3)
    values = pa.array(rng.standard_normal(int(inner_offsets[-1])))
    inner = pa.ListArray.from_arrays(pa.array(inner_offsets), values, mask=inner_nulls)
    return pa.MapArray.from_arrays(offsets, _map_keys(rng, offsets), inner, mask=nulls)


def _map_keys(rng: np.random.Generator, offsets: pa.Array) -> pa.Array:
    """Keys of each map, distinct within it (a map has each key once): consecutive names of
    MAP_KEYS from a random one on."""
    bounds = offsets.to_numpy()
    lengths = np.diff(bounds)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    starts = rng.integers(0, STRING_POOL_SIZE, len(lengths), dtype=np.int64)
    picks = (starts[rows] + np.arange(bounds[-1]) - bounds[:-1][rows]) % STRING_POOL_SIZE
    return MAP_KEYS.take(pa.array(picks.astype(np.int32)))


def _flat(tag: str, rng: np.random.Generator, count: int) -> pa.Array:
    kind = EVENT_TYPES[tag]
    if tag in _GENERATORS:
        return _GENERATORS[tag](rng, count)
    valid = _valid_mask(rng, count, NULL_FRACTION)
    if tag == "float32":
        return _from_numpy(kind, count, rng.standard_normal(count).astype(np.float32), valid)
    if tag == "ts_local":
        return _GENERATORS["ts"](rng, count).cast(pa.int64()).cast(kind)
    if tag == "time":
        return _from_numpy(kind, count, rng.integers(0, 86_400 * 10**6, count, dtype=np.int64), valid)
    if tag in ("uuid", "fixed"):
        width = 16 if tag == "uuid" else 8
        raw = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(width), count, [_bitmap(valid), pa.py_buffer(rng.bytes(count * width))]
        )
        return pa.ExtensionArray.from_storage(kind, raw) if tag == "uuid" else raw
    if tag == "bin":
        return _words(rng, count).cast(pa.binary())
    raise AssertionError(tag)


def events_batch(
    schema: pa.Schema, first_key: int, count: int, total: int, rng: np.random.Generator
) -> pa.RecordBatch:
    """`count` events from key `first_key` on, of a log of `total` events."""
    position = np.arange(first_key, first_key + count, dtype=np.int64)
    times = _START_US + position * SPAN_US // max(total, 1) + rng.integers(-JITTER_US, JITTER_US, count)
    arrays = [event_keys(first_key, count), pa.array(times, pa.int64()).cast(pa.timestamp("us", tz="UTC"))]
    for name in schema.names[2:]:
        tag = name.split("_", 1)[1]
        make = _nested if pa.types.is_nested(EVENT_TYPES[tag]) else _flat
        arrays.append(make(tag, rng, count))
    return pa.RecordBatch.from_arrays(arrays, names=schema.names)


@dataclass(frozen=True)
class EventsFile(BaseFile):
    total: int  # events in the whole log: a key's place in it is its time


def _events_batches(task: EventsFile) -> Iterator[pa.RecordBatch]:
    schema = events_schema(task.columns)
    group_rows = rows_per_group(task.columns * 2)  # nested values are wider than a word
    for group, start in enumerate(range(0, task.rows, group_rows)):
        rng = np.random.default_rng([task.seed, task.index, group])
        count = min(group_rows, task.rows - start)
        yield events_batch(schema, task.first_key + start, count, task.total, rng)


def _write_events_file(task: EventsFile) -> tuple[FileEntry, Checksum]:
    return write_set_file(task.path, events_schema(task.columns), _events_batches(task), task.rows)


def generate_events(
    out: Path,
    *,
    rows: int,
    columns: int,
    files: int,
    seed: int,
    final: Path | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
) -> DatasetManifest:
    """`files` parquet files of `rows` events, their keys file and manifest.json in `out` (which
    becomes `final`: the key space is named by where the set will be)."""
    if not 1 <= files <= rows or columns < 3 or seed < 0:
        raise ValueError(
            f"need 1 <= files <= rows, columns >= 3, seed >= 0; got {files}, {rows}, {columns}, {seed}"
        )
    out = Path(out)
    prepare_dataset_dir(out)
    tasks, first = [], 0
    for index, count in enumerate(file_rows(rows, files)):
        tasks.append(EventsFile(out / part_name(index), index, columns, seed, first, count, rows))
        first += count
    results = run_tasks(_write_events_file, tasks, workers=workers, progress=progress)
    pq.write_table(pa.table({EVENT_KEY: event_keys(0, rows)}), out / KEY_SPACE_FILE)
    manifest = DatasetManifest(
        kind="base",
        rows=rows,
        columns=columns,
        seed=seed,
        schema_fields=schema_fields(events_schema(columns)),
        files=[entry for entry, _ in results],
        checksum=sum((checksum for _, checksum in results), Checksum()).hex,
        checksum_version=CHECKSUM_VERSION,
        key_columns=[EVENT_KEY],
        key_space=[(final or out) / KEY_SPACE_FILE],
        key_ranges=[(0, rows - 1)],
    )
    manifest.save(out)
    return manifest
