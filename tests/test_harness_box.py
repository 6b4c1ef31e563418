"""`--harness-memory`: the harness runs inside a kernel cap with its workers nested below it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness_process import run_in_box

from harness.base.caps import cgroup_parent
from harness.base.results import read_runs
from harness.run.matrix import prepare_data
from harness.services.own_memory import measure_peak_rss, peak_since_start
from reports.baseline import newest_results_folder
from reports.verdict import reason_of

pytestmark = [
    pytest.mark.usefixtures("cli_settings"),
    pytest.mark.skipif(cgroup_parent() is None, reason="no writable cgroup v1 memory controller"),
]

BOX_LINE = re.compile(r"harness box ([\d.]+) MiB: peak ([\d.]+) MiB .* oom kills (\d+)")


def _icebench(*arguments: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """The command's outcome and its pid (its box is named after it)."""
    command = [sys.executable, "-m", "harness.cli", "run", "--preset", "tiny", *arguments]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        stdout, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr), process.pid


def _boxes_left(pid: int) -> list[str]:
    """This command's boxes still there (other icebench commands may run beside the tests)."""
    parent = cgroup_parent()
    assert parent is not None
    return [path.name for path in parent.iterdir() if path.name.startswith(f"icebench-harness-{pid}-")]


def test_a_run_inside_the_box_counts_harness_and_worker_together(settings, tiny_sets):
    done, pid = _icebench(
        "--scenario", "upsert", "--writer", "pyiceberg-table", "--memory", "800m", "--harness-memory", "900m"
    )
    assert done.returncode == 0, done.stderr
    box = BOX_LINE.search(done.stderr)
    assert box, done.stderr
    cap, peak, kills = float(box[1]), float(box[2]), int(box[3])
    (record,) = read_runs(newest_results_folder(settings.results_dir))
    assert record.status == "ok" and record.verdict.passed
    assert (cap, kills) == (900.0, 0)
    # The worker's cgroup nests inside the box: the box's peak holds the worker's and more.
    assert peak * 2**20 > record.peak_memory_bytes
    assert record.verify_peak_rss_bytes and record.verify_s is not None
    assert not _boxes_left(pid)


def test_a_worker_killed_because_the_box_filled_is_recorded_as_the_boxs_kill(settings):
    """Worker cap and box alike at 700 MiB: pyiceberg-table materialises `small` (~700 MiB) while
    the harness holds its own share of the box, so the box fills first: the record names the box,
    the cap that applied and the box at the kill, never a cap the worker did not reach."""
    prepare_data(settings, "small", ["base"])  # generated outside the box: it is not the run's
    done, _ = _icebench(
        "--preset", "small", "--scenario", "append", "--writer", "pyiceberg-table",
        "--memory", "700m", "--harness-memory", "700m", "--no-scan-cost",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = read_runs(newest_results_folder(settings.results_dir))
    assert record.status == "oom" and record.oom_limit == "harness box", record.error
    assert record.cap_bytes == record.box_cap_bytes == 700 * 2**20
    assert record.box_rss_at_kill_bytes > record.peak_rss_bytes  # the worker was not alone in it
    assert record.error.startswith("OOM-killed by the kernel: the 700.0 MiB harness box filled")
    assert reason_of(record).startswith("OOM-killed when the 700.0 MiB harness box filled (rss ")


def test_a_box_too_small_for_the_harness_is_one_line_and_leaves_nothing(tiny_sets):
    done, pid = _icebench(
        "--scenario", "append", "--writer", "pyiceberg-table", "--memory", "100m", "--harness-memory", "120m"
    )
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip().splitlines()[-1]
        == "icebench: error: the harness was OOM-killed inside its 120.0 MiB box"
    )
    assert not _boxes_left(pid)


def test_the_harness_peak_outlives_the_oracles_resets():
    """The oracle resets VmHWM before each read-back to measure it alone; the harness's own peak
    printed at the end is still its peak since start, not since the last reset."""
    spike_bytes = 384 * 2**20
    before = resident_bytes()
    spike = bytearray(spike_bytes)
    spike[::4096] = b"x" * len(spike[::4096])  # every page touched: resident
    del spike
    with measure_peak_rss() as during:
        pass
    assert during.bytes is not None and during.bytes < before + spike_bytes // 2  # the reset's
    assert peak_since_start() >= before + spike_bytes * 0.9  # the spike, from before the reset


def resident_bytes() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024


