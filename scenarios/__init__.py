"""Scenarios: every module here that defines a `Scenario` subclass is one; nothing to register."""

from __future__ import annotations

import sys
from functools import cache

from harness.base.registry import discover, lookup
from scenarios.base import Scenario

__all__ = ["Scenario", "get_scenario", "scenarios"]


@cache
def scenarios() -> dict[str, type[Scenario]]:
    found = discover(sys.modules[__name__], Scenario, skip=("base", "oracle"))
    return {name: scenario for name, scenario in found.items() if scenario.listed}


def get_scenario(name: str) -> type[Scenario]:
    return lookup("scenario", name, scenarios())
