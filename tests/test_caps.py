import subprocess
import sys
import time

import pytest

from harness.base.caps import CgroupCap, cgroup_parent, format_size, make_cap, parse_size
from harness.base.errors import IcebenchError

needs_cgroup = pytest.mark.skipif(cgroup_parent() is None, reason="no writable cgroup v1 memory controller")


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512m", 512 * 2**20),
        ("2g", 2 * 2**30),
        ("1.5G", 3 * 2**29),
        ("64MiB", 64 * 2**20),
        ("100000000", 100_000_000),
    ],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "2x", "", "1k"])
def test_parse_size_rejects_bad_or_impossible_caps(text):
    with pytest.raises(IcebenchError, match="memory cap"):
        parse_size(text)


def test_format_size():
    assert format_size(3 * 2**30) == "3.0 GiB"
    assert format_size(None) == "-"


def _allocate(cap, megabytes: int) -> subprocess.CompletedProcess:
    code = f"b = bytearray({megabytes} * 2**20); b[::4096] = b'x' * len(b[::4096])"
    return subprocess.run([*cap.launch_prefix(), sys.executable, "-c", code], capture_output=True)


@needs_cgroup
def test_cgroup_cap_kills_a_worker_over_the_cap_and_says_so():
    cap = make_cap("cgroup", 96 * 2**20)
    assert isinstance(cap, CgroupCap)
    try:
        done = _allocate(cap, 300)
        assert done.returncode == -9
        assert cap.oom_kills() >= 1
        assert cap.peak_bytes() <= 96 * 2**20
    finally:
        cap.close()
    assert not cap.path.exists()


@needs_cgroup
def test_cgroup_cap_measures_the_peak_of_a_worker_under_the_cap():
    cap = make_cap("cgroup", 512 * 2**20)
    try:
        done = _allocate(cap, 200)
        assert done.returncode == 0
        assert cap.oom_kills() == 0
        assert cap.peak_bytes() >= 200 * 2**20
    finally:
        cap.close()


@needs_cgroup
def test_cgroup_cap_counts_the_cpu_time_of_the_whole_tree_a_detached_grandchild_included():
    # The grandchild burns 0.5 s of CPU after the worker exited without waiting for it.
    burn = "import time\nwhile time.process_time() < 0.5: pass"
    spawn = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {burn!r}])"
    cap = make_cap("cgroup", 512 * 2**20)
    idle = make_cap("cgroup", 512 * 2**20)
    try:
        started = subprocess.run([*cap.launch_prefix(), sys.executable, "-c", spawn], capture_output=True)
        assert started.returncode == 0, started.stderr
        asleep = subprocess.run([*idle.launch_prefix(), sys.executable, "-c", "import time; time.sleep(1)"])
        assert asleep.returncode == 0
        deadline = time.monotonic() + 30
        while (cap.cpu_seconds() or 0) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cap.cpu_seconds() >= 0.5
        assert idle.cpu_seconds() < 0.5  # a second asleep is start-up only
    finally:
        cap.close()
        idle.close()
    assert not cap.cpu_path.exists()


def test_rlimit_cap_turns_an_oversized_allocation_into_memory_error():
    cap = make_cap("rlimit", 256 * 2**20)
    done = _allocate(cap, 600)
    assert done.returncode != 0
    assert b"MemoryError" in done.stderr
    assert cap.cpu_seconds() is None  # no cgroup: no CPU accounting
