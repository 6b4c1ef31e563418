"""--isolation docker: the worker in a memory-limited container, against the S3 + REST stack."""

import os

import pytest

from harness.base.caps import cgroup_parent
from harness.base.errors import IcebenchError
from harness.base.results import ResultsStore
from harness.run.runner import Runner, RunPlan
from harness.services.container import docker_client
from harness.services.stacks import started


def engine_available() -> bool:
    try:
        docker_client()
    except IcebenchError:
        return False
    return True


# `make test` starts a private engine and builds the images first (ICEBENCH_REQUIRE_DOCKER=1): there
# a missing engine fails these tests instead of skipping them; outside it they need Docker.
ENGINE_REQUIRED = bool(os.environ.get("ICEBENCH_REQUIRE_DOCKER"))
pytestmark = pytest.mark.skipif(
    (not ENGINE_REQUIRED and not engine_available()) or cgroup_parent() is None,
    reason="no Docker engine (make docker-engine) or no cgroup v1",
)


@pytest.fixture(scope="module")
def docker_stack(settings, tmp_path_factory):
    docker_settings = settings.model_copy(
        update={
            "stack": "local-services",
            "isolation": "docker",
            "results_dir": tmp_path_factory.mktemp("docker"),
        }
    )
    store = ResultsStore(docker_settings.results_dir)
    with started(docker_settings, store.folder / "services") as stack:
        yield Runner(docker_settings, store, stack)


def test_scenario_in_a_container_against_s3_and_rest(docker_stack, tiny_sets):
    record = docker_stack.run(RunPlan("upsert", "pyiceberg-txn-batches", "tiny", tiny_sets, 2_000, 1 << 30))
    assert (record.isolation, record.stack, record.status) == ("docker", "local-services", "ok")
    assert record.verdict.passed, [c.reason for c in record.verdict.failed]
    assert record.peak_memory_bytes and record.memory_timeline and record.peak_rss_bytes


def test_container_over_its_cap_is_an_oom_result(docker_stack, settings):

    from harness.run.matrix import prepare_data

    sets = prepare_data(settings, "small", ["base"])
    record = docker_stack.run(RunPlan("append", "pyiceberg-table", "small", sets, 10_000, 450 * 2**20))
    assert record.status == "oom", record.error
    assert record.oom_kills >= 1 and "OOM" in record.error
    assert {c.name: c for c in record.verdict.checks}["table_unchanged_after_failure"].passed


def test_spark_writer_in_a_container(settings, tiny_sets, tmp_path):
    """The worker image carries a JRE: Spark's driver JVM runs inside the container's cap."""
    pytest.importorskip("pyspark")
    from harness.engines.spark import missing_jars
    from harness.services.stacks.embedded import EmbeddedStack

    if missing_jars():
        pytest.skip("Spark jars missing: run make spark-jars")
    docker_settings = settings.model_copy(update={"isolation": "docker", "results_dir": tmp_path})
    runner = Runner(docker_settings, ResultsStore(tmp_path), EmbeddedStack(docker_settings))
    record = runner.run(RunPlan("append", "spark", "tiny", tiny_sets, 2_000, 2 << 30))
    assert (record.isolation, record.status) == ("docker", "ok"), record.error
    assert record.verdict.passed, [c.reason for c in record.verdict.failed]
    assert record.peak_memory_bytes > 200 * 2**20  # the JVM is counted


def test_concurrent_workers_each_in_a_container_of_their_own(docker_stack, tiny_sets, verdict_passed):
    plan = RunPlan("concurrent-writers", "pyiceberg-table", "tiny", tiny_sets, 2_000, 1 << 30)
    record = docker_stack.run(plan)
    assert (record.isolation, record.status) == ("docker", "ok"), record.error
    assert verdict_passed(record), [c.reason for c in record.verdict.failed]
    assert [w.status for w in record.workers] == ["ok", "ok"]
    assert all(w.peak_memory_bytes for w in record.workers)  # each container under its own cap
    assert sum(w.commit_retries for w in record.workers) >= 1  # they met at the rendezvous, across containers


def test_dlt_in_a_container_loads_through_s3(docker_stack, tiny_sets):
    record = docker_stack.run(RunPlan("upsert", "dlt", "tiny", tiny_sets, 2_000, 1 << 30))
    assert (record.isolation, record.status) == ("docker", "ok"), record.error
    assert record.verdict.passed, [c.reason for c in record.verdict.failed]


def test_a_writer_file_runs_in_the_container_too(docker_stack, tiny_sets, tmp_path):
    """The file's folder is mounted into the worker's container and its reference passed: the
    container's worker finds the same writer by the same name."""
    from test_writer_files import MINE

    from harness.engines.writers import used_writer_files

    mine = tmp_path / "mine.py"
    mine.write_text(MINE)
    with used_writer_files([str(mine)]) as names:
        record = docker_stack.run(RunPlan("append", names[0], "tiny", tiny_sets, 2_000, 1 << 30))
    assert (record.isolation, record.writer, record.status) == ("docker", "my-pipeline", "ok"), record.error
    assert record.verdict.passed and record.writer_origin == str(mine.resolve())
