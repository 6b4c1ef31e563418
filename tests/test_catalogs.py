"""The catalog axis of local-services (--catalog): SeaweedFS's own Iceberg REST catalog beside Apache
Iceberg's REST fixture. Each keeps both appends of a race or fails one cleanly; Spark writes through
each (SigV4-signed requests for SeaweedFS's), its S3 requests counted either way."""

from collections.abc import Iterator

import pytest

from harness.base.results import ResultsStore
from harness.base.settings import Settings
from harness.cli import main
from harness.model import run_key
from harness.run.runner import Runner, RunPlan
from harness.services.s3_counter import COUNTER_BINARY
from harness.services.stacks import started
from harness.services.stacks.local_services import CATALOGS

pytestmark = pytest.mark.skipif(not COUNTER_BINARY.is_file(), reason="run make s3-counter")


@pytest.fixture(scope="module", params=CATALOGS)
def catalog_runner(settings: Settings, request: pytest.FixtureRequest) -> Iterator[Runner]:
    """A runner on local-services with each catalog in turn, up for its tests."""
    on_catalog = settings.model_copy(update={"stack": "local-services", "catalog": request.param})
    store = ResultsStore(on_catalog.results_dir)
    with started(on_catalog, store.folder / "services") as stack:
        yield Runner(on_catalog, store, stack)


def test_a_race_of_two_appends_keeps_both_or_fails_one_cleanly(
    catalog_runner: Runner, tiny_sets, verdict_passed
):
    plan = RunPlan("concurrent-writers", "pyiceberg-table", "tiny", tiny_sets, 2_000, cap_bytes=1 << 30)
    record = catalog_runner.run(plan)
    # The loser of a compare-and-swap may have written a metadata file before it lost: timing.
    assert verdict_passed(record), (record.error, record.verdict)
    assert len(record.workers) == 2
    # Both landed (pyiceberg retried the loser's commit), or the loser failed and left nothing.
    assert all(w.status == "ok" for w in record.workers) or record.status == "error"


def test_spark_upserts_through_the_catalog_its_requests_counted(catalog_runner: Runner, tiny_sets):
    record = catalog_runner.run(RunPlan("upsert", "spark", "tiny", tiny_sets, 2_000, cap_bytes=2 << 30))
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    assert record.status == "ok" and record.verdict.passed, (record.error, failed)
    assert record.write_requests and record.object_store_bytes["in"] > 0  # no client bypassed the counter
    assert record.versions["iceberg-spark-runtime"]
    default = catalog_runner.settings.catalog == CATALOGS[0]
    assert record.catalog == (None if default else catalog_runner.settings.catalog)
    assert ("seaweedfs" in run_key(record).text) is not default
    assert "SeaweedFS" in record.services["object store"]


def test_a_catalog_of_local_services_is_refused_elsewhere(capsys):
    code = main(["run", "--scenario", "append", "--writer", "pyiceberg-table", "--catalog", "seaweedfs"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "--catalog seaweedfs is a catalog of the local-services stack" in err
