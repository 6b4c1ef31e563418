"""A table layout from the command line (`--partition`, `--sort`, `--table-property`) and the table
it makes: the spellings (docs/tables-and-caps.md), their one-line errors, and the partition spec, sort
order and properties a scenario creates its table with.

Partition fields are spelled as Iceberg's metadata writes transforms, `day(c017_ts)`,
`bucket[16](id)`, `truncate[4](c003_str)`, or as Spark SQL does, `days(c017_ts)`,
`bucket(16, id)`, `truncate(4, c003_str)`; a bare column is `identity`. Both read as Iceberg's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import ValidationError
from pyiceberg.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.table import Table
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform, Transform, parse_transform

from harness.base.errors import IcebenchError
from harness.model import PLAIN_LAYOUT, TableLayout

# Iceberg's own default for write.target-file-size-bytes (512 MiB), where a table does not set it.
TARGET_FILE_SIZE_PROPERTY = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_BYTES = 512 * 2**20
UNPARTITIONED = ("", "none", "unpartitioned")

_SPARK_NAMES = {"years": "year", "months": "month", "days": "day", "hours": "hour"}
_ICEBERG_FIELD = re.compile(r"(?P<transform>[a-z]+(?:\[\d+\])?)\((?P<column>[^(),\s]+)\)")
_SPARK_FIELD = re.compile(r"(?P<transform>bucket|truncate)\((?P<width>\d+)\s*,\s*(?P<column>[^(),\s]+)\)")
_COLUMN = re.compile(r"[^\s(),\[\]]+")
_TRANSFORMS = ("identity", "year", "month", "day", "hour", "bucket[N]", "truncate[W]")


def parse_layout(
    partition: str | None = None, sort: str | None = None, properties: Iterable[str] = ()
) -> TableLayout:
    """The layout of `--partition SPEC --sort COLS --table-property k=v ...`; a one-line error
    naming the part that does not parse."""
    return TableLayout(
        partition=parse_partition(partition or ""),
        sort=parse_sort(sort or ""),
        properties=tuple(sorted(dict(parse_property(text) for text in properties).items())),
    )


def parse_partition(text: str) -> tuple[str, ...]:
    """`day(c017_ts), bucket(16, id)` as Iceberg's fields: ("day(c017_ts)", "bucket[16](id)")."""
    if text.strip().lower() in UNPARTITIONED:
        return ()
    fields = tuple(_partition_field(part.strip()) for part in _top_level_commas(text))
    if len(set(fields)) < len(fields):
        raise IcebenchError(f"--partition {text}: a field is given twice")
    return fields


def _partition_field(text: str) -> str:
    if match := _SPARK_FIELD.fullmatch(text):
        return f"{match['transform']}[{match['width']}]({match['column']})"
    if match := _ICEBERG_FIELD.fullmatch(text):
        transform = _SPARK_NAMES.get(match["transform"], match["transform"])
        try:
            parsed = parse_transform(transform)
        except (ValueError, ValidationError):  # `bucket` without its [N]
            parsed = None
        if parsed is None or str(parsed) != transform or transform == "void":
            raise IcebenchError(
                f"--partition {text}: unknown transform {match['transform']} "
                f"(known: {', '.join(_TRANSFORMS)})"
            )
        return f"{transform}({match['column']})"
    if _COLUMN.fullmatch(text):
        return f"identity({text})"
    raise IcebenchError(
        f"--partition {text!r}: not a partition field (spell it as day(ts), bucket[16](id) or "
        "bucket(16, id), truncate[4](name), or a column name)"
    )


