"""The catalog axis of local-services (--catalog): SeaweedFS's own Iceberg REST catalog beside Apache
Iceberg's REST fixture. Each admits only the run's credentials, keeps both appends of a race or fails
one cleanly; Spark writes through each (SigV4-signed requests for SeaweedFS's), its S3 requests
counted either way."""

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from harness.base.config_file import CATALOGS
from harness.base.results import ResultsStore
from harness.base.settings import Settings
from harness.cli.main import main
from harness.model import run_key
from harness.run.runner import Runner, RunPlan
from harness.services.s3_counter import COUNTER_BINARY
from harness.services.stacks import started
from harness.services.stacks.base import CATALOG_TOKEN_VARIABLE

pytestmark = pytest.mark.skipif(not COUNTER_BINARY.is_file(), reason="run make s3-counter")


@pytest.fixture(scope="module", params=CATALOGS)
def catalog_runner(settings: Settings, request: pytest.FixtureRequest) -> Iterator[Runner]:
    """A runner on local-services with each catalog in turn, up for its tests."""
    on_catalog = settings.model_copy(update={"stack": "local-services", "catalog": request.param})
    store = ResultsStore(on_catalog.results_dir)
    with started(on_catalog, store.folder / "services") as stack:
        yield Runner(on_catalog, store, stack)


def _answer(url: str, method: str, headers: dict[str, str], body: bytes | None) -> int:
    request = urllib.request.Request(url, method=method, headers=headers, data=body)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _signed(credentials: Credentials | None, region: str, url: str, method: str, body: bytes | None) -> dict:
    """SigV4 headers as SeaweedFS's catalog asks of its clients (signing name s3tables)."""
    request = AWSRequest(method=method, url=url, data=body, headers={"Content-Type": "application/json"})
    if credentials:
        SigV4Auth(credentials, "s3tables", region).add_auth(request)
    return dict(request.headers)


def test_each_catalog_admits_only_the_runs_credentials(catalog_runner: Runner):
    """Listing and creating namespaces without the run's credentials is refused; with them, both
    answer. The fixture asks a bearer token, SeaweedFS's catalog a SigV4 signature by the run's keys."""
    stack = catalog_runner.stack
    url = f"{stack.catalog_uri}/v1/namespaces"
    create = json.dumps({"namespace": ["intruder"]}).encode()
    keys = stack.endpoint.access_key_id, stack.endpoint.secret_access_key
    if stack.seaweed_catalog:
        region = stack.endpoint.region
        refused = [
            lambda m, b: _signed(None, region, url, m, b),
            lambda m, b: _signed(Credentials(keys[0], "wrong-secret-key"), region, url, m, b),
            lambda m, b: _signed(Credentials("AKIAUNKNOWNKEY000000", keys[1]), region, url, m, b),
        ]
        admitted = lambda m, b: _signed(Credentials(*keys), region, url, m, b)  # noqa: E731
        denial = 403
    else:
        token = os.environ[CATALOG_TOKEN_VARIABLE]
        refused = [lambda m, b: {}, lambda m, b: {"Authorization": "Bearer wrong-token"}]
        admitted = lambda m, b: {"Authorization": f"Bearer {token}"}  # noqa: E731
        denial = 401
    for headers in refused:
        assert _answer(url, "GET", headers("GET", None), None) == denial
        assert _answer(url, "POST", headers("POST", create), create) == denial
    assert "intruder" not in _namespaces(url, admitted("GET", None))  # the refused creates made nothing


def _namespaces(url: str, headers: dict[str, str]) -> set[str]:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
        return {".".join(name) for name in json.loads(response.read())["namespaces"]}


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
