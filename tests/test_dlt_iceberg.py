"""dlt-iceberg (its own environment: dlt 1.20 and a pyiceberg fork) on the REST stack, and the
writers that say why a release cannot write here (Writer.unavailable)."""

from importlib.metadata import version

import pytest

from harness.engines.writers import Writer, get_writer, writers
from harness.engines.writers.pyiceberg_table import PyicebergTable
from harness.run.runner import Runner, RunPlan
from harness.services.envs import pinned_versions
from harness.services.stacks.embedded import EmbeddedStack
from harness.services.stacks.local_services import LocalServicesStack
from reports.summary import unsupported_rows
from scenarios import scenarios


def tiny(scenario: str, writer: str, sets) -> RunPlan:
    return RunPlan(scenario, writer, "tiny", sets, 2_000, cap_bytes=1 << 30)


def test_dlt_iceberg_refuses_sql_catalogs_with_the_reason():
    """It opens every SQL catalog as 'dlt_catalog': on the embedded stack it would write a second
    table beside the run's (seen: two tables' metadata in one folder)."""
    writer = get_writer("dlt-iceberg")
    assert "'dlt_catalog'" in writer.supports_catalog(EmbeddedStack.catalog_shape)
    assert writer.supports_catalog(LocalServicesStack.catalog_shape) is None


def test_dlt_iceberg_append_is_one_commit_with_its_own_versions(services_runner, tiny_sets):
    record = services_runner.run(tiny("append", "dlt-iceberg", tiny_sets))
    assert record.status == "ok" and record.verdict.passed, record.verdict
    assert (record.snapshots_added, record.metadata_files) == (1, 1)
    # What the worker imported in its environment, not the main environment's dlt 1.31.
    assert pinned_versions(get_writer("dlt-iceberg").environment).items() <= record.versions.items()
    assert record.versions["sidequery-pyiceberg"].startswith("0.12.0")


def test_dlt_iceberg_upsert_writes_equality_deletes_judged_by_a_capable_reader_by_default(
    services_runner, tiny_sets
):
    """Its merge is an equality-delete upsert in one snapshot. The oracle's pyiceberg 0.12 cannot
    apply the deletes: without --verify-with the fork's reader (the only capable one on REST) is
    chosen and judges the rows, as when asked for."""
    record = services_runner.run(tiny("upsert", "dlt-iceberg", tiny_sets))
    assert record.status == "ok", record.error
    assert record.verdict.passed, record.verdict.failed
    assert record.verdict.judged_by == "sidequery-pyiceberg" and record.snapshots_added == 1
    assert record.verifier_peak_rss_bytes and record.verify_peak_rss_bytes >= record.verifier_peak_rss_bytes
    judged = services_runner.settings.model_copy(update={"verify_with": "sidequery-pyiceberg"})
    runner = Runner(judged, services_runner.store, services_runner.stack)
    record = runner.run(tiny("upsert", "dlt-iceberg", tiny_sets))
    assert record.verdict.passed, record.verdict.failed
    assert record.verdict.judged_by == "sidequery-pyiceberg"


def test_dlt_iceberg_replace_drops_and_recreates_the_table(services_runner, tiny_sets):
    """dlt's truncate-and-insert: dlt-iceberg drops the table without purging it and creates it
    anew. The rows are right, but the old files are orphaned and the totals restart."""
    record = services_runner.run(tiny("replace", "dlt-iceberg", tiny_sets))
    checks = {check.name: check for check in record.verdict.checks}
    assert checks["content_checksum"].passed and checks["row_count"].passed
    assert not checks["no_orphans_after_success"].passed
    assert "initial-base-part-00000.parquet" in checks["no_orphans_after_success"].reason
    assert not checks["snapshot_summary_true"].passed


class CannotWrite(PyicebergTable):
    name = "cannot-write"

    @classmethod
    def unavailable(cls) -> str | None:
        return "its library ships no write path"


@pytest.fixture
def cannot_write(monkeypatch):
    monkeypatch.setitem(writers(), CannotWrite.name, CannotWrite)
    return CannotWrite


def test_an_unavailable_writer_is_unsupported_in_every_scenario_with_its_reason(
    runner, tiny_sets, cannot_write
):
    records = [runner.run(tiny(scenario, cannot_write.name, tiny_sets)) for scenario in scenarios()]
    assert {record.status for record in records} == {"unsupported"}
    assert {record.error for record in records} == {
        "cannot-write does not support writing: its library ships no write path"
    }
    assert not list(runner.store.folder.glob("work/*-cannot-write"))  # nothing prepared for it
    # The report says why, once for the writer.
    assert unsupported_rows(records) == [["cannot-write", ", ".join(scenarios()), records[0].error]]


def test_only_writers_with_their_own_unavailable_are_asked():
    asked = {name for name, writer in writers().items() if writer.asks_availability()}
    assert asked == {"dlt", "duckdb"}  # a release may lack what the run needs (docs/versions.md)
    assert not Writer.asks_availability() and CannotWrite.asks_availability()


def test_a_duckdb_release_without_extension_wheels_cannot_write_here(monkeypatch):
    """DuckDB would download them at run time; PyPI has none for 2.0 (seen with --duckdb 2.0.0)."""
    import duckdb

    assert get_writer("duckdb").unavailable() is None  # 1.5.5 and its wheels
    monkeypatch.setattr(duckdb, "__version__", "2.0.0")
    reason = get_writer("duckdb").unavailable()
    assert "ships no extension for duckdb 2.0.0" in reason and "PyPI has no duckdb-extension-*" in reason


def test_a_dlt_release_without_iceberg_catalog_cannot_load_the_runs_table(monkeypatch):
    """dlt 1.20 registers its tables in an ephemeral catalog of its own: the run's stayed empty."""
    from dlt.common.libs import pyiceberg as dlt_pyiceberg

    assert get_writer("dlt").unavailable() is None
    monkeypatch.delattr(dlt_pyiceberg, "get_catalog")
    reason = get_writer("dlt").unavailable()
    assert reason == (
        f"dlt {version('dlt')} has no iceberg_catalog setting: it registers its tables in an "
        "ephemeral catalog of its own, never in the run's"
    )
    assert get_writer("dlt-iceberg").unavailable() is None  # its destination opens the catalog itself
