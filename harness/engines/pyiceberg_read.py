"""A table as the pyiceberg of another environment reads it: row count and content checksum.

Run as a program of its own (harness/engines/child_read.py) by that environment's interpreter, so
its pyiceberg (a fork such as sidequery's, which applies equality deletes) is the one that plans
and reads, never the oracle's. Its own planning and its own Arrow reader, one data file at a time
(`ArrowScan.to_record_batches([task])`): memory of one file's read, not of the table.

One shim, for reading only: sidequery-pyiceberg 0.12.0.post2 declares the manifests' `equality_ids`
as list<int>, as the spec says (apache/iceberg-python#3840), but, unlike upstream's fix
(apache/iceberg-python#3842), cannot read the list<long> that Apache pyiceberg 0.12 writes into
every manifest: "ResolveError: Cannot promote long to int" on any table Apache pyiceberg ever
committed to. This program reads that one field as long (Avro promotes int to long), as upstream's
fix does; nothing else of the fork's reading is touched.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import BaseModel
from pyiceberg import manifest
from pyiceberg.catalog import load_catalog
from pyiceberg.io.pyarrow import ArrowScan
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, ListType, LongType, StructType

from generators.checksum import Checksum
from harness.engines.child_read import answer, read_in_child


class PyicebergReadSpec(BaseModel):
    catalog: dict[str, str]
    table: str  # namespace.table


def read_with_pyiceberg(catalog: dict[str, str], table: str, python: Path, engine: str) -> Checksum:
    """Row count and checksum of `table` as the pyiceberg of `python`'s environment reads it."""
    spec = PyicebergReadSpec(catalog=catalog, table=table)
    return read_in_child("harness.engines.pyiceberg_read", spec, engine, table, python)


EQUALITY_IDS = 135  # data_file.equality_ids in the manifest entry schema
DATA_FILE = 2  # manifest_entry.data_file


def read_equality_ids_as_long() -> None:
    """Manifests are read with `equality_ids` as list<long>, which reads int and long lists alike
    (a no-op where pyiceberg declares it long already)."""
    version = manifest.DEFAULT_READ_VERSION
    entry = manifest.MANIFEST_ENTRY_SCHEMAS[version]
    data_file = entry.find_field(DATA_FILE)
    assert isinstance(data_file.field_type, StructType)
    ids = data_file.field_type.field(EQUALITY_IDS)
    if ids is None or not isinstance(ids.field_type, ListType):
        return
    if not isinstance(ids.field_type.element_type, IntegerType):
        return
    as_long = ListType(ids.field_type.element_id, LongType(), element_required=True)
    widened = ids.model_copy(update={"field_type": as_long})
    fields = [widened if field.field_id == EQUALITY_IDS else field for field in data_file.field_type.fields]
    new_data_file = data_file.model_copy(update={"field_type": StructType(*fields)})
    manifest.MANIFEST_ENTRY_SCHEMAS[version] = Schema(
        *[new_data_file if field.field_id == DATA_FILE else field for field in entry.fields],
        schema_id=entry.schema_id,
    )


def pyiceberg_checksum(spec: PyicebergReadSpec) -> Checksum:
    read_equality_ids_as_long()
    table = load_catalog("icebench", **spec.catalog).load_table(spec.table)
    scan = table.scan()
    reader = ArrowScan(table.metadata, table.io, scan.projection(), scan.row_filter, scan.case_sensitive)
    checksum = Checksum()
    for task in scan.plan_files():
        for batch in reader.to_record_batches([task]):
            checksum.update(batch)
    return checksum


def main() -> None:
    answer(pyiceberg_checksum(PyicebergReadSpec.model_validate_json(sys.stdin.read())))


if __name__ == "__main__":
    main()
