"""Writer backends: every module here that defines a `Writer` subclass is one; nothing to register."""

from __future__ import annotations

import sys
from functools import cache

from harness.base.registry import discover, lookup
from harness.engines.writers.base import Operation, StepTimer, WriteJob, Writer

__all__ = ["Operation", "StepTimer", "WriteJob", "Writer", "get_writer", "writers"]


@cache
def writers() -> dict[str, type[Writer]]:
    return discover(sys.modules[__name__], Writer)


def get_writer(name: str) -> type[Writer]:
    return lookup("writer", name, writers())
