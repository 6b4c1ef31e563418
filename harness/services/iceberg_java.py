"""Iceberg Java, the reference implementation, from compose/rest-catalog's build: pyiceberg's
properties as Java names them, and Java appending data files to a table (IcebenchAppendFiles) where
pyiceberg cannot write the table's format version (v3: apache/iceberg-python#1551)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.conversions import to_bytes
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table
from sqlalchemy.engine import make_url

from harness.base.errors import IcebenchError
from harness.base.orphan_guard import guarded
from harness.services.rest_catalog import classpath

APPEND_CLASS = "org.apache.iceberg.rest.IcebenchAppendFiles"
LOCAL_FILE_IO = "org.apache.iceberg.rest.IcebenchLocalFileIO"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
APPEND_TIMEOUT_S = 600
# pyiceberg's FileIO properties as Iceberg Java's S3FileIO names them; the rest pass as they are.
_JAVA_NAMES = {"s3.region": "client.region"}
_PASSED_PREFIXES = ("s3.", "client.")
# Where the harness's own pyiceberg found its S3 credentials in the environment (as the stacks set
# them), Java is given them as properties: its JVM may have started before they were set.
_FROM_ENVIRONMENT = {
    "s3.access-key-id": "AWS_ACCESS_KEY_ID",
    "s3.secret-access-key": "AWS_SECRET_ACCESS_KEY",
    "s3.session-token": "AWS_SESSION_TOKEN",
    "client.region": "AWS_REGION",
}
# pyiceberg's own catalog properties, which mean nothing to Java's catalogs.
_PYICEBERG_ONLY = ("type", "py-io-impl", "uri")


def java_file_io_properties(properties: dict[str, str]) -> dict[str, str]:
    given = {
        _JAVA_NAMES.get(key, key): value
        for key, value in properties.items()
        if key.startswith(_PASSED_PREFIXES) and value is not None
    }
    found = {key: os.environ[name] for key, name in _FROM_ENVIRONMENT.items() if name in os.environ}
    return {**found, **given}


def java_catalog_properties(catalog: Catalog, table: Table) -> dict[str, str]:
    """The same catalog opened by Iceberg Java: SQLite through its JdbcCatalog, REST through its
    RESTCatalog, the table's files through S3FileIO or a local FileIO."""
    given = {k: v for k, v in catalog.properties.items() if k not in _PYICEBERG_ONLY and v is not None}
    if isinstance(catalog, SqlCatalog):
        url = make_url(catalog.properties["uri"])
        if url.get_backend_name() != "sqlite":
            raise IcebenchError(
                f"Iceberg Java opens only SQLite among SQL catalogs here, not {url.drivername}"
            )
        kind = {"type": "jdbc", "uri": f"jdbc:sqlite:{url.database}"}
    elif isinstance(catalog, RestCatalog):
        kind = {"type": "rest", "uri": catalog.properties["uri"]}
    else:
        raise IcebenchError(f"Iceberg Java opens SQLite and REST catalogs here, not {type(catalog).__name__}")
    remote = urlparse(table.location()).scheme in ("s3", "s3a")
    io = {"io-impl": S3_FILE_IO if remote else LOCAL_FILE_IO, **java_file_io_properties(table.io.properties)}
    return {**given, **io, **kind, "name": catalog.name}


def append_data_files(
    table: Table, data_files: Iterable[DataFile], properties: dict[str, str] | None = None
) -> Table:
    """One fast append of `data_files` (already under the table's location), with the table
    `properties` set in the same commit, by Iceberg Java; the table as it is then. What Java
    refuses is an IcebenchError naming it."""
    if table.catalog is None:
        raise IcebenchError(f"table {table.name()} has no catalog for Iceberg Java to commit through")
    if shutil.which("java") is None:
        raise IcebenchError("java is not installed (make install puts it there)")
    files = [_data_file_json(table, data_file) for data_file in data_files]
    request = {
        "catalog": java_catalog_properties(table.catalog, table),
        "table": list(table.name()),
        "properties": properties or {},
        "files": files,
    }
    command = [
        "java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", classpath(), APPEND_CLASS,
    ]  # fmt: skip
    done = subprocess.run(
        guarded(command), input=json.dumps(request).encode(), capture_output=True, timeout=APPEND_TIMEOUT_S
    )
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    answer = json.loads(lines[-1]) if lines else {"ok": False, "error": f"exit code {done.returncode}"}
    if not answer.get("ok"):
        name = ".".join(table.name())
        raise IcebenchError(f"Iceberg Java could not append {len(files)} files to {name}: {answer['error']}")
    return table.refresh()


def _data_file_json(table: Table, data_file: DataFile) -> dict[str, Any]:
    partition_type = table.spec().partition_type(table.schema())
    partition = [
        None if value is None else _b64(to_bytes(field.field_type, value))
        for field, value in zip(partition_type.fields, data_file.partition, strict=True)
    ]
    return {
        "path": data_file.file_path,
        "size": data_file.file_size_in_bytes,
        "records": data_file.record_count,
        "partition": partition,
        "column_sizes": data_file.column_sizes,
        "value_counts": data_file.value_counts,
        "null_value_counts": data_file.null_value_counts,
        "nan_value_counts": data_file.nan_value_counts,
        "lower_bounds": {k: _b64(v) for k, v in (data_file.lower_bounds or {}).items()},
        "upper_bounds": {k: _b64(v) for k, v in (data_file.upper_bounds or {}).items()},
        "split_offsets": data_file.split_offsets or [],
    }


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode()
