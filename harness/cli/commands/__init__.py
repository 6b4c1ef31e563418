"""The commands: every module here is one (`clean.py` is `icebench clean`), found the way writers
are. Each holds its help (the docstring's first line), its flags (`add_arguments`) and what it
does (`run`); it imports what it runs inside `run`, so a command's flags are read and checked
before an engine, a catalog or a plot library loads."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def commands() -> dict[str, ModuleType]:
    """name -> module of every command, in name order."""
    return {
        info.name: importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)
    }


def help_line(command: ModuleType) -> str:
    """A command's line in `icebench --help`: its docstring's first sentence."""
    return (command.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ").rstrip(".")
