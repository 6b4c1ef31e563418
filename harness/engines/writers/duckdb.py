"""DuckDB 1.5 with its iceberg extension, writing through the run's REST catalog.

DuckDB attaches the catalog (`ATTACH ... (TYPE iceberg, ENDPOINT ...)`) and reads the source
parquet files itself with `read_parquet`, streaming them (no Arrow batches pass through Python).
Its `memory_limit`, half the worker's cap, bounds its buffer pool (a MERGE's join spills to a
temporary folder beyond it); the buffers of its parquet and S3 writers lie outside that pool.
Append is one INSERT, replace `DELETE FROM` (position deletes for every old row: the old data
files stay listed) plus `INSERT`, upsert one `MERGE INTO` (matched rows as position deletes plus
their new versions, then the new keys). Each runs inside one DuckDB transaction: the statements
write the data and delete files (the step), `COMMIT` sends every snapshot they made in one
`POST /v1/transactions/commit` (the commit). A failure before COMMIT commits nothing; DuckDB
does not retry a commit that meets a conflict (no commit retry in its iceberg extension 1.5.5).

The extensions are LOADed from the files of the PyPI packages duckdb-extension-{avro,httpfs,
iceberg}, with autoinstall and autoload off: nothing is downloaded at run time. DuckDB writes only
through a REST catalog, so the embedded stack's SQLite catalog is `unsupported`. Credentials (the
catalog's bearer token, the S3 keys) reach DuckDB as secrets in this process's memory; every
error DuckDB raises is scrubbed of them before it goes anywhere. duckdb is imported only here,
inside functions.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harness.base.errors import SourceError
from harness.base.redaction import MASK, redact
from harness.engines.writers.base import StepTimer, WriteJob, Writer

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

# In dependency order: iceberg needs avro (manifests) and httpfs (REST and S3).
EXTENSIONS = ("avro", "httpfs", "iceberg")
CATALOG_ALIAS = "icebench_catalog"
# DuckDB's buffer pool gets this share of the worker's cap (its default, 80% of the memory it sees,
# would leave nothing for the worker's Python side and DuckDB's allocations outside the pool).
MEMORY_SHARE = 0.5


def duckdb_supports(catalog_properties: dict[str, str]) -> str | None:
    """DuckDB's iceberg extension writes only through an Iceberg REST catalog."""
    if (kind := catalog_properties.get("type")) != "rest":
        return f"DuckDB's iceberg extension writes only through a REST catalog, not a {kind!r} catalog"
    if catalog_properties.get("rest.sigv4-enabled") == "true":
        return "DuckDB attaches a generic REST catalog with a token or OAuth, not SigV4 signing"
    return None


