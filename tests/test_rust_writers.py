"""The Rust worker (rust/): iceberg-rust's writer stack and DataFusion's INSERT INTO, each a
worker in another language speaking the Python workers' contract, judged by the same oracle."""

import pytest

from harness.base.errors import IcebenchError
from harness.cli.main import main
from harness.engines.writers import writers
from harness.model import Operation
from harness.run.runner import RunPlan
from harness.services import rust_worker
from scenarios import get_scenario

RUST_WRITERS = ("iceberg-rust", "iceberg-rust-datafusion")


def plan(scenario: str, writer: str, sets) -> RunPlan:
    return RunPlan(scenario, writer, "tiny", sets, 5_000, cap_bytes=1 << 30)


def test_the_worker_does_what_the_writer_modules_declare():
    described = rust_worker.describe(rust_worker.worker_binary())
    for name in RUST_WRITERS:
        assert described["operations"][name] == [str(op) for op in writers()[name].operations]
    assert described["versions"]["iceberg-rust"] == rust_worker.pinned_version()
    assert {"iceberg-datafusion", "datafusion", "parquet-rs"} <= set(described["versions"])
    # The profile as cargo built it, not as asked: `make test` asks for `quick`.
    assert described["versions"]["rust-build"].startswith(f"{rust_worker.profile()} (opt-level ")


def test_a_profile_rust_toml_does_not_declare_is_refused_naming_it(monkeypatch):
    monkeypatch.setenv(rust_worker.PROFILE_VARIABLE, "fastest")
    with pytest.raises(IcebenchError, match=r"ICEBENCH_RUST_PROFILE=fastest: .* no such cargo profile "):
        rust_worker.binary_path()


def test_writers_lists_both_with_the_upstream_issue_of_what_they_lack(capsys, cli_settings):
    assert main(["writers"]) == 0
    out = capsys.readouterr().out
    rows = [
        line
        for line in out.splitlines()
        if line.startswith(("│ iceberg-rust ", "│ iceberg-rust-datafusion "))
    ]
    assert len(rows) == 2 and all(row.count("yes") == 4 for row in rows), rows  # append, 3 stacks
    assert "replace: iceberg-rust has only fast append" in out
    assert "apache/iceberg-rust#2186" in out


@pytest.mark.parametrize("writer", RUST_WRITERS)
def test_append_on_local_services_passes_the_oracle(services_runner, tiny_sets, writer):
    record = services_runner.run(plan("append", writer, tiny_sets))
    assert record.status == "ok", record.error
    assert record.verdict.passed, [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    assert record.versions["iceberg-rust"] == rust_worker.pinned_version()
    assert record.object_store_requests and record.step_latencies_s and record.commit_latencies_s
    assert record.snapshots_added == 1 and record.metadata_files == 1


@pytest.mark.parametrize("scenario", ["replace", "upsert"])
def test_what_the_crate_lacks_is_unsupported_naming_the_upstream_issue(runner, tiny_sets, scenario):
    record = runner.run(plan(scenario, "iceberg-rust", tiny_sets))
    assert record.status == "unsupported"
    assert "apache/iceberg-rust#2186" in record.error, record.error
    assert not writers()["iceberg-rust"].supports(Operation(get_scenario(scenario).operation))


def test_a_kill_before_its_commit_leaves_the_table_at_its_previous_snapshot(runner, tiny_sets):
    record = runner.run(plan("crash-before-commit", "iceberg-rust", tiny_sets))
    assert record.status == "error" and "killed by SIGKILL at before-commit" in record.error, record.error
    assert record.verdict.passed, [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    assert record.snapshots_added == 0


def test_an_unbuilt_worker_is_the_runs_error_naming_the_fix(runner, tiny_sets, monkeypatch, tmp_path):
    monkeypatch.setenv(rust_worker.CACHE_VARIABLE, str(tmp_path))
    record = runner.run(plan("append", "iceberg-rust", tiny_sets))
    assert record.status == "error" and "not built: `make bench RUST=1` builds it" in record.error, (
        record.error
    )


def test_a_release_the_worker_cannot_build_with_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv(rust_worker.CACHE_VARIABLE, str(tmp_path))
    with pytest.raises(IcebenchError, match=r"does not build with iceberg-rust 0\.0\.1: error"):
        rust_worker.build("0.0.1")


@pytest.mark.parametrize("writer", RUST_WRITERS)
def test_a_commit_race_keeps_both_appends_and_only_a_retry_strands_files(services_runner, tiny_sets, writer):
    record = services_runner.run(plan("concurrent-writers", writer, tiny_sets))
    assert record.status == "ok" and [w.status for w in record.workers] == ["ok", "ok"], record.error
    failed = {check.name: check for check in record.verdict.failed}
    # Both appends land whoever commits second (iceberg-rust re-applies its fast append on the
    # new snapshot). What may fail is no_orphans_after_success: the catalog's metadata file of the
    # attempt that lost its compare-and-swap, and iceberg-rust's own leftovers of that attempt, a
    # manifest and a manifest list each (Java's SnapshotProducer deletes them after a retry).
    assert set(failed) <= {"no_orphans_after_success"}, [c.reason for c in failed.values()]
    if failed:
        found = failed["no_orphans_after_success"].actual
        assert (found["files"] - found["lost_swap_metadata"]) % 2 == 0, failed[
            "no_orphans_after_success"
        ].reason
