"""pyiceberg-equality-delete (sidequery's pyiceberg fork, in its own environment) on `tiny`: its
upsert leaves equality deletes, which the oracle's pyiceberg cannot apply. A reader that can judges
the table (Spark, or the fork's own reader), and the verdict names it: the one asked for, else the
cheapest that can run, chosen by default; when none can, the table is unjudged (the harness's
limit), never failed; and a damaged table fails under the capable reader even where its row count
is right."""

import json
import subprocess
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from harness.base.results import ResultsStore
from harness.engines.spark import missing_jars
from harness.engines.verifiers import get_verifier
from harness.engines.writers.pyiceberg_equality_delete import SIDEQUERY_PYICEBERG
from harness.judge.oracle import capture_state, judge
from harness.run.runner import Runner, RunPlan
from harness.services.envs import installed_version, requirements_env
from harness.services.stacks.embedded import EmbeddedStack
from reports.summary import verdict_text
from reports.verdict import outcome_of, reason_of
from scenarios import get_scenario

WRITER = "pyiceberg-equality-delete"
FORK = "sidequery-pyiceberg"
DAMAGE = Path(__file__).with_name("equality_delete_damage.py")
needs_spark = pytest.mark.skipif(bool(missing_jars()), reason="Spark jars missing: run make spark-jars")
# Spark's driver heap is 60% of the cap; 1 GiB leaves too little room for the JVM.
SPARK_CAP = 2 << 30


@pytest.fixture(scope="module")
def fork_python(settings) -> Path:
    return requirements_env([SIDEQUERY_PYICEBERG], settings.data_dir.parent / "envs")


def judged_runner(settings, verify_with: str) -> Runner:
    judged = settings.model_copy(update={"verify_with": verify_with})
    return Runner(judged, ResultsStore(settings.results_dir), EmbeddedStack(judged))


def upsert(runner: Runner, sets, scenario: str = "upsert"):
    plan = RunPlan(scenario, WRITER, "tiny", sets, runner.settings.batch_rows, cap_bytes=1 << 30)
    return runner.run(plan)


def checks_of(record) -> dict:
    return {check.name: check for check in record.verdict.checks}


