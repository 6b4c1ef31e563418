"""The same scenarios through S3 (SeaweedFS) and a real Iceberg REST catalog server over HTTP on loopback."""

import ipaddress
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import psutil
import pyarrow as pa
import pytest
from conftest import RACE_DECIDES
from pyarrow.fs import FileSelector, FileType

from harness.base.results import ResultsStore
from harness.engines.writers import writers
from harness.run.runner import Runner, RunPlan
from harness.services.envs import PYICEBERG_ALONE
from harness.services.processes import EPHEMERAL_RANGE
from harness.services.stacks import started
from harness.services.stacks.base import CATALOG_TOKEN_VARIABLE
from harness.services.stacks.local_services import LocalServicesStack
from scenarios import scenarios

SERVICE_MARKERS = ("IcebenchRestServer",)  # besides SeaweedFS's `weed`, known by its name


# Spark here costs a JVM per run (~25 s): its operations, its race and the row-level modes' upserts
# are in `make test`; its faults, bad sources and traps only in `make test-all` (marked slow).
SPARK_CORE = {
    *(("spark", name) for name in ("append", "replace", "upsert", "concurrent-writers")),
    ("spark-cow", "upsert"),
    ("spark-mor", "upsert"),
}


# A trap (a killed writer, a broken source) tests what a failed write leaves in the object store:
# in `make test` for one writer per engine, and for the two ways pyiceberg's strategies write
# (pyiceberg writes the files; the strategy writes them and adds them). The other pyiceberg
# strategies share that IO on S3: their traps here are in `make test-all` (tests/test_faults.py has
# them on the embedded stack).
TRAPS = ("crash-", "bad-source-")
PYICEBERG_TRAPPED = ("pyiceberg-table", "pyiceberg-add-files")


def _slow(writer: str, scenario: str) -> bool:
    if writer.startswith("spark"):
        return (writer, scenario) not in SPARK_CORE
    trap = scenario.startswith(TRAPS)
    return trap and tuple(writers()[writer].libraries) == PYICEBERG_ALONE and writer not in PYICEBERG_TRAPPED


def scenario_writer_pairs() -> Iterator[object]:
    for scenario in scenarios():
        for writer in writers():
            if "ray" in writers()[writer].libraries:  # a Ray cluster per run: tests/test_ray_writers.py
                continue
            marks = [pytest.mark.slow] if _slow(writer, scenario) else []
            yield pytest.param(scenario, writer, marks=marks, id=f"{writer}-{scenario}")


@pytest.mark.parametrize(("scenario", "writer"), list(scenario_writer_pairs()))
def test_same_verdict_as_embedded(
    services_runner, tiny_sets, scenario, writer, expected_outcome, verdict_passed
):
    record = services_runner.run(RunPlan(scenario, writer, "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    status, passed = expected_outcome(scenario, writer, "local-services")
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    assert record.stack == "local-services"
    assert record.status == status or (status == RACE_DECIDES and record.status in ("ok", "error")), (
        record.error,
        failed,
    )
    if passed is not None:
        assert verdict_passed(record) is passed, failed


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)  # Java reports IPv4 binds as ::ffff:127.0.0.1
    return (mapped or address).is_loopback


def is_service(process: psutil.Process) -> bool:
    try:
        command = " ".join(process.cmdline())
        return process.name() == "weed" or any(marker in command for marker in SERVICE_MARKERS)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):  # another child of the suite, just ended
        return False


def service_processes() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if is_service(p)]


def test_services_listen_on_loopback_only_stop_afterwards_and_never_leak_secrets(
    services_settings, tiny_sets, tmp_path
):
    settings = services_settings.model_copy(update={"results_dir": tmp_path / "results"})
    store = ResultsStore(settings.results_dir)
    already_running = {p.pid for p in service_processes()}  # the module's own services
    with started(settings, store.folder / "services") as stack:
        assert isinstance(stack, LocalServicesStack)
        processes = [p for p in service_processes() if p.pid not in already_running]
        assert len(processes) == 2
        listening = [
            c.laddr
            for p in processes
            for c in p.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening and all(is_loopback(address.ip) for address in listening), listening
        # Below the ephemeral range: no outgoing connection made while they start can take their ports.
        ephemeral_low = int(EPHEMERAL_RANGE.read_text().split()[0])
        assert all(address.port < ephemeral_low for address in listening), listening
        runner = Runner(settings, store, stack)
        # dlt, polars and DuckDB as well: dlt's S3 filesystem destination and polars' object store
        # (given the table's S3 properties) must take the keys from the environment too; DuckDB
        # gets the keys and the token as secrets in its own SQL, dlt-iceberg's destination the
        # token as its setting.
        for scenario, writer in (
            ("append", "pyiceberg-add-files"),
            ("upsert", "dlt"),
            ("replace", "polars-sink"),
            ("upsert", "duckdb"),
            ("append", "dlt-iceberg"),
        ):
            record = runner.run(RunPlan(scenario, writer, "tiny", tiny_sets, 5_000, cap_bytes=1 << 30))
            assert record.verdict.passed, (writer, record.error)
        # Released runs leave nothing: not their tables, not what dlt kept beside them.
        bucket = stack.endpoint.filesystem().get_file_info(
            FileSelector(stack.endpoint.bucket, recursive=True)
        )
        assert not [info.path for info in bucket if info.type == FileType.File]
        secrets = (
            stack.endpoint.access_key_id,
            stack.endpoint.secret_access_key,
            os.environ[CATALOG_TOKEN_VARIABLE],
        )
        # argv is readable by every local user (ps): the servers get their secrets another way.
        command_lines = [" ".join(p.cmdline()) for p in processes]
        assert not any(secret in line for secret in secrets for line in command_lines)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)
    assert (store.folder / "services" / "rest-catalog.log").stat().st_size > 0
    for path in store.folder.rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            assert not any(secret.encode() in text for secret in secrets), f"a credential leaked into {path}"


