"""Starts one worker inside its memory cap, samples its memory, and collects what the kernel saw."""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

import psutil

from harness.base.caps import MemoryCap, MemoryUsage, harness_box
from harness.base.orphan_guard import child_environment, guarded
from harness.services.processes import dead_service


@dataclass
class Launch:
    returncode: int
    wall_s: float
    peak_memory_bytes: int | None
    oom_kills: int
    timed_out: bool
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    cache_at_peak_bytes: int | None = None  # page cache in the sample where usage peaked
    output: OutputTail | None = None  # the end of what the worker printed
    # The cap that applied: the worker's as the kernel holds it, or the harness box's where that is
    # smaller (None: none enforced).
    enforced_cap_bytes: int | None = None
    worker_cap_bytes: int | None = None  # the worker's own cap as the kernel holds it
    box_cap_bytes: int | None = None  # the --harness-memory box the worker nests in (None: no box)
    # The worker's and the box's samples, taken together, where the worker's resident memory
    # peaked (an OOM kill: within one interval of it), so that the limit a kill hit can be told.
    worker_at_end: MemoryUsage | None = None
    box_at_end: MemoryUsage | None = None
    cpu_s: float | None = None  # the whole worker's CPU time, where its cap accounts it


# A traceback's last line (`OSError: [Errno 28] No space left on device`): the reason it died.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failed)\b")


@dataclass
class OutputTail:
    """The last lines a worker printed, kept in memory: when its log cannot be written (a full
    disk), the reason it died still reaches the record."""

    lines: list[str] = field(default_factory=list)
    log_error: str | None = None  # why the log could not be written, if it could not

    def reason(self) -> str | None:
        """The last exception line the worker printed, else its last line."""
        lines = [line.strip() for line in self.lines if line.strip()]
        for line in reversed(lines):
            if _EXCEPTION_LINE.match(line):
                return line
        return lines[-1] if lines else None


def write_log(log_path: Path, output: bytes, keep_lines: int = 50) -> OutputTail:
    """A finished worker's whole output (a container's) to its log; the tail either way."""
    tail = OutputTail(output.decode(errors="replace").splitlines()[-keep_lines:])
    try:
        log_path.write_bytes(output)
    except OSError as exc:
        tail.log_error = exc.strerror or str(exc)
    return tail


class OutputCopier(threading.Thread):
    """Copies a running worker's output from its pipe to its log, keeping the tail in memory."""

    def __init__(self, stream: IO[bytes], log_path: Path, keep_lines: int = 50) -> None:
        super().__init__(daemon=True)
        self.stream, self.log_path = stream, log_path
        self.lines: collections.deque[str] = collections.deque(maxlen=keep_lines)
        self.log_error: str | None = None

    def run(self) -> None:
        log = self._open()
        for line in iter(self.stream.readline, b""):
            self.lines.append(line.decode(errors="replace").rstrip("\n"))
            if log is not None:
                try:
                    log.write(line)
                    log.flush()
                except OSError as exc:
                    self.log_error, log = exc.strerror or str(exc), None
        if log is not None:
            with contextlib.suppress(OSError):
                log.close()

    def _open(self) -> IO[bytes] | None:
        try:
            return self.log_path.open("ab")
        except OSError as exc:
            self.log_error = exc.strerror or str(exc)
            return None

    def tail(self, timeout_s: float = 10.0) -> OutputTail:
        """Once the output ended (a child the worker left may hold the pipe open: not forever)."""
        self.join(timeout_s)
        if not self.is_alive():
            self.stream.close()
        return OutputTail(list(self.lines), self.log_error)


class Sampler(threading.Thread):
    """Memory of the worker every `interval` seconds: the cgroup's figures, else psutil's tree RSS."""

    def __init__(self, cap: MemoryCap, pid: int | None, interval: float) -> None:
        super().__init__(daemon=True)
        self.cap, self.pid, self.interval = cap, pid, interval
        self.samples: list[tuple[float, int, int]] = []
        self.peak: MemoryUsage | None = None  # the sample with the highest usage
        self.box = harness_box()  # sampled beside the worker: the box may fill before the cap
        # The worker's sample of highest rss and the box's taken with it.
        self.last: MemoryUsage | None = None
        self.box_last: MemoryUsage | None = None
        self.stopped = threading.Event()
        self.start_time = time.perf_counter()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            usage = self.cap.sample() or (_tree_usage(self.pid) if self.pid else None)
            box = self.box.sample() if self.box is not None else None
            if usage and (self.last is None or usage.rss_bytes >= self.last.rss_bytes):
                self.last, self.box_last = usage, box  # the worker's resident peak so far
            if usage:
                self.samples.append(
                    (round(time.perf_counter() - self.start_time, 3), usage.usage_bytes, usage.rss_bytes)
                )
                if self.peak is None or usage.usage_bytes > self.peak.usage_bytes:
                    self.peak = usage