def test_the_fork_shadows_pyiceberg_in_its_environment_and_its_own_version_is_recorded(fork_python):
    # The main environment's pyiceberg metadata shows through the layered environment: only the
    # fork's own distribution tells which code ran.
    assert installed_version(fork_python, FORK) == "0.12.0.post2"
    assert installed_version(fork_python, "pyiceberg") == "0.12.0"
    done = subprocess.run(
        [str(fork_python), "-c", "import pyiceberg; print(pyiceberg.__version__, pyiceberg.__file__)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    version, location = done.stdout.split()
    assert version == "0.12.0.post2" and str(fork_python.parent.parent) in location


@pytest.mark.parametrize("scenario", ["upsert", "schema-evolution-upsert"])
def test_its_upsert_is_judged_by_the_forks_reader_and_the_verdict_names_it(settings, tiny_sets, scenario):
    record = upsert(judged_runner(settings, FORK), tiny_sets, scenario)
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    assert record.status == "ok", (record.error, failed)
    assert record.verdict.passed and record.verdict.judged_by == FORK, failed
    assert verdict_text(record, markup=False) == f"pass (judged by {FORK})"
    assert record.versions[FORK] == "0.12.0.post2" and "pyiceberg" not in record.versions
    assert int(record.snapshot_summary["total-equality-deletes"]) > 0
    checks = checks_of(record)
    assert checks["row_count"].passed and checks["content_checksum"].passed
    # pyiceberg reads the files, not the rows: no key check, no engines_agree, from its read
    assert not {"keys_unique", "key_set", "engines_agree"} & set(checks)
    for structure in ("data_files_exist", "manifest_stats_true", "snapshot_summary_true", "single_commit"):
        assert checks[structure].passed, structure
    assert record.metadata_files == 1 and record.snapshots_added == record.batches


def test_by_default_the_cheapest_capable_reader_is_chosen_and_named(runner, tiny_sets):
    """No --verify-with: the oracle's pyiceberg cannot apply the deletes, so the cheapest verifier
    that can (the fork's reader, one Python process) judges the rows; the writer is never failed
    for the harness's limit."""
    assert runner.settings.verify_with == "pyiceberg"
    record = upsert(runner, tiny_sets)
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    assert record.status == "ok" and record.verdict.passed, (record.error, failed)
    assert record.verdict.judged_by == FORK and record.verified_with == "pyiceberg"
    assert outcome_of(record) == "pass"
    assert checks_of(record)["row_count"].passed and checks_of(record)["content_checksum"].passed
    # The fork's read is a judging process of its own: measured, and the largest peak is recorded.
    assert record.verifier_peak_rss_bytes and record.oracle_peak_rss_bytes
    assert record.verify_peak_rss_bytes == max(record.verifier_peak_rss_bytes, record.oracle_peak_rss_bytes)


def test_when_no_capable_reader_can_run_the_table_is_unjudged_not_failed(settings, tiny_sets, monkeypatch):
    runner = judged_runner(settings, "pyiceberg")
    monkeypatch.setattr(runner, "equality_reader", lambda: "sidequery-pyiceberg: its environment: offline")
    record = upsert(runner, tiny_sets)
    assert record.status == "ok" and record.verdict.judged_by is None
    assert not record.verdict.passed and record.verdict.unjudged
    assert [check.name for check in record.verdict.failed] == ["equality_deletes_applied"]
    unread = checks_of(record)["equality_deletes_applied"]
    assert unread.harness_limit and "offline" in unread.reason and "spark" in unread.reason
    assert unread.upstream == "apache/iceberg#6568"
    assert not {"row_count", "content_checksum"} & set(checks_of(record))  # never a pass of rows unread
    assert outcome_of(record) == "unjudged" and "could not judge" in reason_of(record)
    assert verdict_text(record, markup=False) == "unjudged (equality_deletes_applied)"


@pytest.fixture
def fresh_upsert_table(tiny_sets, tmp_path):
    """The upsert scenario's table before its write, in a catalog of its own."""
    catalog = SqlCatalog(
        "icebench", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}"
    )
    scenario = get_scenario("upsert")()
    table = scenario.prepare(catalog, "bench", tiny_sets)
    return scenario, table, capture_state(table)


def damaged_verdict(
    fork_python, tiny_sets, fresh_upsert_table, damage: str, verify_with: str, equality_reader=None
):
    """Upsert with the fork, with `damage`, then the oracle's verdict through `verify_with` (and
    `equality_reader`, the runner's choice of a capable reader, where that cannot apply deletes)."""
    scenario, table, before = fresh_upsert_table
    spec = {
        "catalog": {key: str(value) for key, value in table.catalog.properties.items()},
        "table": ".".join(table.name()),
        "source": str(tiny_sets["changes"].directory),
        "damage": damage,
    }
    done = subprocess.run(
        [str(fork_python), str(DAMAGE)], input=json.dumps(spec), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    verifier = get_verifier(verify_with)
    if verifier is not None:
        verifier.python = fork_python if verifier.environment else None
    verdict, _ = judge(
        table.refresh(),
        expected=scenario.expected_after(tiny_sets),
        error=None,
        before=before,
        single_commit=False,
        verifier=verifier,
        equality_reader=equality_reader,
    )
    return verdict


@pytest.mark.parametrize("damage", ["none", "one-value-changed", "wrong-key-deleted"])
def test_a_damaged_equality_delete_table_fails_under_the_forks_reader(
    fork_python, tiny_sets, fresh_upsert_table, damage
):
    verdict = damaged_verdict(fork_python, tiny_sets, fresh_upsert_table, damage, FORK)
    checks = {check.name: check for check in verdict.checks}
    assert verdict.judged_by == FORK, [c.reason for c in verdict.failed]
    assert checks["row_count"].passed, [c.reason for c in verdict.failed]  # only the content tells
    assert checks["content_checksum"].passed is (damage == "none")
    assert verdict.passed is (damage == "none"), [c.reason for c in verdict.failed]


@pytest.mark.parametrize("damage", ["none", "wrong-key-deleted"])
def test_a_damaged_table_fails_for_real_under_the_reader_chosen_by_default(
    runner, fork_python, tiny_sets, fresh_upsert_table, damage
):
    verdict = damaged_verdict(
        fork_python, tiny_sets, fresh_upsert_table, damage, "pyiceberg", runner.equality_reader
    )
    assert verdict.judged_by == FORK and not verdict.unjudged
    assert verdict.passed is (damage == "none"), [c.reason for c in verdict.failed]
    if damage != "none":
        assert [c.name for c in verdict.failed] == ["content_checksum"]


@needs_spark
def test_spark_judges_the_upsert_and_catches_a_misapplied_delete(
    settings, fork_python, tiny_sets, fresh_upsert_table
):
    record = upsert(judged_runner(settings, "spark"), tiny_sets)
    assert record.verdict.passed and record.verdict.judged_by == "spark", record.verdict.failed
    verdict = damaged_verdict(fork_python, tiny_sets, fresh_upsert_table, "wrong-key-deleted", "spark")
    checks = {check.name: check for check in verdict.checks}
    assert verdict.judged_by == "spark" and checks["row_count"].passed
    assert not verdict.passed and [c.name for c in verdict.failed] == ["content_checksum"]


def test_on_s3_and_rest_the_forks_reader_judges_it(services_runner, tiny_sets):
    """Spark cannot read the local-services stack here; the fork's reader can, as any pyiceberg."""
    judged = services_runner.settings.model_copy(update={"verify_with": FORK})
    record = upsert(Runner(judged, services_runner.store, services_runner.stack), tiny_sets)
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed]
    assert record.stack == "local-services" and record.status == "ok", (record.error, failed)
    assert record.verdict.passed and record.verdict.judged_by == FORK, failed
    # The stack's servers are measured apart from the run (and, in a box, run beside it).
    assert set(record.service_peak_rss_bytes) == {
        "SeaweedFS S3 server",
        "S3 request counter",
        "REST catalog server",
    }
    assert min(record.service_peak_rss_bytes.values()) > 2**20  # each one's own, measured
