"""The table a layout makes: the partition spec, sort order and properties a scenario creates its
table with, over pyiceberg (the layout's spellings are harness/base/layout_text.py's)."""

from __future__ import annotations

import pyarrow as pa
from pydantic import BaseModel
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io import load_file_io
from pyiceberg.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.table import Table
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform, Transform, parse_transform

from harness.base.errors import IcebenchError
from harness.base.layout_text import (
    DEFAULT_TARGET_FILE_BYTES,
    FORMAT_VERSION_PROPERTY,
    ICEBERG_FIELD,
    TARGET_FILE_SIZE_PROPERTY,
)
from harness.model import PLAIN_LAYOUT, TableLayout


def table_specs(layout: TableLayout, schema: Schema) -> tuple[PartitionSpec, SortOrder]:
    """The partition spec and sort order of `layout` over `schema`; a one-line error for a column
    the table lacks or a transform its type cannot take."""
    fields = []
    for number, text in enumerate(layout.partition):
        match = ICEBERG_FIELD.fullmatch(text)
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
        if not IdentityTransform().can_transform(source.field_type):
            raise IcebenchError(
                f"--sort {text}: a table sorts by primitive columns; {column} is {source.field_type}"
            )
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
    properties = dict(layout.properties)
    if properties.get(FORMAT_VERSION_PROPERTY) == "3" and isinstance(catalog, SqlCatalog):
        return _create_v3_in_sql_catalog(catalog, identifier, fresh, spec, order, properties)
    return catalog.create_table(
        identifier, schema=fresh, partition_spec=spec, sort_order=order, properties=properties
    )


def _create_v3_in_sql_catalog(
    catalog: SqlCatalog,
    identifier: str,
    schema: Schema,
    spec: PartitionSpec,
    order: SortOrder,
    properties: dict[str, str],
) -> Table:
    """A v3 table in the SQLite catalog, as SqlCatalog.create_table makes one but for the last step:
    pyiceberg 0.12 builds v3 metadata and reads it, yet refuses to write it (`Writing V3 is not yet
    supported`, apache/iceberg-python#1551). Its own model is written as JSON (with `next-row-id` 0,
    which the spec requires of v3 and pyiceberg leaves unset) and registered; Iceberg Java loads
    every judged table (`loads_in_reference`), this metadata among them. A REST catalog's server
    writes the metadata itself."""
    namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
    location = catalog._resolve_table_location(None, namespace, Catalog.table_name_from(identifier))
    metadata_location = load_location_provider(location, properties).new_table_metadata_file_location()
    metadata = new_table_metadata(schema, spec, order, location, dict(properties))  # it pops format-version
    metadata = metadata.model_copy(update={"next_row_id": 0})
    io = load_file_io(catalog.properties, metadata_location)
    with io.new_output(metadata_location).create() as out:
        out.write(BaseModel.model_dump_json(metadata, by_alias=True, exclude_none=True).encode())
    return catalog.register_table(identifier, metadata_location)


def target_file_bytes(properties: dict[str, str]) -> int:
    """The data file size a table asks its writers for."""
    return int(properties.get(TARGET_FILE_SIZE_PROPERTY, DEFAULT_TARGET_FILE_BYTES))
