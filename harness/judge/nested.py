"""A data file's struct, list and map column as the table reads it, every null where it was.

pyiceberg's projection rebuilds lists without their validity: a null list of structs reads as
an empty list (apache/iceberg-python#3833, open), so the oracle reading through it would blame
writers whose files are right. Here the file's column is matched to the table's type by field
id, level by level: fields the file lacks are null, primitives promoted as the table's type says
(int to long, float to double, a wider decimal), names the table's; the Arrow buffers of
validity are carried over at every level.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType


def project_nested(array: pa.Array, file_type: IcebergType, table_type: IcebergType) -> pa.Array:
    """`array`, a file's values of `file_type`, as values of the table's `table_type`."""
    if isinstance(table_type, StructType) and isinstance(file_type, StructType):
        return _struct(array, file_type, table_type)
    if isinstance(table_type, ListType) and isinstance(file_type, ListType):
        values = project_nested(array.values, file_type.element_type, table_type.element_type)
        return pa.LargeListArray.from_arrays(_offsets(array, np.int64), values, mask=array.is_null())
    if isinstance(table_type, MapType) and isinstance(file_type, MapType):
        keys = project_nested(array.keys, file_type.key_type, table_type.key_type)
        items = project_nested(array.items, file_type.value_type, table_type.value_type)
        return pa.MapArray.from_arrays(_offsets(array, np.int32), keys, items, mask=array.is_null())
    if file_type != table_type:  # a promotion the table's schema made after the file was written
        return array.cast(arrow_type(table_type))
    return array


def arrow_type(kind: IcebergType) -> pa.DataType:
    return schema_to_pyarrow(kind, include_field_ids=False)


def _struct(array: pa.StructArray, file_type: StructType, table_type: StructType) -> pa.Array:
    in_file = {field.field_id: (index, field) for index, field in enumerate(file_type.fields)}
    children = [_child(array, in_file, field) for field in table_type.fields]
    fields = [
        pa.field(field.name, child.type) for field, child in zip(table_type.fields, children, strict=True)
    ]
    return pa.StructArray.from_arrays(children, fields=fields, mask=array.is_null())


def _child(
    array: pa.StructArray, in_file: dict[int, tuple[int, NestedField]], field: NestedField
) -> pa.Array:
    if field.field_id not in in_file:  # added after the file was written
        return pa.nulls(len(array), arrow_type(field.field_type))
    index, file_field = in_file[field.field_id]
    return project_nested(array.field(index), file_field.field_type, field.field_type)


def _offsets(array: pa.Array, kind: type[np.integer]) -> pa.Array:
    """The list's offsets into its whole child, as a new array: Arrow takes a validity mask only
    beside offsets that are not a slice."""
    return pa.array(np.asarray(array.offsets).astype(kind))
