"""Spark on a standalone cluster on loopback (--spark-master), on `tiny`: the driver in the run's
capped worker, the executors on the cluster's workers. On a cluster icebench starts
(`standalone[N]`) each executor runs in a capped cgroup of its own and its figures are the kernel's;
on one it did not start they are Spark's own metrics (its REST API). An executor over its cap is the
run's OOM, named.

Skipped where pyspark or the jars of `make spark-jars` are missing; each run starts a JVM.
"""

import os
import subprocess

import psutil
import pytest

from harness.base.caps import cgroup_parent
from harness.base.executor_caps import (
    EXECUTOR_CAP_VARIABLE,
    EXECUTOR_CGROUPS_VARIABLE,
    ExecutorCaps,
    executor_oom,
)
from harness.base.results import ResultsStore
from harness.cli.main import main
from harness.engines.choices import SPARK_CLUSTER_VARIABLE, check_spark_master, standalone_workers
from harness.engines.spark import missing_jars, session_conf
from harness.model import ExecutorFigures, RunRecord
from harness.run.runner import Runner, RunPlan
from harness.services.spark_cluster import capping_java_home, standalone_cluster
from harness.services.stacks.embedded import EmbeddedStack

pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(bool(missing_jars()), reason="Spark jars missing: run make spark-jars")

PATH = {"PATH": "/usr/bin:/bin"}
SPARK_CAP = 2 << 30  # the driver's heap is 60% of it (tests/test_spark.py)
needs_cgroups = pytest.mark.skipif(
    cgroup_parent() is None, reason="needs a writable cgroup v1 memory controller"
)


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spark-cluster")
    with standalone_cluster(folder, workers=2, cores=1, memory="4g") as url:
        yield url, folder


def _runner(settings, spark: dict) -> Runner:
    on_cluster = settings.model_copy(update={"engines": {"spark": spark}})
    return Runner(on_cluster, ResultsStore(settings.results_dir), EmbeddedStack(on_cluster))


def _passed(record):
    failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
    assert record.status == "ok", (record.error, failed)
    assert record.verdict.passed, failed


def test_a_cluster_not_ours_reports_its_executors_through_sparks_rest_api(settings, tiny_sets, two_workers):
    """spark://: the driver stays in the capped worker; the executors' peaks are Spark's own figures."""
    url, folder = two_workers
    record = _runner(settings, {"master": url}).run(
        RunPlan("append", "spark", "tiny", tiny_sets, 2_000, cap_bytes=SPARK_CAP)
    )
    _passed(record)
    assert list(folder.glob("spark-work-*/app-*/*/stderr")), "no executor ran on the cluster's workers"
    assert {executor.source for executor in record.executors} == {"spark-rest-api"}
    assert len(record.executors) == 2, record.executors  # one per worker
    for executor in record.executors:
        assert executor.host and executor.host.startswith("127.0.0.1:")
        assert executor.peak_rss_bytes and executor.peak_rss_bytes > 50 << 20  # a JVM's process tree
        assert executor.peak_heap_bytes and executor.cap_bytes is None and executor.oom_kills == 0


@needs_cgroups
def test_an_executor_over_its_cap_is_the_runs_oom_naming_the_executor(
    settings, tiny_sets, two_workers, monkeypatch
):
    url, _ = two_workers
    monkeypatch.setenv(SPARK_CLUSTER_VARIABLE, url)
    record = _runner(settings, {"master": "standalone[2]", "executor_memory": "160m"}).run(
        RunPlan("append", "spark", "tiny", tiny_sets, 2_000, cap_bytes=SPARK_CAP)
    )
    assert record.status == "oom", record.error
    killed = [executor for executor in record.executors if executor.oom_kills]
    assert killed and all(executor.cap_bytes == 160 << 20 for executor in record.executors)
    assert record.error.startswith(f"{killed[0].name} OOM-killed by the kernel at its 160.0 MiB cap")
    assert "the driver: " in record.error  # what the driver saw, after the cause
    assert record.snapshots_added == 0  # the failed write left the table as it was


