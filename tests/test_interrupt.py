"""Ctrl-C: the harness kills the worker it started (by its process group) and removes its cgroup."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from harness.caps import cgroup_parent


def wait_for(predicate, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


@pytest.mark.skipif(cgroup_parent() is None, reason="needs a cgroup to look for")
@pytest.mark.parametrize(("scenario", "workers"), [("append", 1), ("concurrent-writers", 2)])
def test_ctrl_c_stops_the_workers_and_cleans_up(settings, tiny_sets, tmp_path, scenario, workers):
    results = tmp_path / "results"
    env = {**os.environ, "ICEBENCH_DATA_DIR": str(settings.data_dir)}
    # 100 commits of 100 rows per worker: long enough to interrupt mid-write.
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--scenario", scenario, "--writer",
         "pyiceberg-commit-per-batch", "--preset", "tiny", "--batch-rows", "100", "--memory", "1g",
         "--results", str(results)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    wait_for(lambda: len(list(results.glob("*/work/*/**/worker.started"))) == workers)
    cgroups = list(cgroup_parent().glob(f"icebench-{harness.pid}-*"))
    assert len(cgroups) == workers  # a cap each
    worker_pids = [int(pid) for cgroup in cgroups for pid in (cgroup / "cgroup.procs").read_text().split()]
    assert len(worker_pids) >= workers

    harness.send_signal(signal.SIGINT)
    _, err = harness.communicate(timeout=60)
    assert harness.returncode == 130
    assert b"interrupted" in err
    assert not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in worker_pids
    )
    assert not any(cgroup.exists() for cgroup in cgroups)
    (run_folder,) = results.glob("*/work/*")
    assert not (run_folder / "warehouse").exists()
