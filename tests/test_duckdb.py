"""The duckdb writer: DuckDB 1.5.5 with the iceberg extension from its PyPI wheel, writing through the
REST catalog. tests/test_local_services.py judges it in every scenario like any writer; these check
what is particular to it."""

import duckdb
import pytest

from harness.base.errors import SourceError
from harness.engines.writers import get_writer
from harness.engines.writers.duckdb import (
    EXTENSIONS,
    catalog_secret_options,
    connection_config,
    duckdb_failure,
    extension_files,
    plain_message,
    s3_secret_options,
)
from harness.run.runner import RunPlan
from harness.services.stacks import stacks

WRITER = get_writer("duckdb")


def test_duckdb_writes_through_a_rest_catalog_only():
    reasons = {name: WRITER.supports_catalog(stack.catalog_shape) for name, stack in stacks().items()}
    assert reasons["local-services"] is None and reasons["external"] is None
    assert "only through a REST catalog, not a 'sql' catalog" in reasons["embedded"]


def test_the_extensions_load_from_the_wheels_with_nothing_downloaded(tmp_path):
    paths = extension_files()
    assert [path.name for path in paths] == [f"{name}.duckdb_extension" for name in EXTENSIONS]
    assert all(f"duckdb_extension_{path.stem}" in path.parts for path in paths)
    connection = duckdb.connect(config=connection_config(1 << 30, tmp_path))
    for path in paths:
        connection.execute(f"LOAD '{path}'")
    loaded = connection.execute(
        "SELECT extension_name, installed FROM duckdb_extensions() WHERE loaded AND extension_name IN "
        "('avro', 'httpfs', 'iceberg')"
    ).fetchall()
    assert sorted(loaded) == [(name, False) for name in sorted(EXTENSIONS)]  # loaded, never installed
    limit = connection.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit == "512.0 MiB"  # half the cap: the rest is the worker's Python side


def test_s3_secret_takes_the_catalogs_properties_and_the_environments_keys(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "icebench-test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "icebench-test-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    properties = {"type": "rest", "uri": "http://127.0.0.1:1", "s3.endpoint": "http://127.0.0.1:2",
                  "s3.region": "us-east-1", "s3.path-style-access": "true"}  # fmt: skip
    assert s3_secret_options(properties) == {
        "REGION": "us-east-1",
        "KEY_ID": "icebench-test-key",
        "SECRET": "icebench-test-secret",
        "ENDPOINT": "127.0.0.1:2",
        "USE_SSL": "false",
        "URL_STYLE": "path",
    }
    aws = {"type": "rest", "uri": "https://catalog", "s3.region": "eu-west-1", "s3.access-key-id": "AKIAOWN"}
    options = s3_secret_options(aws)  # no endpoint: AWS itself, over TLS, virtual-hosted
    assert options["KEY_ID"] == "AKIAOWN" and "ENDPOINT" not in options and "URL_STYLE" not in options


def test_the_catalog_secret_is_the_bearer_token_or_oauth2_client_credentials():
    rest = {"type": "rest", "uri": "https://catalog/api/"}
    assert catalog_secret_options({**rest, "token": "t0k", "credential": "id:s3cr"}) == {"TOKEN": "t0k"}
    assert catalog_secret_options({**rest, "credential": "id:s3cr"}) == {
        "CLIENT_ID": "id",
        "CLIENT_SECRET": "s3cr",
        "OAUTH2_SERVER_URI": "https://catalog/api/v1/oauth/tokens",  # pyiceberg's default too
    }
    assert catalog_secret_options(rest) == {}  # ATTACH with AUTHORIZATION_TYPE 'none'


def test_a_duckdb_error_loses_the_echoed_statement_and_every_credential():
    connection = duckdb.connect()
    with pytest.raises(duckdb.Error) as raised:
        connection.execute("CREATE SECRET s (TYPE s3, KEY_ID 'AKIATEST', SECRET 'hush-hush' NONSENSE)")
    assert "hush-hush" in str(raised.value)  # DuckDB echoes the statement: this is what is removed
    message = plain_message(f"{raised.value}\nToken: bearer-hush", ["AKIATEST", "hush-hush", "bearer-hush"])
    assert "hush" not in message and "AKIATEST" not in message and "\n" not in message
    assert message.startswith("Parser Error: syntax error")


@pytest.mark.parametrize(
    ("scenario", "position_deletes"),
    [("upsert", "updated rows"), ("replace", "every old row")],
)
def test_replace_and_upsert_are_one_commit_with_position_deletes(
    services_runner, tiny_sets, scenario, position_deletes
):
    """DuckDB deletes by position deletes (DELETE FROM, even of every row, and MERGE's updates) and
    sends every snapshot of the transaction in one commit: deletes, then the rows it adds."""
    record = services_runner.run(RunPlan(scenario, "duckdb", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    assert record.status == "ok" and record.verdict.passed, record.error
    assert record.metadata_files == 1 and record.snapshots_added == 2
    assert len(record.step_latencies_s) == 2 and len(record.commit_latencies_s) == 1  # session, write
    base = tiny_sets["base"].manifest.rows
    if position_deletes == "every old row":
        expected = base
    else:
        changes = tiny_sets["changes"].manifest
        assert changes.expected_after_upsert is not None
        expected = changes.rows - (changes.expected_after_upsert.rows - base)
    assert record.snapshot_summary["total-position-deletes"] == str(expected)
    assert {library: record.versions[library] for library in WRITER.libraries if "duckdb" in library} == {
        library: "1.5.5" for library in WRITER.libraries if "duckdb" in library
    }


def test_a_row_limit_appends_the_first_rows_in_file_order(services_runner, tiny_sets):
    """The scale axis feeds a prefix of the source: DuckDB's LIMIT over read_parquet keeps file order
    (insertion order is preserved), here across the border of the set's two files."""
    plan = RunPlan("append", "duckdb", "tiny", tiny_sets, 1_000, cap_bytes=1 << 30, limit_rows=7_000)
    record = services_runner.run(plan)
    assert record.status == "ok" and record.verdict.passed, [c.reason for c in record.verdict.failed]
    assert record.rows == 7_000 and record.snapshot_summary["total-records"] == "7000"


def test_duckdb_failures_become_the_harness_kinds(tmp_path):
    """A source file named in DuckDB's message is bad input; running out of its memory limit is a
    MemoryError (the worker records the `memory` kind); the rest is DuckDB's message."""
    connection = duckdb.connect(config={"memory_limit": "20MB"})  # in memory, nowhere to spill
    with pytest.raises(duckdb.OutOfMemoryException) as raised:
        connection.execute("SELECT string_agg(i::VARCHAR, ',') FROM range(20000000) AS t(i)")
    assert isinstance(duckdb_failure(str(raised.value), [], []), MemoryError)
    source = str(tmp_path / "part-00001.parquet")
    named = duckdb_failure(f"IO Error: No magic bytes found at end of file '{source}'", [], [source])
    assert isinstance(named, SourceError) and str(named).startswith(f"source file {source} is unreadable")
    other = duckdb_failure("HTTP Error: 503", [], [source])
    assert str(other) == "DuckDB: HTTP Error: 503" and not isinstance(other, SourceError | MemoryError)
