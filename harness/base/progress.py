"""A worker's progress, seen from the harness: the rows its source has handed to the writer.

The worker rewrites a small file (`fed rows [rss]`) at most once a second; the harness reads it as
often, from a thread, while it waits for the worker. The worker's resident memory as it wrote the
last count tells an OOM's record in which phase the memory grew (before or after the feed); a
writer that reads its source by other means (Spark) reports nothing: the bar just stays away."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import NamedTuple

from harness.base.results import write_whole

INTERVAL_S = 1.0

ProgressReport = Callable[[int, int], None]  # (rows fed, rows the writer gets in all)


class ProgressFile:
    """The worker's side: `fed` rows of `rows`, written whole, at most once per INTERVAL_S."""

    def __init__(self, path: Path, rows: int) -> None:
        self.path, self.rows = path, rows
        self._written_at = 0.0

    def fed(self, count: int) -> None:
        """The last count is always written: an OOM's reason tells whether every row was fed."""
        now = time.monotonic()
        if now - self._written_at >= INTERVAL_S or count >= self.rows:
            self._written_at = now
            # A full disk: the run goes on, and fails or not, on its own merits.
            with suppress(OSError):
                write_whole(self.path, f"{count} {self.rows} {resident_bytes() or ''}".rstrip())


class Progress(NamedTuple):
    fed: int
    rows: int
    rss_bytes: int | None = None  # the worker's resident memory as it wrote `fed` (None: not said)


def read_progress(path: Path) -> Progress | None:
    """What the worker last wrote, or None before it wrote any (or while the file is not whole)."""
    try:
        fed, rows, *rss = path.read_text().split()
        return Progress(int(fed), int(rows), int(rss[0]) if rss else None)
    except (OSError, ValueError, IndexError):
        return None


def resident_bytes() -> int | None:
    """This process's resident memory now (not its peak), from /proc; None where there is none."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def watching(path: Path, report: ProgressReport) -> Iterator[None]:
    """`report` what the worker last wrote to `path`, every INTERVAL_S, until the block ends."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(INTERVAL_S):
            if (progress := read_progress(path)) is not None:
                report(progress.fed, progress.rows)

    thread = threading.Thread(target=poll, name="worker-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
