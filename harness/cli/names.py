"""The names a flag takes, read from the plug-ins' sources without importing them (importing the
writers takes seconds; a misspelt name is refused in milliseconds). tests/test_cli_fast.py holds
them to the registries that import the plug-ins."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

from generators.presets import PRESETS, is_preset
from harness.base.registry import WRITER_ENTRY_POINTS, declared, declared_in, split_reference
from harness.model import ORACLE_READER

HARNESS = Path(__file__).resolve().parent.parent
WRITER_FILE_FLAG = "--writer-file"
_writer_files: list[str] = []  # the command line's --writer-file references (`given_writer_files`)


@cache
def _plugins(folder: Path) -> dict[str, dict[str, object]]:
    return declared(folder)


def writer_names() -> list[str]:
    """The built-in writers, then those the command line's writer files declare."""
    return [*_plugins(HARNESS / "engines" / "writers"), *_file_writer_names(tuple(_writer_files))]


def installed_writer_names() -> list[str]:
    """The writers of installed plug-ins (`icebench.writers` entry points): asked only for a name
    that is no other writer's (scanning the installed packages costs ~50 ms)."""
    from importlib.metadata import entry_points

    return [entry.name for entry in entry_points(group=WRITER_ENTRY_POINTS)]


def given_writer_files(arguments: Sequence[str]) -> list[str]:
    """The --writer-file references of a command line, read before its flags are (a writer flag
    may name one of their writers, in any order)."""
    refs = []
    for word, following in zip(arguments, [*arguments[1:], None], strict=True):
        if word == WRITER_FILE_FLAG and following is not None:
            refs.append(following)
        elif word.startswith(f"{WRITER_FILE_FLAG}="):
            refs.append(word.removeprefix(f"{WRITER_FILE_FLAG}="))
    _writer_files[:] = refs
    return refs


@cache
def _file_writer_names(refs: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for ref in refs:
        file, module, class_name = split_reference(ref)
        path = file or _module_file(module)
        if path is None or not path.is_file():
            continue  # said in one line when the writers load, with what is wrong
        try:
            plugins = declared_in([path])
        except (SyntaxError, ValueError, OSError):
            continue  # likewise
        found += [
            name
            for name, attributes in plugins.items()
            if not class_name or attributes["class_name"] == class_name
        ]
    return found


def _module_file(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec and spec.origin else None


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
# Names asked only when a flag's value is none of the above (harness/cli/parser.py's `known`).
LATE_NAMES: dict[str, Callable[[], list[str]]] = {"writer": installed_writer_names}
# Names made from another (a preset at a row count, `wide-3M`): whether a name is one.
DERIVED_NAMES: dict[str, Callable[[str], bool]] = {"preset": is_preset}
