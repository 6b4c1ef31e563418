"""The plug-ins a workload names, checked and defaulted: the registries import every writer and
scenario, so the light config models (harness/run/config.py) call here only when resolved."""

from __future__ import annotations

from collections.abc import Sequence

from generators.presets import get_preset
from harness.base.errors import IcebenchError
from harness.engines.maintainers import get_maintainer
from harness.engines.writers import file_writers, get_writer, writers
from scenarios import get_scenario, scenarios


def default_writers() -> list[str]:
    """A matrix's writers when none are named: those that declare themselves in it."""
    return [name for name, writer in writers().items() if writer.in_default_matrix]


def with_file_writers(chosen: Sequence[str]) -> list[str]:
    """`chosen`, then the writers of --writer-file not among them: a user's own writer always runs."""
    return [*chosen, *(name for name in file_writers() if name not in chosen)]


def the_writers(named: str | list[str] | None = None, one: bool = False) -> list[str]:
    """A command's writers: those named, else the writers of --writer-file (`one`: exactly one)."""
    if named:
        return [named] if isinstance(named, str) else named
    found = file_writers()
    if not found or (one and len(found) > 1):
        files = f"--writer-file defines {len(found)} ({', '.join(found)}): " if found else ""
        raise IcebenchError(f"{files}name the writer{'' if one else 's'} with --writer")
    return found


def default_scenarios() -> list[str]:
    """A matrix's scenarios when none are named."""
    return [name for name, scenario in scenarios().items() if scenario.in_default_matrix]


def check_names(
    presets: Sequence[str] = (),
    scenarios: Sequence[str] = (),
    writers: Sequence[str] = (),
    maintainers: Sequence[str] = (),
) -> None:
    """Every name known, else a one-line error naming it (with a near miss, if any)."""
    for name in maintainers:
        get_maintainer(name)
    for name in presets:
        get_preset(name)
    for name in scenarios:
        get_scenario(name)
    for name in writers:
        get_writer(name)


def writer_libraries(names: Sequence[str]) -> dict[str, Sequence[str]]:
    """{writer: the libraries it runs on}, for `variants` to check that a variant changes one."""
    return {name: get_writer(name).libraries for name in names}
