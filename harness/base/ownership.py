"""Which harness process owns what it left: a PID with its start time, so a recycled PID is not
taken for the owner still alive. The start-up sweep (harness.services.leftovers) reads these."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

# In a results folder while the command writing it runs; gone when it ends (or once swept).
MARKER = ".owner"
# Docker labels of a worker container: the harness that started it.
PID_LABEL = "icebench.owner"
STARTED_LABEL = "icebench.owner-started"


def pid_alive(pid: int) -> bool:
    """A running process (a zombie is dead: only its exit status is left to read)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@dataclass(frozen=True)
class Owner:
    pid: int
    started: float  # psutil's create_time, seconds since the epoch

    @classmethod
    def me(cls) -> Owner:
        return cls.of(psutil.Process().pid)

    @classmethod
    def of(cls, pid: int) -> Owner:
        return cls(pid, psutil.Process(pid).create_time())

    def alive(self) -> bool:
        try:
            same = abs(psutil.Process(self.pid).create_time() - self.started) < 0.01
        except psutil.Error:
            return False
        return same and pid_alive(self.pid)

    def labels(self) -> dict[str, str]:
        return {PID_LABEL: str(self.pid), STARTED_LABEL: repr(self.started)}

    @classmethod
    def from_labels(cls, labels: dict[str, str]) -> Owner | None:
        try:
            return cls(int(labels[PID_LABEL]), float(labels[STARTED_LABEL]))
        except (KeyError, ValueError):
            return None


@contextlib.contextmanager
def owned(folder: Path) -> Iterator[None]:
    """Marks `folder` as this process's while the block runs."""
    marker = folder / MARKER
    marker.write_text(json.dumps(asdict(Owner.me())))
    try:
        yield
    finally:
        marker.unlink(missing_ok=True)


def folder_owner(folder: Path) -> Owner | None:
    """The owner a results folder names; None when it names none (finished, or swept)."""
    try:
        return Owner(**json.loads((folder / MARKER).read_text()))
    except (OSError, ValueError, TypeError):
        return None
