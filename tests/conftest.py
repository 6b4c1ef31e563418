import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from generators.datasets import SET_DEPENDENCIES
from harness.base.results import ResultsStore
from harness.base.settings import Settings, load_settings
from harness.engines.writers import writers
from harness.engines.writers.base import RustWriter
from harness.run.matrix import prepare_data
from harness.run.runner import Runner
from harness.services import rust_worker
from harness.services.stacks import get_stack, started
from harness.services.stacks.embedded import EmbeddedStack
from scenarios import scenarios
from scenarios.base import DataSets

# Small batches so every streaming writer makes several steps on `tiny` (10,000 rows).
TEST_BATCH_ROWS = 2_000
# Their upsert is a copy-on-write delete plus add_files, never pyiceberg's upsert: #2467 spares them.
# The status of a race: `ok` when the second committer's retry lands, `error` when it fails cleanly.
RACE_DECIDES = "ok or error"
UPSERT_BY_ADD_FILES = {"pyiceberg-delete-add-files", "pyiceberg-rewrite-add-files"}
# Their upserts write equality deletes (merge-on-read).
EQUALITY_DELETE_UPSERTS = {"dlt-iceberg"}


@pytest.fixture(scope="session")
def icebench_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("icebench")


@pytest.fixture(scope="session")
def settings(icebench_root: Path) -> Settings:
    return load_settings(
        None,
        data_dir=icebench_root / "data",
        results_dir=icebench_root / "results",
        batch_rows=TEST_BATCH_ROWS,
        memory="1g",
    )


@pytest.fixture(scope="session")
def tiny_sets(settings: Settings) -> DataSets:
    return prepare_data(settings, "tiny", list(SET_DEPENDENCIES))


@pytest.fixture
def cli_settings(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Commands run through harness.cli.main use the session's data cache and results root."""
    monkeypatch.setenv("ICEBENCH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("ICEBENCH_RESULTS_DIR", str(settings.results_dir))
    return settings


# The downstream scans after each run are a process of their own (~1.5 s on tiny): the runners
# below leave them out, but in a module that reads them (`READS_SCANS = True`: tests/test_runs.py
# on every writer's table, tests/test_scan_cost.py); the CLI's runs keep them (tests/test_s3_counter.py).
NO_SCANS = {"scan_cost": False}


@pytest.fixture
def runner(settings: Settings, request: pytest.FixtureRequest) -> Runner:
    if not getattr(request.module, "READS_SCANS", False):
        settings = settings.model_copy(update=NO_SCANS)
    return Runner(settings, ResultsStore(settings.results_dir), EmbeddedStack(settings))


@pytest.fixture(scope="module")
def services_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"stack": "local-services", **NO_SCANS})


@pytest.fixture(scope="module")
def services_runner(services_settings: Settings) -> Iterator[Runner]:
    """A runner on the local-services stack (SeaweedFS + REST catalog), up for the test module."""
    store = ResultsStore(services_settings.results_dir)
    with started(services_settings, store.folder / "services") as stack:
        yield Runner(services_settings, store, stack)


def _expected_outcome(scenario: str, writer: str, stack: str = "embedded") -> tuple[str, bool | None]:
    """(status, verdict passed) each writer gives; None: no verdict (unsupported)."""
    if scenarios()[scenario]().unsupported_reason(writers()[writer]):  # the operation, or no batches
        return "unsupported", None
    if writers()[writer].supports_catalog(
        get_stack(stack).catalog_shape
    ):  # Spark: SQLite; DuckDB, dlt-iceberg: REST
        return "unsupported", None
    if writer in EQUALITY_DELETE_UPSERTS and scenarios()[scenario].operation == "upsert":
        # Its upsert lands as equality deletes, which the oracle's pyiceberg cannot apply: the
        # capable reader the oracle chooses (sidequery-pyiceberg on REST) judges them; in a race
        # the race decides (tests/test_dlt_iceberg.py)
        return ("ok", True) if scenario != "upsert-racing-append" else (RACE_DECIDES, None)
    if scenario == "upsert-racing-append":  # who commits second fails or retries: the race decides
        # dlt's upsert, when second, retries and strands its first attempt's files: the verdict is
        # the race's too (tests/test_concurrency.py pins it to the retry)
        return RACE_DECIDES, None if writer == "dlt" else True
    if scenario == "concurrent-writers" and writer == "duckdb":
        # No commit retry in DuckDB's iceberg extension 1.5.5 (duckdb/duckdb-iceberg#786): the second
        # to commit fails cleanly on the 409, unless it loaded the table after the first one landed:
        # the race decides the status, the verdict passes either way.
        return RACE_DECIDES, True
    if scenario == "concurrent-writers" and issubclass(writers()[writer], RustWriter):
        # iceberg-rust 0.10 retries a commit that meets the other's snapshot, but leaves the lost
        # attempt's manifest and manifest list behind (Java's SnapshotProducer deletes them): the
        # verdict fails no_orphans_after_success when the race made it retry (tests/test_rust_writers.py).
        return "ok", None
    if scenarios()[scenario].expects_bad_input:  # the damaged source fails every writer, cleanly
        return "error", False
    if writer.startswith("spark") or writer == "duckdb":  # MERGE INTO handles #2467
        return "ok", True
    kill_point = getattr(scenarios()[scenario], "kill_point", None)  # the crash-* family's
    if kill_point == "after-commit" and writer == "pyiceberg-fast-append-naive":
        return "error", False  # the trap's duplicated file entries were committed before the kill
    if kill_point:  # killed as the scenario asked; the table must still be right
        return "error", True
    if writer == "pyiceberg-equality-delete":  # its upserts (both; #2467 spares them) leave equality
        # deletes, which the oracle's pyiceberg cannot apply: the cheapest capable reader the oracle
        # chooses (sidequery-pyiceberg) judges them, and they pass (tests/test_equality_delete.py)
        return "ok", True
    if scenario == "schema-evolution-upsert" and writer not in UPSERT_BY_ADD_FILES:  # iceberg-python#2467
        return "error", False
    if writer == "pyiceberg-fast-append-naive":  # the trap: one file name for every batch
        return "ok", False
    if writer == "dlt-iceberg" and scenario == "replace":
        # dlt's truncate-and-insert: dlt-iceberg drops the table (no purge) and creates it anew;
        # the oracle sees the old files orphaned, two commits, and totals that restart
        return "ok", False
    return "ok", True


