"""The harness's own memory: its peak while the oracle reads a table, and a cap on the harness itself.

At the canonical scale the harness must hold in the same box as the writers it judges: the
oracle's peak is recorded per run, and `--harness-memory` puts the harness (and so, nested
below it, every worker it starts) in a kernel-enforced cgroup, as in a 4 GB container.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.caps import CgroupCap, cgroup_parent, format_size
from harness.errors import IcebenchError

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def high_water_mark() -> int | None:
    """This process's peak resident set (VmHWM) in bytes, since start or the last reset."""
    match = re.search(r"VmHWM:\s+(\d+) kB", _STATUS.read_text())
    return int(match.group(1)) * 1024 if match else None


def reset_high_water_mark() -> bool:
    """Starts VmHWM afresh at the current RSS (Linux: `5` to clear_refs); False where not allowed."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


@dataclass
class PeakRss:
    bytes: int | None = None


@contextlib.contextmanager
def measure_peak_rss() -> Iterator[PeakRss]:
    """The process's resident peak during the block (None where VmHWM cannot be reset: then the
    figure would be the peak since start, which is not what it claims to be)."""
    peak = PeakRss()
    resettable = reset_high_water_mark()
    try:
        yield peak
    finally:
        peak.bytes = high_water_mark() if resettable else None


class HarnessBox:
    """A cgroup the harness process moves itself into; workers' cgroups are then created below it,
    so the box holds the harness and its workers together (hierarchical accounting)."""

    def __init__(self, cap_bytes: int) -> None:
        parent = cgroup_parent()
        if parent is None:
            raise IcebenchError("--harness-memory needs a writable cgroup v1 memory controller")
        self.parent = parent
        try:
            self.cap = CgroupCap(cap_bytes, parent, prefix="icebench-harness")
        except OSError as exc:
            raise IcebenchError(f"cannot create the harness's memory cgroup under {parent}: {exc}") from None
        # Memory the harness already holds moves with it (v1 only charges new pages otherwise).
        with contextlib.suppress(OSError):
            (self.cap.path / "memory.move_charge_at_immigrate").write_text("3")
        (self.cap.path / "cgroup.procs").write_text(str(os.getpid()))

    def peak_bytes(self) -> int | None:
        return self.cap.peak_bytes()

    def oom_kills(self) -> int:
        return self.cap.oom_kills()

    def close(self) -> None:
        """Moves the harness back out and removes the box."""
        (self.parent / "cgroup.procs").write_text(str(os.getpid()))
        self.cap.close()

    def describe(self) -> str:
        return (
            f"harness box {format_size(self.cap.cap_bytes)}: peak {format_size(self.peak_bytes())} "
            f"(harness + workers, page cache included), oom kills {self.oom_kills()}"
        )


@contextlib.contextmanager
def harness_box(cap_bytes: int | None) -> Iterator[HarnessBox | None]:
    """The harness inside a box of `cap_bytes` for the block; nothing when None."""
    if cap_bytes is None:
        yield None
        return
    box = HarnessBox(cap_bytes)
    try:
        yield box
    finally:
        box.close()
