"""Children that die with the harness: PR_SET_PDEATHSIG=SIGKILL on every process we start.

A SIGKILLed harness runs no `finally`: without this its worker goes on writing and committing, and
the S3 and REST servers stay up on loopback. The kernel sends the signal when the *thread* that
forked the child ends; every child here is forked by a thread that then waits for it to end (the
main thread, or the runner's pool thread that supervises that worker), so it fires only when the
harness is gone. No `preexec_fn` (unsafe in a process with threads): our own Python children call
`die_with_parent_if_asked()` first thing; any other command runs behind this module as a tiny exec
wrapper, `python -m harness.base.orphan_guard PARENT_PID -- COMMAND...` (the setting survives execve).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# Set in the environment of a Python child of ours that arms the guard itself (harness.engines.worker).
PARENT_ENV = "ICEBENCH_DIE_WITH_PARENT"


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent ends; at once if it already has (then our parent is
    init or a subreaper, not `parent_pid`: the signal would never come)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)


def child_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a Python child of ours that calls `die_with_parent_if_asked()`."""
    return {**(os.environ if base is None else base), PARENT_ENV: str(os.getpid())}


def die_with_parent_if_asked() -> None:
    """Arms the guard when the parent asked for it; the variable is dropped so that our own
    children (a Spark JVM, ...) do not read a parent that is not theirs."""
    parent = os.environ.pop(PARENT_ENV, None)
    if parent:
        die_with_parent(int(parent))


def guarded(command: list[str]) -> list[str]:
    """`command` behind the wrapper: it dies with this process (a JVM, another program's Python)."""
    return [sys.executable, "-m", "harness.base.orphan_guard", str(os.getpid()), "--", *command]


def main(arguments: list[str]) -> None:
    parent, separator, *command = arguments
    if separator != "--" or not command:
        sys.exit("usage: python -m harness.base.orphan_guard PARENT_PID -- COMMAND [ARGUMENT...]")
    die_with_parent(int(parent))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
