"""Plug-ins by convention: every module of a package that defines a concrete subclass is one."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import pkgutil
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from harness.base.errors import IcebenchError, close_match

T = TypeVar("T")


def discover(package: ModuleType, base: type[T], skip: tuple[str, ...] = ("base",)) -> dict[str, type[T]]:
    """name -> class for each concrete `base` subclass defined in a module of `package`."""
    found: dict[str, type[T]] = {}
    for module_info in pkgutil.iter_modules(package.__path__):
        if module_info.name in skip:
            continue
        module = importlib.import_module(f"{package.__name__}.{module_info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, base) and not inspect.isabstract(cls) and cls.__module__ == module.__name__:
                found[cls.name] = cls  # type: ignore[attr-defined]
    return dict(sorted(found.items()))


def lookup(kind: str, name: str, found: Mapping[str, T]) -> T:
    try:
        return found[name]
    except KeyError:
        hint = close_match(name, found)
        raise IcebenchError(f"unknown {kind} {name!r}{hint}; choose from {', '.join(found)}") from None


def source_hash(cls: type) -> str | None:
    """Short sha256 of the file that defines `cls`: results of a changed writer are not compared
    with those of the old one. None when the source cannot be read (a frozen build)."""
    try:
        path = inspect.getsourcefile(cls)
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12] if path else None
    except (OSError, TypeError):
        return None
