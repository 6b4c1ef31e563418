"""Per-column statistics of each data file, gathered from its batches while the oracle reads them
(no second pass), and a manifest entry's claims held against them (`manifest_stats_true`).

Engines prune files by these claims: a bound tighter than the file's values, or a null or NaN
count that reads too low, makes a filtered scan skip rows a full read finds. So every claim
present must be the file's own figure; a bound may be looser only where the Iceberg spec lets it
be (strings and binary truncated). Absent claims prune nothing and pass.

Columns are matched by field id (a file may predate a rename) and named by the table's current
schema. Primitive columns at the top level and inside structs (a leaf of a null struct is null,
as Parquet counts it); the leaves of lists and maps are not gathered (their counts are of
elements, which writers have counted differently; their claims pass unchecked). UUID bounds are
not checked either (Java's and the spec's UUID orders have differed).
"""

from __future__ import annotations

import datetime
import math
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes
from pyiceberg.manifest import DataFile
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    DateType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from generators.checksum import decimal_words
from generators.siphash import kernel

# Problems named per file before "+N more".
PROBLEMS_SHOWN = 3
# Characters of a string bound shown in a reason.
VALUE_CHARS = 24


@dataclass
class ColumnStats:
    """One column of one file as read: counts, and min/max of its non-null, non-NaN values."""

    values: int = 0  # nulls and NaNs included, as Iceberg's value_counts
    nulls: int = 0
    nans: int = 0
    low: Any = None
    high: Any = None


@dataclass
class FileStats:
    """One data file's columns by field id, and its footer's column chunk bytes by field id."""

    columns: dict[int, ColumnStats] = field(default_factory=dict)
    column_sizes: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Column:
    field_id: int
    name: str  # in the table's current schema, which the read batches carry (a.b inside a struct)
    type: PrimitiveType
    path: tuple[str, ...] = ()  # the names from the top-level column down; () for (name,)

    @property
    def names(self) -> tuple[str, ...]:
        return self.path or (self.name,)


def primitive_columns(schema: Schema) -> list[Column]:
    """The columns whose statistics are gathered and checked: the primitive ones at the top level
    and inside structs."""
    return [column for top in schema.fields for column in _leaves(top, ())]


def _leaves(column: NestedField, parents: tuple[str, ...]) -> list[Column]:
    path = (*parents, column.name)
    if isinstance(column.field_type, PrimitiveType):
        return [Column(column.field_id, ".".join(path), column.field_type, path if parents else ())]
    if isinstance(column.field_type, StructType):
        return [leaf for child in column.field_type.fields for leaf in _leaves(child, path)]
    return []  # lists and maps: their leaves are not gathered


def gather(stats: FileStats, columns: list[Column], batch: pa.RecordBatch) -> None:
    """Folds one batch of a file (as stored, before deletes) into that file's FileStats."""
    names = set(batch.schema.names)
    for column in columns:
        if column.names[0] in names and (values := _leaf_values(batch, column.names)) is not None:
            found = stats.columns.setdefault(column.field_id, ColumnStats())
            _fold(found, column.type, values)


def _leaf_values(batch: pa.RecordBatch, names: tuple[str, ...]) -> pa.Array | None:
    """A column's values, a struct's leaf with its parents' nulls (None: a file without it)."""
    values = batch.column(names[0])
    for name in names[1:]:
        index = values.type.get_field_index(name) if pa.types.is_struct(values.type) else -1
        if index < 0:
            return None
        values = values.flatten()[index]  # the child, null where the struct is
    return values


def _fold(stats: ColumnStats, kind: PrimitiveType, values: pa.Array) -> None:
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    stats.values += len(values)
    stats.nulls += values.null_count
    if isinstance(kind, UUIDType) or values.null_count == len(values):
        return
    if isinstance(kind, FloatType | DoubleType):
        _fold_floats(stats, values)
        return
    if pa.types.is_decimal128(values.type):
        low, high = _decimal_bounds(values)
    else:
        bounds = pc.min_max(_comparable(values, kind))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is not None:
        stats.low = low if stats.low is None else min(stats.low, low)
        stats.high = high if stats.high is None else max(stats.high, high)


def _decimal_bounds(values: pa.Array) -> tuple[Decimal, Decimal]:
    """Arrow's min_max of decimal128 costs 10 ns a value, this one pass over the two words 1."""
    lows, highs = decimal_words(values)
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    low_high, low_low, high_high, high_low = _decimal_extremes(lows, highs.view(np.int64), valid)
    scale = values.type.scale
    return (
        Decimal(int(low_high) << 64 | int(low_low)).scaleb(-scale),
        Decimal(int(high_high) << 64 | int(high_low)).scaleb(-scale),
    )


