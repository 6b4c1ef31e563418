"""Starts one worker inside its memory cap, samples its memory, and collects what the kernel saw."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import psutil

from harness.caps import MemoryCap, MemoryUsage


@dataclass
class Launch:
    returncode: int
    wall_s: float
    peak_memory_bytes: int | None
    oom_kills: int
    timed_out: bool
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    cache_at_peak_bytes: int | None = None  # page cache in the sample where usage peaked


class Sampler(threading.Thread):
    """Memory of the worker every `interval` seconds: the cgroup's figures, else psutil's tree RSS."""

    def __init__(self, cap: MemoryCap, pid: int | None, interval: float) -> None:
        super().__init__(daemon=True)
        self.cap, self.pid, self.interval = cap, pid, interval
        self.samples: list[tuple[float, int, int]] = []
        self.peak: MemoryUsage | None = None  # the sample with the highest usage
        self.stopped = threading.Event()
        self.start_time = time.perf_counter()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            usage = self.cap.sample() or (_tree_usage(self.pid) if self.pid else None)
            if usage:
                self.samples.append(
                    (round(time.perf_counter() - self.start_time, 3), usage.usage_bytes, usage.rss_bytes)
                )
                if self.peak is None or usage.usage_bytes > self.peak.usage_bytes:
                    self.peak = usage


def _tree_usage(pid: int) -> MemoryUsage | None:
    try:
        root = psutil.Process(pid)
        rss = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
    except psutil.Error:
        return None
    return MemoryUsage(usage_bytes=rss, rss_bytes=rss, cache_bytes=0)


def downsample(samples: list[tuple[float, int, int]], points: int) -> list[tuple[float, int, int]]:
    """Keeps at most `points` samples, always including the highest one."""
    if len(samples) <= points:
        return samples
    step = len(samples) / points
    kept = {int(i * step) for i in range(points)} | {max(range(len(samples)), key=lambda i: samples[i][1])}
    return [samples[i] for i in sorted(kept)]


class WorkerHandle(Protocol):
    """A started worker: a process of ours, or a container."""

    pid: int | None  # for psutil sampling when no cgroup is there to read

    def wait(self) -> int:
        """Blocks until the worker ends; its exit code (negative: killed by that signal)."""
        ...

    def kill(self) -> None:
        """Kills the worker and everything it started."""
        ...

    def killed_by_oom(self) -> bool:
        """Evidence of an OOM kill beyond the cgroup's own counter."""
        ...


class ProcessHandle:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.pid: int | None = process.pid

    def wait(self) -> int:
        return self.process.wait()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def killed_by_oom(self) -> bool:
        return False


def launch_worker(
    cap: MemoryCap,
    spec_path: Path,
    log_path: Path,
    *,
    timeout_s: float,
    sample_interval_s: float,
    timeline_points: int,
    python_arguments: list[str],
    python: Path | None = None,
    on_start: Callable[[WorkerHandle], None] | None = None,
) -> Launch:
    """The worker as a child process in its own process group, moved into the cap before exec;
    `python` is another environment's interpreter (a library version variant)."""
    command = [*cap.launch_prefix(), str(python or sys.executable), *python_arguments, str(spec_path)]
    with log_path.open("ab") as log:
        start = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    return supervise(
        cap, ProcessHandle(process), start, timeout_s=timeout_s, sample_interval_s=sample_interval_s,
        timeline_points=timeline_points, on_start=on_start,
    )  # fmt: skip


def supervise(
    cap: MemoryCap,
    handle: WorkerHandle,
    start: float,
    *,
    timeout_s: float,
    sample_interval_s: float,
    timeline_points: int,
    on_start: Callable[[WorkerHandle], None] | None = None,
) -> Launch:
    """Samples memory until the worker ends; kills it on timeout, Ctrl-C or any failure of ours.

    `on_start` gets the handle first: a worker supervised from another thread can be killed from
    the main one (see RunningWorkers)."""
    if on_start is not None:
        on_start(handle)
    sampler = Sampler(cap, handle.pid, sample_interval_s)
    sampler.start()
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        handle.kill()

    timer = threading.Timer(timeout_s, on_timeout)
    timer.start()
    try:
        returncode = handle.wait()
    except BaseException:  # the worker must not outlive us
        handle.kill()
        raise
    finally:
        timer.cancel()
        sampler.stopped.set()
        sampler.join()
    wall = time.perf_counter() - start
    timeline = sampler.samples
    peak = cap.peak_bytes() or max((s[1] for s in timeline), default=None)
    return Launch(
        returncode=returncode,
        wall_s=wall,
        peak_memory_bytes=peak,
        oom_kills=max(cap.oom_kills(), int(handle.killed_by_oom())),
        timed_out=timed_out.is_set(),
        timeline=downsample(timeline, timeline_points),
        cache_at_peak_bytes=sampler.peak.cache_bytes if sampler.peak and cap.cap_bytes else None,
    )


class RunningWorkers:
    """Workers supervised from several threads. Only the main thread sees Ctrl-C, so it kills them
    all from here; a worker that starts after that is killed as it registers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handles: list[WorkerHandle] = []
        self._killed = False

    def started(self, handle: WorkerHandle) -> None:
        with self._lock:
            self._handles.append(handle)
            killed = self._killed
        if killed:
            handle.kill()

    def kill_all(self) -> None:
        with self._lock:
            self._killed = True
            handles = list(self._handles)
        for handle in handles:
            handle.kill()