# DuckDB too: it attaches the catalog itself, with the token and S3 keys from the same environment.
@pytest.mark.parametrize(("scenario", "writer"), [("replace", "pyiceberg-txn-batches"), ("upsert", "duckdb")])
def test_external_stack_reaches_an_existing_catalog_and_s3(
    services_runner, tiny_sets, tmp_path, scenario, writer
):
    # The local services stand in for "your" REST catalog and S3; credentials come from the
    # environment the running stack set, exactly as a user's would.
    running = services_runner.stack
    settings = services_runner.settings.model_copy(update={
        "stack": "external", "catalog_uri": running.catalog_uri, "s3_endpoint": running.endpoint.endpoint_url,
        "results_dir": tmp_path / "results"})  # fmt: skip
    store = ResultsStore(settings.results_dir)
    with started(settings, store.folder / "services") as stack:
        record = Runner(settings, store, stack).run(
            RunPlan(scenario, writer, "tiny", tiny_sets, 5_000, cap_bytes=1 << 30)
        )
    assert record.stack == "external" and record.verdict.passed, record.verdict
    assert not list((store.folder / "services").glob("*.log"))  # nothing was started


def test_release_removes_every_table_of_the_namespace_and_its_folder(services_runner, tmp_path):
    """Two tables in one run namespace, and a file beside them: the namespace folder goes only
    after both tables are dropped (deleting it earlier would take the second table's metadata)."""
    stack = services_runner.stack
    run = stack.catalog_for_run(tmp_path, "purge_two_tables")
    catalog = run.open()
    catalog.create_namespace(run.namespace)
    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    for name in ("first", "second"):
        catalog.create_table(f"{run.namespace}.{name}", schema=rows.schema).append(rows)
    table_folder = catalog.load_table(f"{run.namespace}.first").location()
    beside = f"{table_folder.rsplit('/', 1)[0]}/dlt/state.json".removeprefix("s3://")
    with stack.endpoint.filesystem().open_output_stream(beside) as out:
        out.write(b"{}")

    stack.release(run, keep=False)

    assert run.namespace not in [ns[-1] for ns in catalog.list_namespaces()]
    bucket = stack.endpoint.filesystem().get_file_info(FileSelector(stack.endpoint.bucket, recursive=True))
    assert not [info.path for info in bucket if info.type == FileType.File and run.namespace in info.path]


def test_release_gives_the_space_of_a_runs_files_back(services_runner, tmp_path):
    """SeaweedFS keeps a deleted object's bytes in its volume until a vacuum (every 14 minutes of
    its own): each run's release asks for one, or a long matrix at `wide` fills every volume and each
    write gets `500: No writable volumes` (seen 2026-11-28 after ~20 runs). The filer hands the
    deleted chunks over from a queue, so a run's space is back by the next run's release at the
    latest: here the next runs are empty ones, released until the space is back (a minute at most)."""
    stack = services_runner.stack
    volumes = services_runner.store.folder / "services" / "s3-seaweedfs"
    run = stack.catalog_for_run(tmp_path, "reclaimed")
    catalog = run.open()
    catalog.create_namespace(run.namespace)
    blobs = pa.table({"blob": pa.array([os.urandom(2**20) for _ in range(64)], pa.binary())})
    catalog.create_table(f"{run.namespace}.big", schema=blobs.schema).append(blobs)
    written = _folder_bytes(volumes)

    stack.release(run, keep=False)
    deadline = time.monotonic() + 60
    while written - _folder_bytes(volumes) <= 48 * 2**20 and time.monotonic() < deadline:
        time.sleep(1)
        stack.release(stack.catalog_for_run(tmp_path, "next"), keep=False)  # a run that wrote nothing

    left = _folder_bytes(volumes)
    assert written - left > 48 * 2**20, (written, left)


def _folder_bytes(folder):
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def test_every_transaction_the_catalog_accepts_lands(services_runner, tmp_path):
    """Concurrent `/v1/transactions/commit` requests (DuckDB commits this way), each setting its
    own table property: every one answered with success (the spec's 204; Iceberg's fixture
    servlet answers 200) must be in the table. A lost compare-and-swap must
    be retried with the change re-applied, or refused, never answered with success and dropped."""
    stack = services_runner.stack
    run = stack.catalog_for_run(tmp_path, "concurrent_transactions")
    catalog = run.open()
    catalog.create_namespace(run.namespace)
    catalog.create_table(f"{run.namespace}.t", schema=pa.schema([pa.field("id", pa.int64())]))
    token = os.environ[CATALOG_TOKEN_VARIABLE]

    def commit(index: int) -> int:
        change = {
            "identifier": {"namespace": [run.namespace], "name": "t"},
            "requirements": [],
            "updates": [{"action": "set-properties", "updates": {f"writer-{index}": "landed"}}],
        }
        request = urllib.request.Request(
            f"{stack.catalog_uri}/v1/transactions/commit",
            data=json.dumps({"table-changes": [change]}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status
        except urllib.error.HTTPError as refused:  # 409: the retries ran out, nothing committed
            return refused.code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(commit, range(32)))

    succeeded = [i for i, status in enumerate(statuses) if status in (200, 204)]
    assert set(statuses) <= {200, 204, 409} and len(succeeded) >= 8, statuses
    properties = catalog.load_table(f"{run.namespace}.t").properties
    landed = sorted(int(k.removeprefix("writer-")) for k in properties if k.startswith("writer-"))
    assert landed == succeeded
    stack.release(run, keep=False)
