"""Run generation tasks on worker processes and relay their row-count progress to the parent."""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from multiprocessing.queues import Queue
from typing import TypeVar

Progress = Callable[[int], None]
T = TypeVar("T")
R = TypeVar("R")

_sink: Progress | None = None  # where report_progress() goes in this process


def report_progress(rows: int) -> None:
    """Called by tasks after each written row group."""
    if _sink is not None:
        _sink(rows)


def run_tasks(
    task_fn: Callable[[T], R], tasks: Sequence[T], *, workers: int | None, progress: Progress | None
) -> list[R]:
    """`[task_fn(t) for t in tasks]`, on up to `workers` processes (default: one per core).

    Workers are spawned, so `task_fn` must be a module-level function and a calling script
    needs the `if __name__ == "__main__":` guard.
    """
    workers = min(len(tasks), workers or os.cpu_count() or 1)
    if workers <= 1:
        return _run_inline(task_fn, tasks, progress)
    # spawn, not fork: forking a parent that already runs Arrow's thread pools can deadlock.
    context = multiprocessing.get_context("spawn")
    updates = context.Queue() if progress else None
    with ProcessPoolExecutor(workers, context, initializer=_init_worker, initargs=(updates,)) as pool:
        futures = [pool.submit(task_fn, task) for task in tasks]
        try:
            _wait_relaying(futures, updates, progress)
        except BaseException:
            pool.shutdown(cancel_futures=True)  # fail now, not after the queued tasks ran
            raise
    _relay(updates, progress)  # reports flushed while the workers shut down
    return [future.result() for future in futures]


def _wait_relaying(futures: list[Future], updates: Queue | None, progress: Progress | None) -> None:
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION)
        _relay(updates, progress)
        for future in done:
            future.result()  # re-raises a worker's failure


def _run_inline(task_fn: Callable[[T], R], tasks: Sequence[T], progress: Progress | None) -> list[R]:
    global _sink
    _sink = progress
    try:
        return [task_fn(task) for task in tasks]
    finally:
        _sink = None


def _init_worker(updates: Queue | None) -> None:
    global _sink
    _sink = updates.put if updates is not None else None


def _relay(updates: Queue | None, progress: Progress | None) -> None:
    if updates is None or progress is None:
        return
    while True:
        try:
            progress(updates.get_nowait())
        except queue.Empty:
            return
