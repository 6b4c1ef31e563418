"""Every judging process is measured and capped: a verifier's child read (harness/engines/child_read.py)
runs in a cgroup of its own below the harness's (the oracle's cap: the box under --harness-memory),
its resident peak joins the oracle's, and an OOM kill there is the harness's limit, not the table's."""

import subprocess
import sys

import psutil
import pytest
from harness_process import run_in_box

from harness.base.caps import CgroupCap, cgroup_parent
from harness.services.own_memory import measure_peak_rss, run_judging_child

pytestmark = pytest.mark.skipif(cgroup_parent() is None, reason="no writable cgroup v1 memory controller")

MIB = 2**20


def allocating(mib: int) -> list[str]:
    """A child that reads its stdin, then holds `mib` MiB resident (every page touched)."""
    code = f"import sys; sys.stdin.read(); b = bytearray({mib} * 2**20); b[::4096] = b'x' * len(b[::4096])"
    return [sys.executable, "-c", code]


def test_a_judging_childs_peak_is_recorded_beside_the_oracles_and_the_largest_wins():
    child_mib = psutil.Process().memory_info().rss // MIB + 200  # more than this process holds
    with measure_peak_rss() as peak:
        done = run_judging_child(allocating(child_mib), "{}", timeout_s=60)
    assert done.returncode == 0 and done.oom_kills == 0
    assert peak.children == [done.peak_rss_bytes]
    assert done.peak_rss_bytes >= child_mib * MIB  # the child's, which the harness's VmHWM never sees
    assert peak.bytes is not None and peak.bytes < done.peak_rss_bytes
    assert peak.largest == done.peak_rss_bytes and peak.largest_child == done.peak_rss_bytes


def test_outside_a_measurement_nothing_is_collected():
    with measure_peak_rss() as peak:
        pass
    run_judging_child(allocating(10), "{}", timeout_s=60)
    assert peak.children == []


# Run inside a cgroup of 250 MiB (the box the oracle would be in): its judging child gets that cap too.
IN_THE_BOX = """
import sys
from harness.services.own_memory import run_judging_child
code = "import sys; sys.stdin.read(); b = bytearray(600 * 2**20); b[::4096] = b'x' * len(b[::4096])"
done = run_judging_child([sys.executable, "-c", code], "{}", timeout_s=60)
print(done.oom_kills, done.returncode)
"""


def test_a_judging_child_runs_under_the_oracles_cap():
    parent = cgroup_parent()
    assert parent is not None
    box = CgroupCap(250 * MIB, parent, prefix="icebench-harness")
    try:
        done = subprocess.run(
            [*box.launch_prefix(), sys.executable, "-c", IN_THE_BOX],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        box.close()
    assert done.returncode == 0, done.stderr
    kills, returncode = map(int, done.stdout.split())
    assert kills == 1 and returncode == -9  # the child, killed by the kernel; the harness lives on


# A verifier's read (a `python -m MODULE` child, harness/engines/child_read.py) that outgrows the box.
READ_IN_THE_BOX = """
import os, sys
from pydantic import BaseModel
from harness.engines.child_read import ChildReadFailed, read_in_child
os.environ["PYTHONPATH"] = sys.argv[1]
class Spec(BaseModel):
    table: str = "bench.table"
try:
    read_in_child("hog", Spec(), "hog-reader", "bench.table")
except ChildReadFailed as failed:
    print(failed.harness_limit, failed)
"""


def test_a_verifier_killed_by_the_oracles_cap_is_the_harness_limit_not_the_tables(tmp_path):
    (tmp_path / "hog.py").write_text(
        "import sys\nsys.stdin.read()\nb = bytearray(600 * 2**20)\nb[::4096] = b'x' * len(b[::4096])\n"
    )
    done = run_in_box(250 * MIB, READ_IN_THE_BOX, str(tmp_path))
    assert done.returncode == 0, done.stderr
    limit, _, message = done.stdout.strip().partition(" ")
    assert limit == "True"
    assert message.startswith("hog-reader was OOM-killed reading bench.table under the harness's own cap")
