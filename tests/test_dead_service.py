"""A server of the stack that dies mid-run ends that run as its own recorded error at once (the
worker killed, nothing judged, scanned or purged against it), not after minutes of retries."""

import os
import socket
from pathlib import Path

import psutil
import pytest
from harness_process import HarnessRun

from harness.base.caps import cgroup_parent
from harness.base.results import read_runs
from harness.services.object_store import remove_dead_seaweed_sockets
from harness.services.rest_catalog import BUILD_DIR


@pytest.mark.skipif(cgroup_parent() is None, reason="needs a cgroup v1 memory controller")
@pytest.mark.skipif(
    not (BUILD_DIR / "classpath.txt").is_file(), reason="REST catalog jar missing: run make rest-catalog"
)
def test_a_dead_s3_server_ends_the_run_as_its_error(settings, tiny_sets, tmp_path):
    litter_before = _seaweed_litter()
    run = HarnessRun.start(settings, tmp_path / "results", "append", "--stack", "local-services")
    run.wait_for_workers()
    (s3,) = [p for p in run.service_processes() if "weed" in p.name()]
    s3.kill()
    assert run.process.wait(timeout=120) == 0, (
        run.process.stderr.read().decode() if run.process.stderr else ""
    )
    (folder,) = run.results.iterdir()
    (record,) = read_runs(folder)
    assert record.status == "error"
    assert (record.error or "").startswith("service SeaweedFS S3 server died (exit code -9"), record.error
    assert record.verdict is None  # nothing judged against a store that is gone
    assert not any(psutil.pid_exists(pid) for pid in run.worker_pids)
    # weed removes its sockets in /tmp when stopped, not when killed: the harness does.
    assert _seaweed_litter() <= litter_before


def _seaweed_litter() -> set[Path]:
    tmp = Path("/tmp")
    return {*tmp.glob("seaweedfs-*.sock"), *tmp.glob("weed.*")}


def test_sockets_a_killed_seaweedfs_left_are_removed_and_live_ones_kept(tmp_path):
    dead, live = (Path("/tmp") / f"seaweedfs-test-{os.getpid()}-{name}.sock" for name in ("dead", "live"))
    with socket.socket(socket.AF_UNIX) as gone:
        gone.bind(str(dead))  # bound, never listening: what a SIGKILLed server leaves
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(live))
        server.listen()
        try:
            remove_dead_seaweed_sockets()
            assert not dead.exists()
            assert live.exists()
        finally:
            live.unlink(missing_ok=True)
