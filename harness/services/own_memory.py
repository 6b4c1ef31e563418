"""The harness's own memory: its peak while the oracle reads a table, and a cap on the harness itself.

At the canonical scale the harness must hold in the same box as the writers it judges: the
oracle's peak is recorded per run, and `--harness-memory` puts the harness (and so, nested
below it, every worker it starts) in a kernel-enforced cgroup, as in a 4 GB container.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import re
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from harness.base.caps import (
    HARNESS_BOX_PREFIX,
    MAX_CAP_BYTES,
    Cgroup,
    CgroupCap,
    MemoryCap,
    cgroup_parent,
    format_size,
    kill_all_inside,
)
from harness.base.errors import IcebenchError
from harness.base.orphan_guard import guarded
from harness.base.settings import BOX_ENV
from harness.base.signals import Terminated
from harness.services.launcher import ChildRun, run_capped
from harness.services.leftovers import remove_stale_cgroups

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def high_water_mark() -> int | None:
    """This process's peak resident set (VmHWM) in bytes, since start or the last reset."""
    match = re.search(r"VmHWM:\s+(\d+) kB", _STATUS.read_text())
    return int(match.group(1)) * 1024 if match else None


class _PeakBeforeResets:
    """The highest VmHWM any reset wiped: the peak since start survives the per-run resets."""

    bytes = 0


def reset_high_water_mark() -> bool:
    """Starts VmHWM afresh at the current RSS (Linux: `5` to clear_refs); False where not allowed."""
    before = high_water_mark() or 0
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    _PeakBeforeResets.bytes = max(_PeakBeforeResets.bytes, before)
    return True


def peak_since_start() -> int | None:
    """This process's resident peak since it started, across the oracle's resets of VmHWM."""
    now = high_water_mark()
    return max(now or 0, _PeakBeforeResets.bytes) or None


@dataclass
class PeakRss:
    """The resident peaks of the judging side during a block: this process's and each child's."""

    bytes: int | None = None  # this process's (the oracle's)
    children: list[int] = field(default_factory=list)  # each judging child's (a verifier's read)

    @property
    def largest(self) -> int | None:
        """The largest of every judging process's peak."""
        return max([self.bytes or 0, *self.children]) or None

    @property
    def largest_child(self) -> int | None:
        return max(self.children, default=None)


_MEASURING: ContextVar[PeakRss | None] = ContextVar("judging_peak", default=None)


@contextlib.contextmanager
def measure_peak_rss() -> Iterator[PeakRss]:
    """The process's resident peak during the block (None where VmHWM cannot be reset: then the
    figure would be the peak since start, which is not what it claims to be), and the peak of
    every judging child run meanwhile (`run_judging_child`)."""
    peak = PeakRss()
    resettable = reset_high_water_mark()
    token = _MEASURING.set(peak)
    try:
        yield peak
    finally:
        _MEASURING.reset(token)
        peak.bytes = high_water_mark() if resettable else None


def release_freed_memory() -> None:
    """What the last run's judging freed, given back to the kernel: Arrow's pool and glibc's
    per-thread arenas keep freed memory, so in a matrix the harness's resident size would ratchet up
    run by run (1.5-2.5 GiB after a few partitioned `wide` tables) and crowd the workers in its box."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # glibc only
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def judging_cap() -> MemoryCap:
    """The cap a judging child runs under: the oracle's, that is the harness's own cgroup (its box
    under --harness-memory), in a cgroup of its own below it so that its peak is its own."""
    parent = cgroup_parent()
    if parent is None:  # no cgroup: no cap for the oracle either; its peak is sampled by psutil
        return MemoryCap(None)
    limit = min(Cgroup(parent).limit_bytes(), MAX_CAP_BYTES)
    return CgroupCap(limit, parent)


def run_judging_child(command: list[str], input_text: str, timeout_s: float) -> ChildRun:
    """A judging process (a verifier's read) under the oracle's cap, its peak counted with the
    judging side's (`measure_peak_rss`)."""
    cap = judging_cap()
    try:
        done = run_capped(cap, command, input_text, timeout_s=timeout_s)
    finally:
        cap.close()
    if (measuring := _MEASURING.get()) is not None and done.peak_rss_bytes:
        measuring.children.append(done.peak_rss_bytes)
    return done


def run_in_box(cap_bytes: int, command: list[str], say: Callable[[str], None]) -> int:
    """Runs `command` (this CLI again) as a child that enters a fresh cgroup before exec, so all of
    the harness's memory from its first byte counts, and the workers' cgroups nest below it
    (hierarchical accounting: the box holds harness and workers together, as one container
    would). Returns its exit code after telling `say` the box's peak and OOM kills; removes the box."""
    parent = cgroup_parent()
    if parent is None:
        raise IcebenchError("--harness-memory needs a writable cgroup v1 memory controller")
    remove_stale_cgroups(parent)  # the command in the box sweeps only inside it
    try:
        box = CgroupCap(cap_bytes, parent, prefix=HARNESS_BOX_PREFIX)
    except OSError as exc:
        raise IcebenchError(f"cannot create the harness's memory cgroup under {parent}: {exc}") from None
    try:
        process = subprocess.Popen(
            [*box.launch_prefix(), *guarded(command)], env={**os.environ, BOX_ENV: str(box.path)}
        )
        try:
            returncode = process.wait()
        except KeyboardInterrupt:  # the child got the Ctrl-C too: let it clean up, then report
            returncode = process.wait()
        except Terminated as terminated:  # sent to us alone: the child cleans up as it would
            process.send_signal(terminated.signum)
            returncode = process.wait()
        kills = box.oom_kills()
        say(
            f"harness box {format_size(cap_bytes)}: peak {format_size(box.peak_bytes())} "
            f"(harness + workers, page cache included), oom kills {kills} "
            "(of the harness itself: a worker's is in its record)"
        )
        if returncode == -signal.SIGKILL and kills:
            raise IcebenchError(f"the harness was OOM-killed inside its {format_size(cap_bytes)} box")
        return returncode if returncode >= 0 else 128 - returncode
    finally:
        kill_all_inside(box.path)  # a harness killed in its box leaves its workers behind
        box.close()