@kernel
def _decimal_extremes(lows: np.ndarray, highs: np.ndarray, valid: np.ndarray) -> tuple[int, int, int, int]:
    """The smallest and largest valid 128-bit value as (high word signed, low word unsigned) each;
    the caller has checked one value is valid."""
    first = np.argmax(valid)
    min_high, min_low, max_high, max_low = highs[first], lows[first], highs[first], lows[first]
    for i in range(first + 1, lows.size):
        if valid[i]:
            high, low = highs[i], lows[i]
            if high < min_high or (high == min_high and low < min_low):
                min_high, min_low = high, low
            if high > max_high or (high == max_high and low > max_low):
                max_high, max_low = high, low
    return min_high, min_low, max_high, max_low


def _comparable(values: pa.Array, kind: PrimitiveType) -> pa.Array:
    """Dates, times and timestamps as the integers Iceberg's bounds hold (days, microseconds)."""
    if isinstance(kind, DateType):
        return values.view(pa.int32())
    if isinstance(kind, TimestampType | TimestamptzType | TimeType):
        if values.type.unit != "us":
            timestamp = pa.types.is_timestamp(values.type)
            micros = pa.timestamp("us", values.type.tz) if timestamp else pa.time64("us")
            values = values.cast(micros, safe=False)
        return values.view(pa.int64())
    return values


def _fold_floats(stats: ColumnStats, values: pa.Array) -> None:
    """NaN is counted, never a bound; -0.0 sorts before 0.0 as Java orders them (fmin/fmax do not
    tell the zeros apart, so a zero extreme is settled by the zeros' signs). In numpy, nulls as NaN:
    a third of Arrow's is_nan + min_max time on 8,192 doubles."""
    floats = values.to_numpy(zero_copy_only=False)
    stats.nans += int(np.isnan(floats).sum()) - values.null_count
    low, high = float(np.fmin.reduce(floats)), float(np.fmax.reduce(floats))
    if math.isnan(low):  # all null or NaN
        return
    if low == 0 or high == 0:
        negative = np.signbit(floats[floats == 0])
        if low == 0:
            low = -0.0 if negative.any() else 0.0
        if high == 0:
            high = -0.0 if negative.all() else 0.0
    stats.low = low if stats.low is None else min(stats.low, low, key=java_order)
    stats.high = high if stats.high is None else max(stats.high, high, key=java_order)


def java_order(value: float) -> tuple[float, float]:
    """A float's place in Java's total order (-0.0 before 0.0)."""
    return value, math.copysign(1.0, value)


def footer_column_sizes(metadata: pq.FileMetaData, file_schema: Schema) -> dict[int, int]:
    """Bytes of each top-level primitive column's chunks in a parquet footer (compressed, as Iceberg's
    column_sizes count them), by the file's field ids."""
    paths = {metadata.schema.column(index).path: index for index in range(metadata.num_columns)}
    sizes = {}
    for column in file_schema.fields:
        if (index := paths.get(column.name)) is not None and isinstance(column.field_type, PrimitiveType):
            sizes[column.field_id] = sum(
                metadata.row_group(group).column(index).total_compressed_size
                for group in range(metadata.num_row_groups)
            )
    return sizes


# A DataFile's column statistics by their position in its record (pyiceberg's DATA_FILE_TYPE):
# column_sizes, value_counts, null_value_counts, nan_value_counts, lower_bounds, upper_bounds.
CLAIM_POSITIONS = range(6, 12)


class PackedMap(Mapping[int, Any]):
    """A claim map (field id -> count or bound) in two arrays and, for bounds, one bytes buffer:
    ~12 bytes a column where pyiceberg's dict takes ~60 (and ~40 more a bound)."""

    def __init__(self, claims: dict[int, Any]) -> None:
        ids = sorted(claims)
        self.ids = np.array(ids, np.int64)
        values = [claims[fid] for fid in ids]
        self.raw = bool(values) and isinstance(values[0], bytes)
        if self.raw:
            self.ends = np.cumsum([len(value) for value in values], dtype=np.int64)
            self.buffer = b"".join(values)
        else:
            self.values = np.array(values, np.int64)

    def __getitem__(self, fid: int) -> Any:
        index = int(np.searchsorted(self.ids, fid))
        if index >= len(self.ids) or self.ids[index] != fid:
            raise KeyError(fid)
        if not self.raw:
            return int(self.values[index])
        start = int(self.ends[index - 1]) if index else 0
        return self.buffer[start : int(self.ends[index])]

    def __iter__(self) -> Iterator[int]:
        return (int(fid) for fid in self.ids)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Claims:
    """What a manifest entry states of its file's columns, packed: taken from the planned entries
    (whose own dicts are let go) before the read, held against each file as its read ends."""

    record_count: int
    column_sizes: PackedMap | None
    value_counts: PackedMap | None
    null_value_counts: PackedMap | None
    nan_value_counts: PackedMap | None
    lower_bounds: PackedMap | None
    upper_bounds: PackedMap | None

    @classmethod
    def taken_from(cls, data_file: DataFile) -> Claims:
        """The entry's claims, packed, and let go from the entry itself (in place): at 400 columns
        they are ~146 KiB a file there, held by the planned tasks until the whole table is read."""
        packed = [PackedMap(data_file[at]) if data_file[at] else None for at in CLAIM_POSITIONS]
        for position in CLAIM_POSITIONS:
            data_file[position] = None
        return cls(data_file.record_count, *packed)