class ServiceWatch(threading.Thread):
    """Kills the worker when a server of the stack dies: its client would retry for minutes."""

    interval_s = 0.5

    def __init__(self, handle: WorkerHandle) -> None:
        super().__init__(daemon=True)
        self.handle = handle
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            if dead_service() is not None:  # the runner asks again and records why
                self.handle.kill()
                return


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
    environment: dict[str, str],
    python: Path | None = None,
    program: list[str] | None = None,
    on_start: Callable[[WorkerHandle], None] | None = None,
) -> Launch:
    """The worker as a child process in its own process group, moved into the cap before exec;
    `python` is another environment's interpreter (a library version variant), `program` a worker
    in another language that replaces Python and its arguments, `environment` variables it gets
    beyond ours. It dies with this process (harness.base.orphan_guard; this thread waits for it
    below, so only the harness's death ends the thread that forked it)."""
    worker = program or [str(python or sys.executable), *python_arguments]
    command = [*cap.launch_prefix(), *worker, str(spec_path)]
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True, env=child_environment({**os.environ, **environment}),
    )  # fmt: skip
    assert process.stdout is not None
    copier = OutputCopier(process.stdout, log_path)
    copier.start()
    try:
        launched = supervise(
            cap, ProcessHandle(process), start, timeout_s=timeout_s, sample_interval_s=sample_interval_s,
            timeline_points=timeline_points, on_start=on_start,
        )  # fmt: skip
    finally:
        output = copier.tail()
    launched.output = output
    return launched


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
    watch = ServiceWatch(handle)
    watch.start()
    try:
        with _watched(cap, handle.pid, handle.kill, timeout_s, sample_interval_s) as (sampler, timed_out):
            returncode = handle.wait()
    finally:
        watch.stopped.set()
        watch.join()
    wall = time.perf_counter() - start
    timeline = sampler.samples
    box_cap = sampler.box.limit_bytes() if sampler.box is not None else None
    peak = cap.peak_bytes() or max((s[1] for s in timeline), default=None)
    return Launch(
        returncode=returncode,
        wall_s=wall,
        peak_memory_bytes=peak,
        oom_kills=max(cap.oom_kills(), int(handle.killed_by_oom())),
        timed_out=timed_out.is_set(),
        timeline=downsample(timeline, timeline_points),
        cache_at_peak_bytes=sampler.peak.cache_bytes if sampler.peak and cap.cap_bytes else None,
        enforced_cap_bytes=applied_cap(cap.cap_bytes, box_cap),
        worker_cap_bytes=cap.cap_bytes,
        box_cap_bytes=box_cap,
        worker_at_end=sampler.last,
        box_at_end=sampler.box_last,
        cpu_s=cap.cpu_seconds(),
    )


@contextlib.contextmanager
def _watched(
    cap: MemoryCap, pid: int, kill: Callable[[], None], timeout_s: float, sample_interval_s: float
) -> Iterator[tuple[Sampler, threading.Event]]:
    """A running process's memory sampled in `cap` while the block waits for it, `kill` called
    after `timeout_s` (the event then set) and on any failure of ours: it must not outlive us."""
    sampler = Sampler(cap, pid, sample_interval_s)
    sampler.start()
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        kill()

    timer = threading.Timer(timeout_s, on_timeout)
    timer.start()
    try:
        yield sampler, timed_out
    except BaseException:
        kill()
        raise
    finally:
        timer.cancel()
        sampler.stopped.set()
        sampler.join()


def applied_cap(worker_cap: int | None, box_cap: int | None) -> int | None:
    """The cap that really applies to a capped worker: its own, or the box around it if smaller."""
    if worker_cap is None:
        return None
    return min(worker_cap, box_cap) if box_cap is not None else worker_cap


@dataclass
class ChildRun:
    """A short program of the harness's own (a verifier's read) run under a cap, and its figures."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    peak_rss_bytes: int | None  # the larger of its cgroup's sampled rss and the kernel's ru_maxrss
    oom_kills: int


def run_capped(
    cap: MemoryCap, command: list[str], input_text: str, *, timeout_s: float, sample_interval_s: float = 0.05
) -> ChildRun:
    """Runs `command` inside `cap` with `input_text` on its stdin until it ends (killed with its
    process group after `timeout_s`), its memory sampled as a worker's is. It dies with the harness."""
    process = subprocess.Popen(
        [*cap.launch_prefix(), *guarded(command)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    readers = [_Reader(process.stdout), _Reader(process.stderr)]

    def kill_group() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    try:
        with _watched(cap, process.pid, kill_group, timeout_s, sample_interval_s) as (sampler, timed_out):
            assert process.stdin is not None
            with contextlib.suppress(BrokenPipeError):  # it died before reading: its exit code tells
                process.stdin.write(input_text.encode())
                process.stdin.close()
            # wait4, not wait: the kernel's resident peak of the child (and what it waited for).
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
    except BaseException:  # killed on the way out: reaped
        process.wait()
        raise
    stdout, stderr = (reader.text() for reader in readers)
    sampled = max((sample[2] for sample in sampler.samples), default=0)
    return ChildRun(
        returncode=process.returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out.is_set(),
        peak_rss_bytes=max(sampled, usage.ru_maxrss * 1024) or None,
        oom_kills=cap.oom_kills(),
    )


class _Reader(threading.Thread):
    """Reads a pipe to its end (both of a child's pipes at once: neither fills and blocks it)."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        super().__init__(daemon=True)
        self.stream, self.chunks = stream, list[bytes]()
        self.start()

    def run(self) -> None:
        if self.stream is not None:
            self.chunks.append(self.stream.read())

    def text(self) -> str:
        self.join(10.0)  # a grandchild may hold the pipe open: not forever
        return b"".join(self.chunks).decode(errors="replace")


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
