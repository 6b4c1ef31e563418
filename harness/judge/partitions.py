"""Whether every data file lies in the partition its manifest entry names, and how the files spread
over partitions and sizes.

Every row of a file (before deletes: a deleted row still sits in the file) must give, through the
transforms of the spec the file was written with, the partition tuple its entry states. Planning
prunes files by that tuple, so a row in the wrong file is a row a filtered read misses. Where each
transform preserves order (identity, year to hour, truncate), the file's true minimum and maximum
(and a null, if it has one), which the read-back gathered from every row, give every value its
rows can give; otherwise (bucket, floats, a column the file lacks or the read-back never bounds,
such as a UUID) the partition columns are read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow
from pyiceberg.manifest import DataFile
from pyiceberg.partitioning import PartitionField, PartitionSpec, partition_record_value
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table
from pyiceberg.types import DoubleType, FloatType

from harness.base.errors import one_line
from harness.base.layout import target_file_bytes
from harness.base.reasons import counted, short_path
from harness.judge.readback import FileFacts, TableContent
from harness.model import Check

PARTITION_CHECK = "rows_in_their_partition"


def partition_figures(table: Table, content: TableContent) -> dict[str, Any]:
    """Partitions, the most files one holds, the files' median size and the target size."""
    listed = [facts.listed for facts in content.files]
    per_partition = Counter((file.spec_id, tuple(file.partition)) for file in listed)
    sizes = [file.file_size_in_bytes for file in listed]
    return {
        "partitions": len(per_partition),
        "files_per_partition_max": max(per_partition.values(), default=0),
        "data_file_median_bytes": int(np.median(sizes)) if sizes else None,
        "target_file_bytes": target_file_bytes(table.metadata.properties),
    }


def partition_check(table: Table, content: TableContent) -> Check:
    """Each data file's rows all give the partition tuple its entry states (its spec's transforms)."""
    misplaced: list[str] = []
    for facts in content.files:
        spec = table.specs()[facts.listed.spec_id]
        if spec.is_unpartitioned():
            if len(facts.listed.partition):
                misplaced.append(
                    f"{short_path(facts.path)} is in an unpartitioned spec but names a partition"
                )
            continue
        try:
            found = _misplaced(table, spec, facts)
        except (OSError, pa.ArrowException) as exc:  # a missing file fails data_files_exist
            found = f"{short_path(facts.path)} could not be read: {one_line(exc)}"
        if found is not None:
            misplaced.append(found)
    return Check.equal(
        PARTITION_CHECK,
        0,
        len(misplaced),
        lambda: f"{counted(len(misplaced), 'data file')} hold rows of another partition: {misplaced[0]}",
    )


def _misplaced(table: Table, spec: PartitionSpec, facts: FileFacts) -> str | None:
    """None when every row of the file gives its stated tuple; else what one of the others is."""
    schema = table.schema()
    if all(_bounded(field, schema, facts) for field in spec.fields):
        return _misplaced_by_bounds(spec, schema, facts)
    return _foreign_tuples(table, spec, facts.listed)


def _bounded(field: PartitionField, schema: Schema, facts: FileFacts) -> bool:
    """The file's true bounds of the column settle the field: an order-preserving transform of a
    column whose bounds the read-back gathered. Not for floats (NaN and the signed zeros are values
    of their own), nor where values went unbounded (UUIDs are counted, never bounded): a column
    with non-null values and no bounds would pass any partition."""
    source_type = schema.find_field(field.source_id).field_type
    column = facts.stats.columns.get(field.source_id)
    return (
        field.transform.preserves_order
        and column is not None
        and (column.low is not None or column.values == column.nulls)
        and not isinstance(source_type, FloatType | DoubleType)
    )


def _misplaced_by_bounds(spec: PartitionSpec, schema: Schema, facts: FileFacts) -> str | None:
    stated = tuple(facts.listed.partition)
    for position, field in enumerate(spec.fields):
        column = facts.stats.columns[field.source_id]
        source_type = schema.find_field(field.source_id).field_type
        edges = [column.low, column.high] if column.low is not None else []
        edges += [None] if column.nulls else []
        transformed = field.transform.pyarrow_transform(source_type)(
            pa.array(edges, schema_to_pyarrow(source_type, include_field_ids=False))
        )
        for value in transformed.to_pylist():
            if (given := partition_record_value(field, value, schema)) != stated[position]:
                return (
                    f"{short_path(facts.path)} states {_tuple_text(spec, stated)} "
                    f"but holds rows of {field.name}={given}"
                )
    return None


def _foreign_tuples(table: Table, spec: PartitionSpec, file: DataFile) -> str | None:
    schema = table.schema()
    stated = tuple(file.partition)
    for rows in _partition_columns(table, spec, schema, file):
        transformed = [
            field.transform.pyarrow_transform(schema.find_field(field.source_id).field_type)(rows.column(n))
            for n, field in enumerate(spec.fields)
        ]
        names = [f"_p{n}" for n in range(len(transformed))]
        tuples = pa.table(dict(zip(names, transformed, strict=True))).group_by(names).aggregate([])
        for found in tuples.to_pylist():
            given = tuple(
                partition_record_value(field, found[name], schema)
                for field, name in zip(spec.fields, names, strict=True)
            )
            if given != stated:
                return (
                    f"{short_path(file.file_path)} states {_tuple_text(spec, stated)} "
                    f"but holds rows of {_tuple_text(spec, given)}"
                )
    return None


def _partition_columns(
    table: Table, spec: PartitionSpec, schema: Schema, file: DataFile
) -> Iterator[pa.RecordBatch]:
    """The file's partition source columns, every row (no deletes applied), in the spec's order:
    read as the table reads them (by field id, else the name mapping)."""
    sources = [schema.find_field(field.source_id) for field in spec.fields]
    projected = Schema(*dict.fromkeys(sources))  # a column two fields partition on, read once
    scan = ArrowScan(table.metadata, table.io, projected, AlwaysTrue())
    for batch in scan.to_record_batches([FileScanTask(file)]):
        yield pa.RecordBatch.from_arrays(
            [batch.column(projected.find_column_name(source.field_id)) for source in sources],
            names=[f"_s{n}" for n in range(len(sources))],
        )


def _tuple_text(spec: PartitionSpec, values: tuple[object, ...]) -> str:
    return (
        "("
        + ", ".join(f"{field.name}={value}" for field, value in zip(spec.fields, values, strict=True))
        + ")"
    )