Entry = DataFile | Claims  # a manifest entry's data file, or its claims packed


def stats_problems(data_file: Entry, stats: FileStats, rows: int, columns: list[Column]) -> list[str]:
    """What a manifest entry claims that its file contradicts: record_count, then per column the
    counts, the column size and the bounds."""
    problems = []
    if data_file.record_count != rows:
        problems.append(f"record_count {data_file.record_count:,} but {rows:,} rows")
    for column in columns:
        found = stats.columns.get(column.field_id)
        if found is not None:
            problems += _column_problems(data_file, column, found, stats.column_sizes.get(column.field_id))
    return problems


def _column_problems(data_file: Entry, column: Column, found: ColumnStats, size: int | None) -> list[str]:
    """The bounds first (what pruning trusts most), then the counts and the column size."""
    fid, name = column.field_id, f"column {column.name}"
    problems = _bound_problems(data_file, column, found)
    counts = [("value_counts", data_file.value_counts, found.values)]
    counts.append(("null_value_counts", data_file.null_value_counts, found.nulls))
    if isinstance(column.type, FloatType | DoubleType):
        counts.append(("nan_value_counts", data_file.nan_value_counts, found.nans))
    if size is not None:
        counts.append(("column_sizes", data_file.column_sizes, size))
    return problems + [
        f"{name} {what} {claims[fid]:,} but {actual:,}"
        for what, claims, actual in counts
        if claims and fid in claims and claims[fid] != actual
    ]


def _bound_problems(data_file: Entry, column: Column, found: ColumnStats) -> list[str]:
    if isinstance(column.type, UUIDType) or found.low is None:
        return []  # no values to bound: any bound prunes nothing that is there
    fid, name = column.field_id, f"column {column.name}"
    problems = []
    sides = (
        ("lower", "min", data_file.lower_bounds, found.low),
        ("upper", "max", data_file.upper_bounds, found.high),
    )
    for side, extreme, bounds, actual in sides:
        if not bounds or fid not in bounds:
            continue
        try:
            bound = decode_bound(column.type, bounds[fid])
        except (ValueError, struct.error) as exc:  # UnicodeDecodeError is a ValueError
            problems.append(f"{name} {side} bound undecodable ({len(bounds[fid])} bytes: {exc})")
            continue
        if not bound_holds(column.type, side, bound, actual):
            problems.append(
                f"{name} {side} bound {shown(column.type, bound)} but {extreme} {shown(column.type, actual)}"
            )
    return problems


def decode_bound(kind: PrimitiveType, raw: bytes) -> Any:
    """A bound's value; an int or float bound of a column since promoted to long or double is
    stored in the old type's 4 bytes (as the spec's single-value serialisation allows)."""
    if len(raw) == 4 and isinstance(kind, LongType):
        return from_bytes(IntegerType(), raw)
    if len(raw) == 4 and isinstance(kind, DoubleType):
        return from_bytes(FloatType(), raw)
    value = from_bytes(kind, raw)
    if isinstance(kind, StringType):  # pyiceberg hands back bytes' decoding: check it is text
        raw.decode("utf-8")
    return value


def bound_holds(kind: IcebergType, side: str, bound: Any, actual: Any) -> bool:
    """The spec's rule: a lower bound at most the file's min, an upper bound at least its max. A
    looser bound prunes less, but nothing that is in the file; a truncated string or binary bound
    (a prefix for the lower, a prefix with its last code point raised for the upper) is one. Strings
    compare by code point (UTF-8's byte order), floats in Java's order (-0.0 before 0.0); a NaN bound
    holds nothing."""
    if isinstance(kind, FloatType | DoubleType):
        if math.isnan(bound):
            return False
        bound, actual = java_order(bound), java_order(actual)
    elif isinstance(kind, StringType):
        bound, actual = bound.encode(), actual.encode()
    return bool(bound <= actual) if side == "lower" else bool(bound >= actual)


def shown(kind: IcebergType, value: Any) -> str:
    """A bound or extreme as a reason prints it: dates and timestamps as ISO text, long strings cut."""
    if isinstance(kind, DateType):
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=value)).isoformat()
    if isinstance(kind, TimestampType | TimestamptzType):
        return (datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)).isoformat()
    if isinstance(kind, StringType | BinaryType | FixedType):
        text = repr(value)
        return text if len(text) <= VALUE_CHARS else f"{text[: VALUE_CHARS - 1]}…"
    if isinstance(value, Decimal | float | int):
        return str(value)
    return repr(value)
