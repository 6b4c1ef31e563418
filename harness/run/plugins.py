"""The plug-ins a workload names, checked and defaulted: the registries import every writer and
scenario, so the light config models (harness/run/config.py) call here only when resolved."""

from __future__ import annotations

from collections.abc import Sequence

from generators.presets import get_preset
from harness.engines.writers import get_writer, writers
from scenarios import get_scenario, scenarios


def default_writers() -> list[str]:
    """A matrix's writers when none are named: those that declare themselves in it."""
    return [name for name, writer in writers().items() if writer.in_default_matrix]


def default_scenarios() -> list[str]:
    """A matrix's scenarios when none are named."""
    return [name for name, scenario in scenarios().items() if scenario.in_default_matrix]


def check_names(
    presets: Sequence[str] = (), scenarios: Sequence[str] = (), writers: Sequence[str] = ()
) -> None:
    """Every name known, else a one-line error naming it (with a near miss, if any)."""
    for name in presets:
        get_preset(name)
    for name in scenarios:
        get_scenario(name)
    for name in writers:
        get_writer(name)
