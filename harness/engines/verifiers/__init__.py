"""Verifiers: every module here that defines a `Verifier` subclass is one; nothing to register.

`pyiceberg` is no plug-in: it is the oracle's own read, done on every run; `--verify-with NAME`
adds the read of verifier NAME, which must agree with it (the check `engines_agree`).
"""

from __future__ import annotations

import sys
from functools import cache

from harness.base.errors import IcebenchError
from harness.base.registry import discover, lookup
from harness.engines.verifiers.base import PRIMARY, Verifier, VerifierFailed

__all__ = [
    "PRIMARY",
    "Verifier",
    "VerifierFailed",
    "equality_delete_readers",
    "get_verifier",
    "verifier_names",
    "verifiers",
]


@cache
def verifiers() -> dict[str, type[Verifier]]:
    found = discover(sys.modules[__name__], Verifier)
    if PRIMARY in found:
        raise IcebenchError(
            f"verifier {found[PRIMARY].__module__}: the name {PRIMARY} is the oracle's own read"
        )
    return found


def verifier_names() -> list[str]:
    """What `--verify-with` takes: the oracle's own read alone, or a verifier besides it."""
    return [PRIMARY, *verifiers()]


def get_verifier(name: str) -> Verifier | None:
    """The verifier `--verify-with NAME` adds; None for pyiceberg (the oracle's own read alone)."""
    verifier = lookup("verifier", name, {PRIMARY: None, **verifiers()})
    return verifier() if verifier is not None else None


def equality_delete_readers() -> list[type[Verifier]]:
    """The verifiers that apply equality deletes, the cheapest first."""
    capable = [verifier for verifier in verifiers().values() if verifier.reads_equality_deletes]
    return sorted(capable, key=lambda verifier: (verifier.cost, verifier.name))
