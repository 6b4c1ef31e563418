"""SIGTERM and SIGHUP end a command as Ctrl-C does; cleanup that must finish holds them off.

CI cancellation, `timeout` and systemd send SIGTERM, a closed terminal SIGHUP. Python's default
for both is to die at once, leaving the worker writing and the run's cgroup, warehouse and
services behind. Here they raise `Terminated` in the main thread instead, so every `finally` and
`except BaseException` that Ctrl-C runs runs too (workers killed, cgroups removed, services
stopped, namespace purged); the command then prints one line and exits 128 + the signal.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import ParamSpec

TERMINATING = (signal.SIGTERM, signal.SIGHUP)
# What a cleanup block holds off: Ctrl-C as well.
INTERRUPTING = (signal.SIGINT, *TERMINATING)

P = ParamSpec("P")


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived. A BaseException like KeyboardInterrupt, so `except Exception`
    never swallows it; not a KeyboardInterrupt, so the command can say which signal ended it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # only it may set handlers


def terminates_like_ctrl_c(main: Callable[P, int]) -> Callable[P, int]:
    """Decorates the CLI's main: SIGTERM and SIGHUP unwind it like Ctrl-C, then
    `icebench: terminated (SIGTERM)` and exit code 128 + the signal (143, 129)."""

    @functools.wraps(main)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> int:
        if not _in_main_thread():
            return main(*args, **kwargs)
        previous = {signum: signal.signal(signum, _raise_terminated) for signum in TERMINATING}
        try:
            return main(*args, **kwargs)
        except Terminated as terminated:
            print(f"icebench: terminated ({signal.Signals(terminated.signum).name})", file=sys.stderr)
            return 128 + terminated.signum
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    return wrapper


@contextmanager
def signals_held() -> Iterator[None]:
    """Cleanup that must not be cut short (a run's namespace purge, its cgroup's removal): a Ctrl-C,
    SIGTERM or SIGHUP during the block is held and delivered when it ends, unless the block is
    already unwinding for one. Two more during the block (a third signal in all, the first having
    started the cleanup) force an exit at once. A no-op off the main thread, which gets no signals."""
    if not _in_main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        held.append(signum)
        if len(held) >= 2:
            print(f"icebench: {signal.Signals(signum).name} again: exit amid cleanup", file=sys.stderr)
            os._exit(128 + signum)

    # A signal this process ignores (a background job's SIGINT) stays ignored: nothing to hold.
    held_off = [signum for signum in INTERRUPTING if signal.getsignal(signum) is not signal.SIG_IGN]
    previous = {signum: signal.signal(signum, hold) for signum in held_off}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if held:  # the block ended normally: now what the signal would have done
        signal.raise_signal(held[0])
