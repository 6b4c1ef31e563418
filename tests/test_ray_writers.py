"""The Ray writers (their own environment: ray 2.60): each starts a local Ray cluster inside its
capped worker and is judged by the oracle like any other writer."""

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.base.caps import cgroup_parent
from harness.engines.ray_metrics import NodeMemory, _Node, node_rss_bytes
from harness.engines.writers import get_writer
from harness.engines.writers.ray_data import RAY_NODES_ADDRESS, RAY_VERSION, RayOptions, gcs_port
from harness.run.runner import Runner, RunPlan
from harness.services.envs import pinned_versions, requirements_env

needs_cgroups = pytest.mark.skipif(
    cgroup_parent() is None, reason="needs a writable cgroup v1 memory controller"
)


def tiny(scenario: str, writer: str, sets) -> RunPlan:
    return RunPlan(scenario, writer, "tiny", sets, 2_000, cap_bytes=2 << 30)


def with_ray_options(runner: Runner, **options: object) -> Runner:
    settings = runner.settings.model_copy(update={"engines": {"ray": options}})
    return Runner(settings, runner.store, runner.stack)


@pytest.mark.parametrize(
    ("writer", "scenario"),
    [
        ("ray-data", "append"),
        ("daft-ray", "append"),
        # a Ray cluster's start each (~15 s): beyond `make test`'s tier
        pytest.param("ray-data", "replace", marks=pytest.mark.slow),
        pytest.param("ray-data", "upsert", marks=pytest.mark.slow),
    ],
)
def test_a_ray_writer_passes_in_its_own_environment_in_one_commit(runner, tiny_sets, writer, scenario):
    runner = with_ray_options(runner, datasource_v2=False)  # ray 2.60's default read: below
    record = runner.run(tiny(scenario, writer, tiny_sets))
    assert record.status == "ok", record.error
    assert record.verdict.passed, record.verdict.failed
    assert "single_commit" in {check.name for check in record.verdict.checks}  # as Ray promises
    # What the worker imported in its environment: ray is in no other.
    assert pinned_versions(get_writer(writer).environment).items() <= record.versions.items()
    assert record.versions["ray"] == "2.60.0"


def test_ray_datas_default_parquet_read_breaks_its_iceberg_write_and_says_so(runner, tiny_sets):
    """Ray 2.60 reads parquet through its datasource V2 by default; write_iceberg then fails on the
    column of V2's file manifest. The run is the writer's error in Ray's own words, and the table
    stays as it was."""
    record = runner.run(tiny("append", "ray-data", tiny_sets))
    assert record.status == "error"
    assert "__file_chunk_metadata" in record.error and "Null type" in record.error
    assert record.snapshots_added == 0


def test_daft_ray_has_no_upsert_as_daft_has_none(runner, tiny_sets):
    record = runner.run(tiny("upsert", "daft-ray", tiny_sets))
    assert record.status == "unsupported"


@needs_cgroups
def test_a_ray_cluster_of_nodes_caps_each_node_and_records_its_peak(runner, tiny_sets):
    """`[engines.ray] nodes = 2`: a head and a worker node on loopback, each in a capped cgroup of
    its own (its raylet and Ray workers inside), the driver in the run's worker; each node's peak is
    the kernel's, and the cgroups are gone afterwards."""
    runner = with_ray_options(runner, datasource_v2=False, nodes=2)
    record = runner.run(tiny("append", "ray-data", tiny_sets))
    assert record.status == "ok", record.error
    assert record.verdict.passed, record.verdict.failed
    assert [executor.name for executor in record.executors] == ["ray node 0", "ray node 1"]
    for node in record.executors:
        assert node.source == "cgroup" and node.cap_bytes == 2 << 30 and node.oom_kills == 0
        assert node.peak_memory_bytes and node.peak_rss_bytes


