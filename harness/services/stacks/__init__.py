"""Stacks: every module here that defines a `Stack` subclass is one; nothing to register."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from harness.base.registry import discover, lookup
from harness.base.settings import Settings
from harness.services.stacks.base import RunCatalog, Stack, close_catalog

__all__ = ["RunCatalog", "Stack", "close_catalog", "get_stack", "stacks", "started"]


@cache
def stacks() -> dict[str, type[Stack]]:
    return discover(sys.modules[__name__], Stack)


def get_stack(name: str) -> type[Stack]:
    return lookup("stack", name, stacks())


@contextmanager
def started(settings: Settings, folder: Path, keep_sources: bool = False) -> Iterator[Stack]:
    """The stack `settings.stack` names, its services up (logs in `folder`) until the block ends;
    `keep_sources`: its object store's sets outlive it."""
    stack = get_stack(settings.stack)(settings, keep_sources)
    with stack.running(folder):
        yield stack
