"""Memory caps enforced by the kernel, and the peak/OOM figures the kernel keeps for them.

`cgroup`: a cgroup v1 memory cgroup created under our own (limit on RAM+swap for the whole
worker tree, peak from `memory.max_usage_in_bytes`, OOM from the `oom_kill` counter), and a cpuacct
cgroup at the same path where that hierarchy is ours to write (the whole tree's CPU time).
`rlimit`: RLIMIT_AS on the worker process only (virtual memory; a last resort).
`none`: no cap, peak from the worker's ru_maxrss.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator

from harness.base.errors import IcebenchError, close_match

CGROUP_ROOT = Path("/sys/fs/cgroup/memory")
CPUACCT_ROOT = CGROUP_ROOT.parent / "cpuacct"
# Below this no Python interpreter with pyarrow can even start (docs/commands.md names it).
MIN_CAP_BYTES = 24 * 2**20
# Above this a cgroup v1 limit reads back as "unlimited": no cap at all.
MAX_CAP_BYTES = 2**50
# Our cgroups are `<prefix>-<pid of the harness that made it>-<8 hex>`: a worker's cap, or the box
# a harness runs in (--harness-memory). The start-up sweep removes those whose harness is dead.
WORKER_PREFIX = "icebench"
HARNESS_BOX_PREFIX = "icebench-harness"
OUR_CGROUP_NAME = re.compile(r"icebench-(?:harness-)?(\d+)-[0-9a-f]{8}")
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def our_cgroup_name(prefix: str = WORKER_PREFIX) -> str:
    """A new cgroup's name as OUR_CGROUP_NAME reads it: the start-up sweep knows whose it is."""
    return f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def parse_size(text: str) -> int:
    """'512m', '2g', '1.5G', '1048576' -> bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if not match:
        raise IcebenchError(f"memory cap {text!r} is not a size (use e.g. 512m, 2g)")
    number, unit = match.groups()
    return checked_size(int(float(number) * _UNITS[unit]), text)


def checked_size(size: int, text: object) -> int:
    """A cap in bytes within what a worker needs and a kernel holds; `text` as it was given."""
    if size < MIN_CAP_BYTES:
        raise IcebenchError(f"memory cap {text!r} is below the {MIN_CAP_BYTES // 2**20} MiB any worker needs")
    if size > MAX_CAP_BYTES:
        raise IcebenchError(f"memory cap {text!r} is beyond any machine (the kernel would hold no cap)")
    return size


def size_of(value: object) -> object:
    """A size as the command line, a config file or the environment gives it ('2g') in bytes:
    sizes are parsed once, where they come in, and travel as bytes. A number (TOML's) is bytes,
    held to the same range."""
    try:
        if isinstance(value, str):
            return parse_size(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return checked_size(value, value)
    except IcebenchError as exc:
        raise ValueError(str(exc)) from None
    return value


ByteSize = Annotated[int, BeforeValidator(size_of)]


def machine_memory_bytes() -> int:
    """What the harness can have: physical memory, or less where a cgroup above us (a container)
    is limited. Our own harness box does not count: a worker cap is held to the machine's."""
    import psutil  # here, not at the top: every --help reads a size flag, none needs psutil

    limits = [psutil.virtual_memory().total]
    for cgroup in _own_memory_cgroups():
        if not cgroup.name.startswith(f"{HARNESS_BOX_PREFIX}-"):
            with contextlib.suppress(OSError, ValueError):
                limits.append(Cgroup(cgroup).limit_bytes())
    return min(limits)


def check_cap_fits(size: int, what: str, allow_overcommit: bool) -> int:
    """The cap; an error naming the setting when it is more than the machine has (the kernel would
    hold it, and the run would measure the machine instead of the cap)."""
    machine = machine_memory_bytes()
    if size > machine and not allow_overcommit:
        raise IcebenchError(
            f"{what} {size_text(size)} is more than this machine's {format_size(machine)}: "
            "it would never be reached (pass --allow-overcommit to run anyway)"
        )
    return size


def size_text(size: int) -> str:
    """A size as one types it: `4g`, `300m`, else its bytes (a cap read into bytes, said back)."""
    for unit, factor in (("g", 2**30), ("m", 2**20)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def format_size(size: int | None) -> str:
    if size is None:
        return "-"
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} B"


def _own_memory_cgroups() -> Iterator[Path]:
    """This process's memory cgroup, then each ancestor below the hierarchy's root."""
    cgroup = _own_memory_cgroup()
    while cgroup is not None and cgroup != CGROUP_ROOT and cgroup.is_relative_to(CGROUP_ROOT):
        yield cgroup
        cgroup = cgroup.parent


def _own_memory_cgroup() -> Path | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return CGROUP_ROOT / path.lstrip("/")
    return None


@dataclass
class MemoryUsage:
    usage_bytes: int
    rss_bytes: int
    cache_bytes: int


class MemoryCap:
    """One worker's cap. `launch_prefix` goes in front of the worker's command."""

    method = "none"

    def __init__(self, cap_bytes: int | None) -> None:
        self.cap_bytes = cap_bytes

    def launch_prefix(self) -> list[str]:
        return []

    def sample(self) -> MemoryUsage | None:
        return None

    def peak_bytes(self) -> int | None:
        return None

    def oom_kills(self) -> int:
        return 0

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of every process that ran in the cap (None: not accounted)."""
        return None

    def close(self) -> None:
        """Release what the cap created."""


# Writes its own PID into each cgroup named before `--`, then execs the command after it.
_ENTER_CGROUPS = (
    'for c; do [ "$c" = -- ] && break; echo $$ > "$c/cgroup.procs" || exit 1; shift; done; shift; exec "$@"'
)


def enter_cgroup_prefix(*paths: Path) -> list[str]:
    """What goes in front of a command so that it moves itself into the cgroups at `paths` before
    exec: every byte it maps (and every CPU second it uses, in a cpuacct one) is counted there."""
    return ["sh", "-c", _ENTER_CGROUPS, "icebench-enter", *map(str, paths), "--"]


class Cgroup:
    """The figures the kernel keeps for a cgroup v1 memory cgroup (hierarchical: its descendants'
    memory counts too)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read_int(self, name: str) -> int:
        return int((self.path / name).read_text())

    def limit_bytes(self) -> int:
        return self._read_int("memory.limit_in_bytes")

    def sample(self) -> MemoryUsage | None:
        try:
            stat = dict(line.split() for line in (self.path / "memory.stat").read_text().splitlines())
            return MemoryUsage(
                self._read_int("memory.usage_in_bytes"), int(stat["total_rss"]), int(stat["total_cache"])
            )
        except (OSError, KeyError, ValueError):
            return None

    def peak_bytes(self) -> int | None:
        return self._read_int("memory.max_usage_in_bytes")

    def oom_kills(self) -> int:
        """Kills of processes in this cgroup itself: the kernel counts a kill at the victim's
        cgroup, whichever limit (its own or an ancestor's) was hit."""
        for line in (self.path / "memory.oom_control").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0


def harness_box() -> Cgroup | None:
    """The --harness-memory box this process runs in (its own cgroup or an ancestor), if any."""
    box = next((c for c in _own_memory_cgroups() if c.name.startswith(f"{HARNESS_BOX_PREFIX}-")), None)
    return Cgroup(box) if box is not None else None


class CgroupCap(Cgroup, MemoryCap):
    method = "cgroup-v1"

    def __init__(self, cap_bytes: int, parent: Path, prefix: str = WORKER_PREFIX) -> None:
        MemoryCap.__init__(self, cap_bytes)
        Cgroup.__init__(self, parent / our_cgroup_name(prefix))
        self.path.mkdir()
        try:
            self._write("memory.limit_in_bytes", cap_bytes)
            memsw = self.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():  # no swap either: the cap is the cap
                memsw.write_text(str(cap_bytes))
            # What the kernel holds (rounded to pages), not what was asked: the figure recorded.
            self.cap_bytes = self.limit_bytes()
        except OSError:
            self.close()
            raise
        self.cpu_path = _cpu_accounting(self.path)

    def _write(self, name: str, value: int) -> None:
        (self.path / name).write_text(str(value))

    @property
    def hierarchy_path(self) -> str:
        """The cgroup as the hierarchy names it (what docker's --cgroup-parent takes)."""
        return "/" + str(self.path.relative_to(CGROUP_ROOT))

    def launch_prefix(self) -> list[str]:
        return enter_cgroup_prefix(self.path, *([self.cpu_path] if self.cpu_path else []))

    def cpu_seconds(self) -> float | None:
        """cpuacct.usage: charged up the hierarchy as it is used, so a container's, whose own cgroup
        below this one is gone when it ends, is in it too."""
        if self.cpu_path is None:
            return None
        try:
            return int((self.cpu_path / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def close(self, settle_s: float = 10.0) -> None:
        """Removes the cgroup and what a container runtime made below it, in every hierarchy (runc
        creates the parent path under each controller; the container's own is torn down async)."""
        remove_cgroup(self.path.relative_to(CGROUP_ROOT), settle_s)


def _cpu_accounting(memory_cgroup: Path) -> Path | None:
    """A cpuacct cgroup at the memory cgroup's path (its parents made as a container runtime makes
    them; remove_cgroup removes it with the memory one), or None where cgroup v1's cpuacct is not
    mounted or not ours to write: the CPU time is then not recorded."""
    path = CPUACCT_ROOT / memory_cgroup.relative_to(CGROUP_ROOT)
    try:
        path.mkdir(parents=True)
    except OSError:
        return None
    return path


def cgroup_owner(name: str) -> int | None:
    """The PID of the harness that made the cgroup of this name (a worker's cap or a harness box);
    None for any cgroup not named as ours."""
    match = OUR_CGROUP_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def kill_all_inside(cgroup: Path) -> None:
    """SIGKILL to every process in the cgroup and below it (what a killed harness left running)."""
    for procs in cgroup.rglob("cgroup.procs"):
        with contextlib.suppress(OSError):  # the cgroup went meanwhile
            for pid in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)


def remove_cgroup(relative: Path, settle_s: float = 10.0) -> None:
    """Removes the memory cgroup at `relative` (to the memory hierarchy's root) with everything
    below it, and the same path in every other hierarchy, once the processes have left."""
    deadline = time.monotonic() + settle_s
    for hierarchy in [CGROUP_ROOT, *(p for p in CGROUP_ROOT.parent.iterdir() if p != CGROUP_ROOT)]:
        top = hierarchy / relative
        if top.is_dir():
            for cgroup in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                _rmdir_when_empty(cgroup, deadline)
            _rmdir_when_empty(top, deadline)


def _rmdir_when_empty(cgroup: Path, deadline: float) -> None:
    while True:
        try:
            cgroup.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class RlimitCap(MemoryCap):
    method = "rlimit-as"

    def launch_prefix(self) -> list[str]:
        # util-linux prlimit sets the limit before exec (no preexec_fn: unsafe with threads).
        return ["prlimit", f"--as={self.cap_bytes}", "--"]


def cgroup_parent() -> Path | None:
    """Our own memory cgroup when we may create children in it."""
    own = _own_memory_cgroup()
    if own is None or not own.is_dir() or not os.access(own, os.W_OK):
        return None
    return own


def best_method() -> str:
    return "cgroup" if cgroup_parent() is not None else "rlimit"


ISOLATIONS = ("auto", "cgroup", "docker", "rlimit", "none")


def resolve_isolation(isolation: str) -> str:
    """`auto` becomes the best the machine allows without Docker: a cgroup where writable, else RLIMIT_AS."""
    if isolation not in ISOLATIONS:
        hint = close_match(isolation, ISOLATIONS)
        raise IcebenchError(f"unknown isolation {isolation!r}{hint}; choose from {', '.join(ISOLATIONS)}")
    return best_method() if isolation == "auto" else isolation


def make_cap(isolation: str, cap_bytes: int | None) -> MemoryCap:
    method = resolve_isolation(isolation)
    if cap_bytes is None or method == "none":
        return MemoryCap(None)
    if method in ("cgroup", "docker"):  # a container runs below a cgroup of ours: its peak outlives it
        parent = cgroup_parent()
        if parent is None:
            raise IcebenchError(f"isolation {method!r} needs a writable cgroup v1 memory controller")
        try:
            return CgroupCap(cap_bytes, parent)
        except OSError as exc:
            raise IcebenchError(f"cannot create a memory cgroup under {parent}: {exc}") from None
    return RlimitCap(cap_bytes)


# --- Who the kernel kills when the harness box fills -------------------------------------------

OOM_SCORE_ADJ = Path("/proc/self/oom_score_adj")
# A worker raises its own (any process may): when the harness box fills, the kernel kills the
# worker, the thing measured, whose record says the box filled and how much of it the harness held,
# not the harness, which would take the rest of the matrix with it. Its children (a JVM) inherit it.
WORKER_OOM_SCORE_ADJ = 500


def set_oom_score_adj(value: int, path: Path = OOM_SCORE_ADJ) -> bool:
    """This process's OOM score adjustment; False where it may not (lowering it needs
    CAP_SYS_RESOURCE) or the kernel has none: nothing changes then."""
    try:
        path.write_text(f"{value}\n")
    except OSError:
        return False
    return True
