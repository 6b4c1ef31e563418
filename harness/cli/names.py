"""The names a flag takes, read from the plug-ins' sources without importing them (importing the
writers takes seconds; a misspelt name is refused in milliseconds). tests/test_cli_fast.py holds
them to the registries that import the plug-ins."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

from generators.presets import PRESETS
from harness.base.registry import declared
from harness.model import ORACLE_READER

HARNESS = Path(__file__).resolve().parent.parent


@cache
def _plugins(folder: Path) -> dict[str, dict[str, object]]:
    return declared(folder)


def writer_names() -> list[str]:
    return list(_plugins(HARNESS / "engines" / "writers"))


def scenario_names() -> list[str]:
    plugins = _plugins(HARNESS.parent / "scenarios")
    return [name for name, attributes in plugins.items() if attributes.get("listed", True)]


def stack_names() -> list[str]:
    return list(_plugins(HARNESS / "services" / "stacks"))


def verifier_names() -> list[str]:
    """--verify-with: the oracle's own reader, or a verifier."""
    return [ORACLE_READER, *_plugins(HARNESS / "engines" / "verifiers")]


# A Flag's `names` (harness/base/settings.py) -> the names it takes.
NAMES: dict[str, Callable[[], list[str]]] = {
    "writer": writer_names,
    "scenario": scenario_names,
    "preset": lambda: list(PRESETS),
    "stack": stack_names,
    "verifier": verifier_names,
}