# A harness in its box launches one worker that grows until the kernel kills it; it prints whose
# limit the kill hit, the cap that applied and the box's figures at the kill (harness/run/classify.py).
KILLED_IN_THE_BOX = """
import json, sys, tempfile
from pathlib import Path
from harness.base.caps import CgroupCap, cgroup_parent
from harness.run.classify import box_oom_text, oom_limit
from harness.services.launcher import launch_worker
grow = "import time\\nchunks = []\\nwhile True:\\n    chunks.append(b'x' * 2**23)\\n    time.sleep(0.02)"
folder = Path(tempfile.mkdtemp())
cap = CgroupCap(int(sys.argv[1]) * 2**20, cgroup_parent())
try:
    launched = launch_worker(
        cap, folder / "spec", folder / "log", timeout_s=60, sample_interval_s=0.02, timeline_points=10,
        python_arguments=["-c", grow], environment={},
    )
finally:
    cap.close()
print(json.dumps({
    "kills": launched.oom_kills, "limit": oom_limit(launched), "applied": launched.enforced_cap_bytes,
    "box": launched.box_cap_bytes, "box_rss": launched.box_at_end.rss_bytes, "text": box_oom_text(launched),
}))
"""


@pytest.mark.parametrize(
    ("box_mib", "worker_mib", "limit"), [(600, 600, "harness box"), (900, 300, "worker cap")]
)
def test_an_oom_kill_names_the_limit_it_hit_and_the_cap_that_applied(box_mib, worker_mib, limit):
    """Equal caps: the harness (its imports) and the worker share the box, which fills while the
    worker is under its own cap, and the record must say so; a box with room: the worker's cap."""
    import json

    done = run_in_box(box_mib * 2**20, KILLED_IN_THE_BOX, str(worker_mib))
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["kills"] == 1 and found["limit"] == limit, found
    assert found["box"] == box_mib * 2**20 and found["applied"] == min(box_mib, worker_mib) * 2**20
    if limit == "harness box":  # the box was full of harness and worker together
        assert found["box_rss"] > 0.8 * box_mib * 2**20
        assert found["text"].startswith(f"OOM-killed by the kernel: the {box_mib}.0 MiB harness box filled")


# A harness in its box starts the S3 server as the local-services stack does, and tells where it runs.
SERVER_FROM_THE_BOX = """
import json, tempfile
from pathlib import Path
from harness.base.caps import harness_box
from harness.services.object_store import SeaweedS3Server
from harness.services.processes import _RUNNING, service_peaks
with SeaweedS3Server().running(Path(tempfile.mkdtemp())):
    (pid,) = _RUNNING.values()
    memory = next(line for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if ":memory:" in line)
    server = memory.split(":", 2)[2]
    print(json.dumps({"box": str(harness_box().path), "server": server, "peaks": service_peaks()}))
"""


def test_the_stacks_servers_run_beside_the_box_their_peak_recorded_apart():
    """The S3 server and the REST catalog are the stack's, not the user's container: started from inside the
    box, they run in the box's parent cgroup, and their resident peak is kept by name."""
    import json

    done = run_in_box(900 * 2**20, SERVER_FROM_THE_BOX)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    box_path = Path(found["box"])
    assert box_path.name.startswith("icebench-harness")
    assert "/sys/fs/cgroup/memory" + found["server"] == str(box_path.parent)  # beside the box, not in it
    assert found["peaks"]["SeaweedFS S3 server"] > 10 * 2**20


def test_in_a_full_box_the_kernel_kills_a_worker_before_the_harness():
    """A worker raises its OOM score first thing (any process may): when the box fills, the kernel
    picks it over the harness, whose death would end the whole matrix. Its children inherit it."""
    import subprocess
    import sys

    from harness.base.caps import OOM_SCORE_ADJ, WORKER_OOM_SCORE_ADJ, set_oom_score_adj

    code = (
        "import subprocess, sys; from harness.base.caps import set_oom_score_adj, OOM_SCORE_ADJ; "
        f"raised = set_oom_score_adj({WORKER_OOM_SCORE_ADJ}); "
        "child = subprocess.run(['cat', '/proc/self/oom_score_adj'], capture_output=True, text=True); "
        "print(raised, OOM_SCORE_ADJ.read_text().strip(), child.stdout.strip())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", str(WORKER_OOM_SCORE_ADJ), str(WORKER_OOM_SCORE_ADJ)]
    assert OOM_SCORE_ADJ.read_text().strip() != str(WORKER_OOM_SCORE_ADJ)  # the harness's own: untouched
    assert set_oom_score_adj(0, OOM_SCORE_ADJ.parent / "no-such-file") is False
    worker = Path(__file__).parents[1] / "harness" / "engines" / "worker.py"
    assert "set_oom_score_adj(WORKER_OOM_SCORE_ADJ)" in worker.read_text()


def test_a_port_handed_out_is_not_handed_out_again_while_its_server_may_still_be_starting():
    """Weed's 13 listeners each draw a port before any binds: a repeat would collide."""
    from harness.services.processes import LOWEST_SERVICE_PORT, free_port

    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)
    assert all(port >= LOWEST_SERVICE_PORT for port in ports)
