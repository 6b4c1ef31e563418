"""Whether a data file's physical types are the table schema's, as the spec's Parquet mapping
(format/spec.md, "Parquet") requires, without the read-back's allowances (pyiceberg reads a
millisecond or a zone-less timestamp into a `timestamptz` column without a word).

Held per column, matched by field id: a `timestamp` is microseconds, not adjusted to UTC; a
`timestamptz` microseconds adjusted to UTC; the nanosecond types (v3) nanoseconds; a decimal has
the table's scale and at most its precision (a file written before the column was widened has a
smaller one: the spec's promotion). Other types are the read-back's to judge: it refuses what it
cannot read as the table's type.
"""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DecimalType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)

from harness.base.reasons import short_path

PHYSICAL_CHECK = "physical_types_match"

# The unit and whether the stored instant is adjusted to UTC, per Iceberg timestamp type.
_TIMESTAMPS: dict[type[IcebergType], tuple[str, bool]] = {
    TimestampType: ("us", False),
    TimestamptzType: ("us", True),
    TimestampNanoType: ("ns", False),
    TimestamptzNanoType: ("ns", True),
}


def physical_problems(path: str, table_schema: Schema, in_file: pa.Schema, file_schema: Schema) -> list[str]:
    """Each column of the file at `path` whose physical type breaks the table's. `in_file` is the
    file's Arrow schema; `file_schema` the same as Iceberg reads it (its field ids, from the file or
    the table's name mapping), field for field."""
    problems: list[str] = []
    for arrow_field, field in zip(in_file, file_schema.fields, strict=False):
        _walk(arrow_field.type, field, table_schema, problems)
    return [f"{short_path(path)}: {problem}" for problem in problems]


def _walk(arrow: pa.DataType, field: NestedField, table_schema: Schema, problems: list[str]) -> None:
    try:
        wanted = table_schema.find_field(field.field_id)
    except ValueError:  # a column the table dropped: not read, not judged
        return
    problem = _primitive_problem(arrow, wanted.field_type)
    if problem is not None:
        problems.append(f"column {table_schema.find_column_name(field.field_id)} {problem}")
        return
    kind = field.field_type
    if isinstance(kind, StructType) and pa.types.is_struct(arrow):
        for index, child in enumerate(kind.fields):
            _walk(arrow.field(index).type, child, table_schema, problems)
    elif isinstance(kind, ListType) and (pa.types.is_list(arrow) or pa.types.is_large_list(arrow)):
        _walk(arrow.value_type, kind.element_field, table_schema, problems)
    elif isinstance(kind, MapType) and pa.types.is_map(arrow):
        _walk(arrow.key_type, kind.key_field, table_schema, problems)
        _walk(arrow.item_type, kind.value_field, table_schema, problems)


def _primitive_problem(arrow: pa.DataType, wanted: IcebergType) -> str | None:
    timestamp = _TIMESTAMPS.get(type(wanted))
    if timestamp is not None and pa.types.is_timestamp(arrow):
        unit, adjusted = timestamp
        found = f"{arrow.unit}, {'adjusted to UTC' if arrow.tz is not None else 'not adjusted to UTC'}"
        if arrow.unit != unit or (arrow.tz is not None) != adjusted:
            want = f"{unit}, {'adjusted to UTC' if adjusted else 'not adjusted to UTC'}"
            return f"is {wanted} in the table ({want}) but stored as timestamp {found}"
    decimal = isinstance(wanted, DecimalType) and pa.types.is_decimal(arrow)
    if decimal and (arrow.scale != wanted.scale or arrow.precision > wanted.precision):
        return f"is {wanted} in the table but stored as decimal({arrow.precision}, {arrow.scale})"
    return None
