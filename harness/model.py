"""The contract layer: what the parts of icebench hand each other, importing nothing of the project.

Reading a results folder must not load pyiceberg, Spark or the writer registry, so the models a
results line is made of live here, below everything else (tests/test_layers.py holds it there).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Check(BaseModel):
    """One check of the oracle on one table: what it expected, what it found, and why it failed."""

    name: str
    passed: bool
    expected: Any = None
    actual: Any = None
    reason: str | None = None
    upstream: str | None = None  # the upstream issue a known failure is, e.g. apache/iceberg-python#2467


class Verdict(BaseModel):
    passed: bool
    checks: list[Check]

    @property
    def failed(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]