@needs_cgroups
@pytest.mark.slow  # a cluster's start more: beyond `make test`'s tier (Spark's executor OOM is in it)
def test_a_ray_node_over_its_cap_is_the_runs_oom_naming_the_node(runner, tiny_sets):
    """A node whose raylet, GCS and workers need more than its 150 MiB: the kernel kills inside its
    cgroup, and the run is `oom`, naming the node, not an error of the writer."""
    runner = with_ray_options(runner, datasource_v2=False, nodes=2, node_memory="150m")
    record = runner.run(tiny("append", "ray-data", tiny_sets))
    assert record.status == "oom", (record.status, record.error)
    assert (
        record.error.startswith("ray node ")
        and "OOM-killed by the kernel at its 150.0 MiB cap" in record.error
    )
    assert any(node.oom_kills for node in record.executors)


def test_node_memory_without_nodes_is_refused():
    with pytest.raises(ValueError, match="node_memory caps the nodes of a cluster of `nodes` only"):
        RayOptions(node_memory="1g")


def test_address_and_nodes_together_are_refused():
    with pytest.raises(ValueError, match="address joins a cluster icebench did not start, nodes starts one"):
        RayOptions(address="10.0.0.1:6379", nodes=2)


# Two of the series a node's metrics agent serves (ray 2.60, labels cut), and one of another metric.
METRICS_PAGE = """\
# HELP ray_component_rss_bytes RSS usage of all components on the node.
# TYPE ray_component_rss_bytes gauge
ray_component_rss_bytes{Component="raylet",Version="2.60.0",ip="127.0.0.2",pid="1"} 5.24288e+07
ray_component_rss_bytes{Component="ray::IDLE",Version="2.60.0",ip="127.0.0.2",pid="2"} 1.048576e+08
ray_component_rss_mb{Component="raylet",Version="2.60.0",ip="127.0.0.2",pid="1"} 50.0
"""


def test_a_nodes_memory_is_the_summed_rss_of_its_ray_processes():
    assert node_rss_bytes(METRICS_PAGE) == 150 * 2**20
    assert node_rss_bytes("# no series\n") == 0


def test_a_node_whose_metrics_never_answered_says_why_and_has_no_figure():
    memory = NodeMemory(
        {"a": _Node("10.0.0.1:8080", peak_rss_bytes=7), "b": _Node("10.0.0.2:8080", unread="refused")}
    )
    measured, unread = memory.figures()
    assert (measured.name, measured.source, measured.peak_rss_bytes, measured.unmeasured) == (
        "ray node 0",
        "ray-metrics",
        7,
        None,
    )
    assert unread.peak_rss_bytes is None and unread.unmeasured == "its metrics did not answer (refused)"


@pytest.mark.slow  # ray[default]'s environment and a cluster's start: beyond `make test`'s tier
def test_a_ray_cluster_icebench_did_not_start_is_joined_and_its_nodes_memory_read_from_rays_metrics(
    runner, tiny_sets, settings, tmp_path, monkeypatch
):
    """`[engines.ray] address`: a head node started outside icebench (from `ray[default]`, whose
    metrics agent serves each process's rss), the driver joins it; the node's peak comes from those
    metrics, sampled, and the record says so (`ray-metrics`); nothing of the cluster is capped."""
    python = requirements_env([f"ray[default]=={RAY_VERSION}"], settings.data_dir.parent / "envs")
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # the head's and the driver's: its GCS takes any address
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    port, metrics = gcs_port(), gcs_port()
    scratch = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # a unix socket's path stays short
    head = subprocess.Popen(
        [str(python.parent / "ray"), "start", "--head", f"--port={port}",
         f"--node-ip-address={RAY_NODES_ADDRESS}", f"--metrics-export-port={metrics}",
         "--include-dashboard=false", "--num-cpus=2", f"--temp-dir={scratch}", "--disable-usage-stats",
         "--block"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        runner = with_ray_options(runner, datasource_v2=False, address=f"{RAY_NODES_ADDRESS}:{port}")
        record = runner.run(tiny("append", "ray-data", tiny_sets))
    finally:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    assert record.status == "ok", record.error
    assert record.verdict.passed, record.verdict.failed
    [node] = record.executors
    assert (node.name, node.host, node.source) == (
        "ray node 0",
        f"{RAY_NODES_ADDRESS}:{metrics}",
        "ray-metrics",
    )
    assert node.peak_rss_bytes and node.peak_rss_bytes > 50 * 2**20 and node.unmeasured is None
    assert node.cap_bytes is None and node.peak_memory_bytes is None