def test_standalone_from_the_command_line_caps_each_executor_and_stops_its_cluster(cli_settings, capsys):
    """`standalone[2]`: the session starts the cluster; each executor runs in a capped cgroup of its
    own, its figures the kernel's; cluster and cgroups are gone after the command."""
    code = main(["matrix", "--preset", "tiny", "--writers", "spark", "--scenarios", "append",
                 "--spark-master", "standalone[2]", "--memory", "2g", "--no-scan-cost"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "starting standalone[2], 2 workers" in out
    runs = sorted(cli_settings.results_dir.glob("*/runs.jsonl"))[-1]
    (line,) = runs.read_text().splitlines()
    record = RunRecord.model_validate_json(line)
    _passed(record)
    assert [executor.name for executor in record.executors] == ["executor 0", "executor 1"]
    if cgroup_parent() is not None:
        for executor in record.executors:
            assert executor.source == "cgroup" and executor.cap_bytes == SPARK_CAP
            assert 50 << 20 < executor.peak_rss_bytes <= executor.peak_memory_bytes <= SPARK_CAP
            assert executor.host and executor.peak_heap_bytes  # where it ran and its heap: from Spark
        ours = [
            cgroup
            for cgroup in cgroup_parent().iterdir()
            if cgroup.name.startswith(f"icebench-{os.getpid()}-")
        ]
        assert not ours, "the executors' cgroups outlived the run"
    folder = str(runs.parent)  # the cluster's workers work in the run's services folder
    assert not any(folder in " ".join(command) for command in _commands()), "its cluster left running"


def _commands() -> list[list[str]]:
    commands = []
    for process in psutil.process_iter(["cmdline"]):
        commands.append(process.info["cmdline"] or [])
    return commands


@needs_cgroups
def test_the_workers_java_caps_an_executor_or_refuses_to_start_it(tmp_path):
    """The java the cluster's workers run: an executor enters a cgroup of its own at the cap it is
    given; where it cannot, it does not run (never uncapped); any other java command runs as it is."""
    java = capping_java_home(tmp_path / "home") / "bin" / "java"
    executors = ExecutorCaps(200 << 20, cgroup_parent())
    try:
        env = {**executors.variables(), **PATH}
        # java rejects the stray option after printing its version; the cgroup was made and entered first
        subprocess.run(
            [str(java), "-version", "--executor-id", "7"], env=env, capture_output=True, check=False
        )
        (figures,) = executors.figures()
        assert figures.name == "executor 7" and figures.cap_bytes == 200 << 20 and figures.peak_memory_bytes
        missing = {**env, EXECUTOR_CGROUPS_VARIABLE: str(tmp_path / "no-such-cgroup")}
        refused = subprocess.run([str(java), "-version", "--executor-id", "0"], env=missing,
                                 capture_output=True, text=True, check=False)  # fmt: skip
        assert refused.returncode == 70 and "cannot cap executor-0 in" in refused.stderr
        plain = subprocess.run([str(java), "-version"], env=PATH, capture_output=True, text=True, check=False)
        assert plain.returncode == 0 and "version" in plain.stderr
    finally:
        executors.close()
    assert not executors.path.exists()


def test_standalone_masters_are_checked_and_need_their_cluster(monkeypatch):
    assert standalone_workers(check_spark_master("standalone[2]")) == 2
    assert standalone_workers("spark://127.0.0.1:7077") is None
    for bad in ("standalone[0]", "standalone[9]", "standalone"):
        with pytest.raises(ValueError, match="standalone\\[N\\]"):
            check_spark_master(bad)
    monkeypatch.delenv(SPARK_CLUSTER_VARIABLE, raising=False)
    with pytest.raises(Exception, match="no cluster was started"):
        session_conf(None, SPARK_CAP, "standalone[2]")
    monkeypatch.setenv(SPARK_CLUSTER_VARIABLE, "spark://127.0.0.1:7077")
    monkeypatch.setenv(EXECUTOR_CGROUPS_VARIABLE, "/sys/fs/cgroup/memory/x")
    monkeypatch.setenv(EXECUTOR_CAP_VARIABLE, str(1 << 30))
    conf = session_conf(None, SPARK_CAP, "standalone[2]")
    assert conf["spark.master"] == "spark://127.0.0.1:7077" and conf["spark.executor.memory"] == "614m"
    assert conf[f"spark.executorEnv.{EXECUTOR_CAP_VARIABLE}"] == str(1 << 30)
    assert conf["spark.ui.enabled"] == "true"  # the REST API the executors' figures come from


def test_an_executor_oom_names_the_first_killed_and_counts_the_rest():
    def executor(number: int, kills: int) -> ExecutorFigures:
        return ExecutorFigures(
            name=f"executor {number}", source="cgroup", cap_bytes=300 << 20, oom_kills=kills
        )

    assert executor_oom([executor(0, 0)]) is None
    text = executor_oom([executor(0, 0), executor(1, 1), executor(2, 2)])
    assert text == (
        "executor 1 OOM-killed by the kernel at its 300.0 MiB cap (oom_kill count 1) (and 1 more: executor 2)"
    )
