"""Servers the harness starts itself: bound to loopback, health-checked, logged, stopped by PID.

Every service is started in its own process group and stopped (SIGTERM, then SIGKILL) when its
`with` block ends, whether by success, failure, Ctrl-C or SIGTERM; it dies with the harness when
that is SIGKILLed (harness.base.orphan_guard).
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from harness.base.caps import enter_cgroup_prefix, harness_box
from harness.base.errors import IcebenchError
from harness.base.orphan_guard import guarded

LOOPBACK = "127.0.0.1"


@contextmanager
def environment_variables(values: dict[str, str]) -> Iterator[None]:
    """Sets variables for this process and every child it starts; restores them afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# Ports below the kernel's ephemeral range: a port handed out by port 0 is in that range, and while
# a server starts its own outgoing connections (weed's components dialling each other) can take the
# ports it has not bound yet ("address already in use", CI of 2026-11-26).
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_SERVICE_PORT = 10000
# Ports this process handed out lately: free when probed, but a server given one may not have bound
# it yet, so a second pick of it (one of weed's 13 listeners drawing another's) would collide
# ("bind: address already in use", CI of 2026-11-28).
_HANDED_OUT: collections.deque[int] = collections.deque(maxlen=4096)


def free_port() -> int:
    """A loopback port free now, outside the ephemeral range, so no outgoing connection takes it,
    and none this process handed out lately."""
    try:
        ephemeral_low = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    for _ in range(100):
        port = random.randrange(LOWEST_SERVICE_PORT, max(ephemeral_low, LOWEST_SERVICE_PORT + 1))
        if port in _HANDED_OUT:
            continue
        with socket.socket() as probe:
            try:
                probe.bind((LOOPBACK, port))
            except OSError:
                continue
            _HANDED_OUT.append(port)
            return port
    with socket.socket() as probe:  # the low range is full: any free port beats none
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


class ServiceFailed(IcebenchError):
    pass


@contextmanager
def managed_process(
    name: str,
    command: list[str],
    log_path: Path,
    healthy: Callable[[], bool],
    *,
    env: dict[str, str] | None = None,
    timeout_s: float = 60.0,
    outside_box: bool = False,
) -> Iterator[subprocess.Popen[bytes]]:
    """Runs `command` until the block ends; `healthy()` must turn true within `timeout_s`.

    `outside_box`: a server of the stack (S3, REST catalog), not part of the user's container: it
    runs beside the --harness-memory box, not in it, its resident peak recorded apart
    (`service_peaks`)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    box = harness_box() if outside_box else None
    if box is not None:
        command = [*enter_cgroup_prefix(box.path.parent), *command]
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            guarded(command),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    measured = outside_box and _RUNNING.setdefault(name, process.pid) == process.pid
    try:
        _wait_healthy(name, process, healthy, log_path, timeout_s)
        _WATCHED[name] = (process, log_path)
        yield process
    finally:
        if _WATCHED.get(name, (None,))[0] is process:
            del _WATCHED[name]
        if measured:
            _RUNNING.pop(name, None)
        stop_process_group(process)


# Every server up now (name -> process, log), for the runs to ask whether one has died.
_WATCHED: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}


def dead_service() -> str | None:
    """Why a server the harness started is gone before its block ended ("service SeaweedFS S3 server
    died (exit code -9; see LOG)"), or None: what a run against it would meet, found at once rather
    than after minutes of a client's retries."""
    for name, (process, log_path) in list(_WATCHED.items()):
        if process.poll() is not None:
            return f"service {name} died (exit code {process.returncode}; see {log_path})"
    return None


# The stack's servers running now (name -> pid), whose peaks the runs record.
_RUNNING: dict[str, int] = {}


def service_peaks() -> dict[str, int]:
    """The resident peak (VmHWM, summed over its process tree) of each server of the stack that
    runs now, since it started."""
    peaks = {}
    for name, pid in list(_RUNNING.items()):
        with contextlib.suppress(psutil.Error, OSError):
            root = psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
            peaks[name] = sum(_high_water_mark(process.pid) for process in tree)
    return peaks


def _high_water_mark(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _wait_healthy(
    name: str, process: subprocess.Popen[bytes], healthy: Callable[[], bool], log_path: Path, timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceFailed(
                f"{name} exited with code {process.returncode} while starting; see {log_path}"
            )
        with contextlib.suppress(OSError):
            if healthy():
                return
        time.sleep(0.1)
    raise ServiceFailed(f"{name} was not healthy after {timeout_s:.0f} s; see {log_path}")


def stop_process_group(process: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """SIGTERM to the service's process group, SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
