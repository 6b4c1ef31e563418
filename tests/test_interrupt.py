"""Ctrl-C: the harness kills the worker it started (by its process group) and removes its cgroup."""

import signal

import pytest
from harness_process import HarnessRun

from harness.base.caps import cgroup_parent


@pytest.mark.skipif(cgroup_parent() is None, reason="needs a cgroup to look for")
@pytest.mark.parametrize(("scenario", "workers"), [("append", 1), ("concurrent-writers", 2)])
def test_ctrl_c_stops_the_workers_and_cleans_up(settings, tiny_sets, tmp_path, scenario, workers):
    run = HarnessRun.start(settings, tmp_path / "results", scenario)
    run.wait_for_workers(workers)

    run.process.send_signal(signal.SIGINT)
    _, err = run.process.communicate(timeout=60)
    assert run.process.returncode == 130
    assert b"interrupted" in err
    assert run.leftovers() == []
