"""Maintenance engines: every module here that defines a `Maintainer` subclass is one; nothing
to register. A maintenance phase of the rounds workload (`--phases ...,compact,expire,orphans`)
runs one on the table a writer left: the writer's own (`Writer.maintained_with`) or the one
`--maintainer` names."""

from __future__ import annotations

import sys
from functools import cache

from harness.base.registry import discover, lookup
from harness.engines.maintainers.base import Maintainer, MaintenanceJob

__all__ = ["Maintainer", "MaintenanceJob", "get_maintainer", "maintainers"]


@cache
def maintainers() -> dict[str, type[Maintainer]]:
    return discover(sys.modules[__name__], Maintainer)


def get_maintainer(name: str) -> type[Maintainer]:
    return lookup("maintainer", name, maintainers())