def _top_level_commas(text: str) -> list[str]:
    """`a(b, c), d` split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    if any(not part.strip() for part in parts) or depth != 0:
        raise IcebenchError(f"--partition {text!r}: an empty field or unbalanced parentheses")
    return parts


def parse_sort(text: str) -> tuple[str, ...]:
    """`c001_int32, c002_int64 desc` as ("c001_int32", "c002_int64 desc"): ascending by default."""
    columns = []
    for part in (part.split() for part in text.split(",") if part.strip()):
        if len(part) > 2 or (len(part) == 2 and part[1].lower() not in ("asc", "desc")):
            raise IcebenchError(f"--sort {text}: give columns, each with asc or desc after it if you like")
        columns.append(part[0] if len(part) == 1 or part[1].lower() == "asc" else f"{part[0]} desc")
    return tuple(columns)


def parse_property(text: str) -> tuple[str, str]:
    """`k=v` of --table-property. Iceberg's properties are dotted names (`write.target-file-size-bytes`)
    and `format-version`; anything else is a typo that would change nothing, so it is refused."""
    key, equals, value = (part.strip() for part in text.partition("="))
    if not equals or not key or not value:
        raise IcebenchError(
            f"--table-property {text}: give key=value, e.g. {TARGET_FILE_SIZE_PROPERTY}=134217728"
        )
    if "." not in key and key != "format-version":
        raise IcebenchError(f"--table-property {text}: {key} is not an Iceberg table property")
    if key == "format-version":
        if value == "3":  # the harness creates and reads every table with pyiceberg
            raise IcebenchError(
                "--table-property format-version=3: icebench creates tables with pyiceberg, which cannot "
                "write v3 metadata yet (apache/iceberg-python#1551)"
            )
        if value not in ("1", "2"):
            raise IcebenchError(f"--table-property {text}: Iceberg's format versions are 1, 2 and 3")
    elif key == TARGET_FILE_SIZE_PROPERTY and not (value.isdigit() and int(value) > 0):
        raise IcebenchError(f"--table-property {text}: give the size in bytes")
    return key, value


def partition_columns(layout: TableLayout) -> list[str]:
    """The columns a layout partitions on, each once, in its fields' order."""
    columns = (match["column"] for text in layout.partition if (match := _ICEBERG_FIELD.fullmatch(text)))
    return list(dict.fromkeys(columns))


def table_specs(layout: TableLayout, schema: Schema) -> tuple[PartitionSpec, SortOrder]:
    """The partition spec and sort order of `layout` over `schema`; a one-line error for a column
    the table lacks or a transform its type cannot take."""
    fields = []
    for number, text in enumerate(layout.partition):
        match = _ICEBERG_FIELD.fullmatch(text)
        assert match is not None, f"{text} was not parsed by parse_partition"
        transform = parse_transform(match["transform"])
        source = _source_field(schema, match["column"], "--partition", text)
        if not transform.can_transform(source.field_type):
            raise IcebenchError(
                f"--partition {text}: {transform} cannot partition {source.name} ({source.field_type})"
            )
        fields.append(
            PartitionField(
                source.field_id,
                PARTITION_FIELD_ID_START + number,
                transform,
                _field_name(source.name, transform),
            )
        )
    order = []
    for text in layout.sort:
        column, _, direction = text.partition(" ")
        source = _source_field(schema, column, "--sort", text)
        descending = direction == "desc"  # Spark's defaults: nulls first ascending, last descending
        order.append(
            SortField(
                source_id=source.field_id,
                transform=IdentityTransform(),
                direction=SortDirection.DESC if descending else SortDirection.ASC,
                null_order=NullOrder.NULLS_LAST if descending else NullOrder.NULLS_FIRST,
            )
        )
    return PartitionSpec(*fields), SortOrder(*order)


def _source_field(schema: Schema, column: str, flag: str, text: str):  # noqa: ANN202 - pyiceberg's NestedField
    try:
        return schema.find_field(column)
    except ValueError:
        names = [field.name for field in schema.fields]
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        raise IcebenchError(f"{flag} {text}: the table has no column {column} (it has {shown})") from None


def _field_name(column: str, transform: Transform) -> str:
    """The partition field's name as Iceberg's own writers name it: id_bucket_16, ts_day, name."""
    if isinstance(transform, IdentityTransform):
        return column
    kind, _, width = str(transform).rstrip("]").partition("[")
    return f"{column}_{'trunc' if kind == 'truncate' else kind}" + (f"_{width}" if width else "")


def iceberg_schema(schema: pa.Schema) -> Schema:
    """An Arrow schema as the Iceberg schema a catalog would make of it (fresh field ids)."""
    return assign_fresh_schema_ids(Catalog._convert_schema_if_needed(schema))


def check_layout(layout: TableLayout, schema: pa.Schema) -> None:
    """Before any run: the layout fits a table of `schema` (one-line error if not)."""
    table_specs(layout, iceberg_schema(schema))


def create_table(
    catalog: Catalog, identifier: str, schema: pa.Schema, layout: TableLayout = PLAIN_LAYOUT
) -> Table:
    """The scenario's table, laid out as asked, in one catalog commit."""
    if layout.plain:
        return catalog.create_table(identifier, schema=schema)
    fresh = iceberg_schema(schema)
    spec, order = table_specs(layout, fresh)
    return catalog.create_table(
        identifier, schema=fresh, partition_spec=spec, sort_order=order, properties=dict(layout.properties)
    )


def target_file_bytes(properties: dict[str, str]) -> int:
    """The data file size a table asks its writers for."""
    return int(properties.get(TARGET_FILE_SIZE_PROPERTY, DEFAULT_TARGET_FILE_BYTES))
