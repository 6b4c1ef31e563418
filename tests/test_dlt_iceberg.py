"""dlt-iceberg (its own environment: dlt 1.20 and a pyiceberg fork) on the REST stack, and the
iceberg-rust row, whose writer says why it cannot write (Writer.unavailable)."""

import sys
from importlib.metadata import version
from types import ModuleType

import pytest

from harness.engines.availability import unavailable_in
from harness.engines.writers import Writer, get_writer, iceberg_rust, writers
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
    assert asked == {"iceberg-rust"}
    assert not Writer.asks_availability() and CannotWrite.asks_availability()


def test_iceberg_rust_is_asked_in_its_own_environment_and_names_the_version(runner, tiny_sets):
    writer = get_writer("iceberg-rust")
    python = runner._worker_python(writer)
    reason = unavailable_in(python, writer.name)
    assert reason.startswith("pyiceberg-core 0.11.0 (iceberg-rust's Python binding) exposes no writer")
    assert "datafusion.IcebergDataFusionTable" in reason  # what it does expose
    # The main environment's binding is the pyiceberg extra's (partition transforms), not the one asked.
    main_binding = version("pyiceberg-core")
    assert main_binding != "0.11.0" and writer.unavailable().startswith(f"pyiceberg-core {main_binding} ")
    record = runner.run(tiny("upsert", writer.name, tiny_sets))
    assert (record.status, record.error) == (
        "unsupported",
        f"iceberg-rust does not support writing: {reason}",
    )
    assert record.versions["pyiceberg-core"] == "0.11.0"


def test_iceberg_rust_names_a_write_entry_point_once_the_binding_has_one(monkeypatch):
    binding = ModuleType(iceberg_rust.BINDING)
    binding.transaction = ModuleType("transaction")  # type: ignore[attr-defined]
    binding.transaction.Transaction = type("Transaction", (), {"commit": lambda self: None})  # type: ignore[attr-defined]
    binding.__all__ = ["transaction"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, iceberg_rust.BINDING, binding)
    monkeypatch.setattr(iceberg_rust, "version", lambda _: "0.99.0")
    reason = get_writer("iceberg-rust").unavailable()
    assert reason.startswith(
        "pyiceberg-core 0.99.0 exposes transaction.Transaction, transaction.Transaction.commit, which "
        "this writer does not drive yet"
    )