class DuckdbWriter(Writer):
    name = "duckdb"
    description = (
        "DuckDB + iceberg extension on a REST catalog: INSERT / DELETE+INSERT / MERGE INTO, one commit"
    )
    single_commit = True  # one transaction: one POST /v1/transactions/commit (replace/upsert: 2 snapshots)
    libraries = (
        "duckdb",
        "duckdb-extension-iceberg",
        "duckdb-extension-avro",
        "duckdb-extension-httpfs",
        "pyiceberg",
        "pyarrow",
    )
    consumes_batches = False  # DuckDB reads the source files itself
    pyiceberg_commits = False  # DuckDB commits on its own (no retry after a conflict)

    @classmethod
    def supports_catalog(cls, catalog_properties: dict[str, str]) -> str | None:
        return duckdb_supports(catalog_properties)

    @classmethod
    def unavailable(cls) -> str | None:
        """Without the extension wheels of its own version DuckDB would download the extensions
        from extensions.duckdb.org at run time, which these machines do not reach (and a benchmark
        must not depend on): a DuckDB release PyPI has no extension wheels for cannot write here."""
        try:
            extension_files()
        except DuckdbFailed as exc:
            return (
                f"{exc} (PyPI has no duckdb-extension-* wheels for it; DuckDB would fetch them at run time)"
            )
        return None

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        with duckdb_session(job, timer) as session:
            session.transaction(timer, [session.insert(job)])

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        with duckdb_session(job, timer) as session:
            session.transaction(timer, [f"DELETE FROM {session.target}", session.insert(job)])

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        with duckdb_session(job, timer) as session:
            on = " AND ".join(f"target.{quoted(key)} = source.{quoted(key)}" for key in job.key_columns)
            merge = (
                f"MERGE INTO {session.target} AS target USING ({session.source_query(job)}) AS source "
                f"ON {on} WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )
            session.transaction(timer, [merge])


class DuckdbFailed(RuntimeError):
    """What DuckDB raised, as one line without the statement it echoes and without credentials."""

    def __init__(self, message: str) -> None:
        super().__init__(f"DuckDB: {message}")
        self.message = message


class DuckdbOutOfMemory(DuckdbFailed, MemoryError):
    """DuckDB ran out of its memory_limit (or the allocator failed): the run's error kind `memory`."""


def unreadable_source(path: str, message: str) -> SourceError:
    return SourceError(f"source file {path} is unreadable: {message}")


class DuckdbSession:
    """One DuckDB connection attached to the run's catalog; `target` is the job's table in it."""

    def __init__(self, connection: DuckDBPyConnection, job: WriteJob, secrets: list[str]) -> None:
        self.connection = connection
        self.secrets = secrets
        self.source_paths = [str(path) for path in job.source.paths]
        self.target = ".".join(quoted(part) for part in (CATALOG_ALIAS, *job.table.name()[-2:]))
        # The table's columns in its order: the source is projected onto them, so the by-position
        # `INSERT *` / `UPDATE SET *` of MERGE and a plain INSERT put every value in its column.
        self.columns = [field.name for field in job.table.schema().fields]

    def source_query(self, job: WriteJob) -> str:
        """The source as the table's columns (NULL for a column the source lacks); its types are the
        table's already (the worker checked), so DuckDB casts nothing. With `limit_rows`, the first
        rows in file order (DuckDB keeps insertion order by default)."""
        present = set(job.source.schema.names)
        projection = ", ".join(quoted(c) if c in present else f"NULL AS {quoted(c)}" for c in self.columns)
        files = ", ".join(literal(path) for path in self.source_paths)
        query = f"SELECT {projection} FROM read_parquet([{files}])"
        return query if job.source.limit_rows is None else f"{query} LIMIT {int(job.source.limit_rows)}"

    def insert(self, job: WriteJob) -> str:
        return f"INSERT INTO {self.target} {self.source_query(job)}"

    def transaction(self, timer: StepTimer, statements: list[str]) -> None:
        """The statements in one transaction: writing their files is a step, COMMIT the commit."""
        self.execute("BEGIN TRANSACTION")
        try:
            with timer.step():
                for statement in statements:
                    self.execute(statement)
        except DuckdbFailed as failed:
            self._rollback()
            if unreadable := self._unreadable_source(failed):
                raise unreadable from None
            raise
        except BaseException:
            self._rollback()
            raise
        with timer.commit():
            try:
                self.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def execute(self, statement: str) -> None:
        import duckdb

        try:
            self.connection.execute(statement)
        except duckdb.Error as exc:
            raise self.failure(exc) from None  # the original would carry the statement's text

    def failure(self, exc: Exception) -> Exception:
        return duckdb_failure(str(exc), self.secrets, self.source_paths)

    def _unreadable_source(self, failed: DuckdbFailed) -> SourceError | None:
        """The source file that fails a full read, once a write statement failed: DuckDB's parquet
        errors need not name the file (a corrupt page: `TProtocolException: Invalid data`). Read
        one file at a time, every column of every row hashed; only ever after a failure."""
        if isinstance(failed, MemoryError):  # no file to blame, and no memory to read one with
            return None
        for path in self.source_paths:
            try:
                self.execute(f"SELECT max(hash(source_row)) FROM read_parquet({literal(path)}) AS source_row")
            except DuckdbFailed as probe:
                return unreadable_source(path, probe.message)
        return None

    def _rollback(self) -> None:
        import duckdb

        with suppress(duckdb.Error):  # a failed COMMIT has rolled back already: nothing to undo
            self.connection.execute("ROLLBACK")


@contextmanager
def duckdb_session(job: WriteJob, timer: StepTimer) -> Iterator[DuckdbSession]:
    """A connection with the extensions loaded, the secrets made and the catalog attached (timed as
    the first step); its spill folder and the connection are gone afterwards."""
    import duckdb

    properties = {key: str(value) for key, value in job.table.catalog.properties.items()}
    spill = Path(tempfile.mkdtemp(prefix="icebench-duckdb-"))
    secrets: list[str] = []
    connection: DuckDBPyConnection | None = None
    try:
        with timer.step():
            connection = duckdb.connect(config=connection_config(job.cap_bytes, spill))
            session = DuckdbSession(connection, job, secrets)
            for path in extension_files():
                session.execute(f"LOAD {literal(str(path))}")
            attach(session, properties, secrets)
        yield session
    finally:
        if connection is not None:
            connection.close()
        shutil.rmtree(spill, ignore_errors=True)


def connection_config(cap_bytes: int | None, spill: Path) -> dict[str, str | bool]:
    config: dict[str, str | bool] = {
        "autoinstall_known_extensions": False,  # no download at run time: the wheels' files only
        "autoload_known_extensions": False,
        "temp_directory": str(spill),
    }
    if cap_bytes:  # DuckDB would take 80% of the machine's (or cgroup's) memory otherwise
        config["memory_limit"] = f"{int(cap_bytes * MEMORY_SHARE) // 2**20}MiB"
    return config


def extension_files() -> list[Path]:
    """The extension files the duckdb-extension-* wheels ship for this duckdb version (their
    packages hold them at extensions/v<duckdb version>/<name>.duckdb_extension)."""
    import duckdb

    found = []
    version = duckdb.__version__
    for name in EXTENSIONS:
        try:
            package = files(f"duckdb_extension_{name}")
        except ModuleNotFoundError:
            raise DuckdbFailed(
                f"no {name} extension: pip install duckdb-extension-{name}=={version}"
            ) from None
        path = Path(str(package / "extensions" / f"v{version}" / f"{name}.duckdb_extension"))
        if not path.is_file():
            raise DuckdbFailed(f"duckdb-extension-{name} ships no extension for duckdb {version}: {path}")
        found.append(path)
    return found


def attach(session: DuckdbSession, properties: dict[str, str], secrets: list[str]) -> None:
    """S3 and catalog secrets, then ATTACH. The secrets list is filled first, so that even an error
    of the statement that carries them is scrubbed."""
    s3 = s3_secret_options(properties)
    catalog = catalog_secret_options(properties)
    sensitive = ("KEY_ID", "SECRET", "SESSION_TOKEN", "TOKEN", "CLIENT_SECRET")
    secrets.extend(value for options in (s3, catalog) for key, value in options.items() if key in sensitive)
    session.execute(f"CREATE SECRET icebench_s3 ({secret_body('s3', s3)})")
    options = {"TYPE": "iceberg", "ENDPOINT": literal(properties["uri"])}
    if catalog:
        session.execute(f"CREATE SECRET icebench_catalog ({secret_body('iceberg', catalog)})")
        options["SECRET"] = "icebench_catalog"
    else:
        options["AUTHORIZATION_TYPE"] = literal("none")
    # The S3 secret above, never credentials the catalog might vend (ours vends none; yours might).
    options["ACCESS_DELEGATION_MODE"] = literal("none")
    warehouse = literal(properties.get("warehouse", ""))
    rendered = ", ".join(f"{key} {value}" for key, value in options.items())
    session.execute(f"ATTACH {warehouse} AS {CATALOG_ALIAS} ({rendered})")


def catalog_secret_options(properties: dict[str, str]) -> dict[str, str]:
    """How DuckDB authenticates to the catalog, from pyiceberg's REST properties: a bearer `token`
    (the stacks' way), else OAuth2 client credentials (`credential` = id:secret, at
    `oauth2-server-uri`, by default the catalog's own /v1/oauth/tokens); empty: no authorization."""
    if token := properties.get("token"):
        return {"TOKEN": token}
    if credential := properties.get("credential"):
        client_id, _, client_secret = credential.rpartition(":")
        server = properties.get("oauth2-server-uri") or f"{properties['uri'].rstrip('/')}/v1/oauth/tokens"
        return {"CLIENT_ID": client_id, "CLIENT_SECRET": client_secret, "OAUTH2_SERVER_URI": server}
    return {}


def s3_secret_options(properties: dict[str, str]) -> dict[str, str]:
    """DuckDB's S3 settings from the catalog's FileIO properties; the keys from those properties or,
    as every other client here takes them, from the AWS_* environment the stack set."""
    options = {
        "REGION": properties.get("s3.region") or os.environ.get("AWS_REGION", ""),
        "KEY_ID": properties.get("s3.access-key-id") or os.environ.get("AWS_ACCESS_KEY_ID", ""),
        "SECRET": properties.get("s3.secret-access-key") or os.environ.get("AWS_SECRET_ACCESS_KEY", ""),
        "SESSION_TOKEN": properties.get("s3.session-token") or os.environ.get("AWS_SESSION_TOKEN", ""),
    }
    if endpoint := properties.get("s3.endpoint"):
        parts = urlsplit(endpoint)
        options["ENDPOINT"] = parts.netloc or endpoint  # DuckDB takes host:port, the scheme apart
        options["USE_SSL"] = "false" if parts.scheme == "http" else "true"
    if properties.get("s3.path-style-access", "").lower() == "true":
        options["URL_STYLE"] = "path"
    return {key: value for key, value in options.items() if value}


def secret_body(kind: str, options: dict[str, str]) -> str:
    unquoted = {"USE_SSL"}  # a boolean
    rendered = [f"{key} {value if key in unquoted else literal(value)}" for key, value in options.items()]
    return ", ".join([f"TYPE {kind}", *rendered])


def duckdb_failure(text: str, secrets: list[str], source_paths: list[str]) -> Exception:
    """What DuckDB raised as ours: a source file it names as unreadable is the SourceError every
    writer gives, running out of memory a MemoryError (the run's `memory` kind), anything else
    DuckDB's message on one line."""
    message = plain_message(text, secrets)
    for path in source_paths:
        if path in message:
            return unreadable_source(path, message)
    return DuckdbOutOfMemory(message) if message.startswith("Out of Memory") else DuckdbFailed(message)


def plain_message(text: str, secrets: list[str]) -> str:
    """DuckDB's message on one line: without the `LINE n: <statement>` echo and its caret line,
    every credential masked."""
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("LINE ") or set(stripped) == {"^"}:
            continue
        kept.append(stripped)
    message = " ".join(kept) or "no message"
    for secret in secrets:
        message = message.replace(secret, MASK)
    return redact(message)


def quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
