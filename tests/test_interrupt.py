"""Ctrl-C: the harness kills the worker it started (by its process group) and removes its cgroup."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
def test_ctrl_c_stops_the_worker_and_cleans_up(settings, tiny_sets, tmp_path):
    results = tmp_path / "results"
    env = {**os.environ, "ICEBENCH_DATA_DIR": str(settings.data_dir)}
    # 100 commits of 100 rows: long enough to interrupt mid-write.
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--scenario", "append", "--writer",
         "pyiceberg-commit-per-batch", "--preset", "tiny", "--batch-rows", "100", "--memory", "1g",
         "--results", str(results)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    started = wait_for(lambda: list(results.glob("*/work/*/worker.started")))
    cgroups = list(cgroup_parent().glob(f"icebench-{harness.pid}-*"))
    assert len(cgroups) == 1
    worker_pids = [int(pid) for pid in (cgroups[0] / "cgroup.procs").read_text().split()]
    assert worker_pids

    harness.send_signal(signal.SIGINT)
    _, err = harness.communicate(timeout=60)
    assert harness.returncode == 130
    assert b"interrupted" in err
    assert not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in worker_pids
    )
    assert not cgroups[0].exists()
    assert not (Path(started[0]).parent / "warehouse").exists()
