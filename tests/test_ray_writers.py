"""The Ray writers (their own environment: ray 2.60): each starts a local Ray cluster inside its
capped worker and is judged by the oracle like any other writer."""

import pytest

from harness.base.caps import cgroup_parent
from harness.engines.writers import get_writer
from harness.engines.writers.ray_data import RayOptions
from harness.run.runner import Runner, RunPlan
from harness.services.envs import pinned_versions

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