@pytest.fixture
def expected_outcome() -> Callable[[str, str], tuple[str, bool | None]]:
    return _expected_outcome


def _passed(record) -> bool | None:
    """The verdict; a run failing only for metadata files of commit attempts that lost the catalog's
    compare-and-swap counts as passed: whether a concurrent loser got as far as writing one depends
    on timing (see no_orphans_after_success), so tests that race cannot pin it."""
    if record.verdict is None:
        return None
    failed = record.verdict.failed
    if [c.name for c in failed] == ["no_orphans_after_success"]:
        return failed[0].actual["files"] == failed[0].actual["lost_swap_metadata"] > 0
    return record.verdict.passed


@pytest.fixture
def verdict_passed() -> Callable[[object], bool | None]:
    return _passed


# --- The Rust worker, built beside the suite rather than before it ----------------------------
# A cold cargo build takes minutes (`make test` builds the `quick` profile: ~4 min on 2 idle cores,
# release ~18): `make test` does not wait for it. When the session has Rust tests and the worker is
# not built, cargo starts in the background (niced) as the suite starts; those tests (and every test
# a Rust writer parametrizes) run last, and rust_worker.worker_binary() waits for the build.
RUST_TESTS = ("test_rust_writers.py", "test_rust_lint.py", "test_rust_source_builds.py")
RUST_BUILD_LOG = Path(".icebench") / "rust-worker-build.log"
_rust_build: subprocess.Popen[bytes] | None = None


def _needs_rust_worker(item: pytest.Item) -> bool:
    """A Rust test, or one a Rust writer parametrizes (it would wait for the build mid-suite)."""
    if item.path.name in RUST_TESTS:
        return True
    params = getattr(item, "callspec", None)
    values = [
        part
        for value in (params.params.values() if params is not None else [])
        for part in (value if isinstance(value, tuple | list) else [value])
    ]
    rust_writers = {name for name, writer in writers().items() if issubclass(writer, RustWriter)}
    return any(isinstance(value, str) and value in rust_writers for value in values)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    global _rust_build
    rust = [item for item in items if _needs_rust_worker(item)]
    if not rust:
        return
    items[:] = [item for item in items if item not in rust] + rust
    if shutil.which("cargo") and not rust_worker.binary_path().is_file():
        RUST_BUILD_LOG.parent.mkdir(parents=True, exist_ok=True)
        with RUST_BUILD_LOG.open("wb") as log:
            command = ["nice", "-n", "10", sys.executable, "-m", "harness.services.rust_worker", "build"]
            _rust_build = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        # Reaped when it ends: a zombie child of the suite trips every test that lists its children.
        threading.Thread(target=_rust_build.wait, name="rust-build-reaper", daemon=True).start()
        print(f"\nbuilding the Rust worker in the background (pid {_rust_build.pid}, log {RUST_BUILD_LOG})")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The background build stopped with the session (by its process group), never left behind."""
    if _rust_build is not None and _rust_build.poll() is None:
        os.killpg(_rust_build.pid, signal.SIGTERM)
        _rust_build.wait()


@pytest.fixture(autouse=True)
def _says_when_a_test_waits_for_the_rust_build(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test not moved last that waits for the background build holds up the whole suite: it says so."""
    if _rust_build is None or _needs_rust_worker(request.node):
        return
    waits = rust_worker.wait_for_builds

    def said() -> None:
        if _rust_build is not None and _rust_build.poll() is None:
            print(
                f"\n{request.node.nodeid} waits for the Rust worker's build (tests/conftest.py)",
                file=sys.__stderr__,
            )
        waits()

    monkeypatch.setattr(rust_worker, "wait_for_builds", said)
