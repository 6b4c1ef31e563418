"""Schema of the generated wide tables."""

from __future__ import annotations

import pyarrow as pa

KEY_COLUMN = "id"
EVOLVED_COLUMN = "evolved_note"

# Type tag -> Arrow type, in the order the value columns cycle through.
# "str" is a short string (0-16 chars), "text" a long one (20-200 chars).
COLUMN_TYPES: dict[str, pa.DataType] = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "str": pa.string(),
    "dec10": pa.decimal128(10, 3),
    "dec38": pa.decimal128(38, 9),
    "ts": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "bool": pa.bool_(),
    "text": pa.string(),
}
_TAGS = tuple(COLUMN_TYPES)


def column_tag(name: str) -> str:
    """Type tag of a generated column; the key and evolved columns are their own tags."""
    if name in (KEY_COLUMN, EVOLVED_COLUMN):
        return name
    return name.split("_", 1)[1]


def recent_timestamps(name: str) -> bool:
    """Whether a generated column is one of the timestamps spread over 30 days (every second
    timestamp column: c017_ts, c037_ts, ...); the others span 30 years."""
    if column_tag(name) != "ts":
        return False
    index = int(name[1:].split("_", 1)[0])
    return (index - 1) // len(_TAGS) % 2 == 1


def wide_schema(columns: int, *, evolved: bool = False) -> pa.Schema:
    """`id` plus `columns - 1` value columns; every field nullable so Iceberg makes them optional."""
    if columns < 2:
        raise ValueError(f"a wide table needs at least 2 columns, got {columns}")
    width = max(3, len(str(columns - 1)))
    fields = [pa.field(KEY_COLUMN, pa.int64())]
    for index in range(1, columns):
        tag = _TAGS[(index - 1) % len(_TAGS)]
        fields.append(pa.field(f"c{index:0{width}d}_{tag}", COLUMN_TYPES[tag]))
    if evolved:
        fields.append(pa.field(EVOLVED_COLUMN, pa.string()))
    return pa.schema(fields)
