"""Plug-ins by convention: every module of a package that defines a concrete subclass is one."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import inspect
import pkgutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from harness.base.errors import IcebenchError, close_match

T = TypeVar("T")
WRITER_ENTRY_POINTS = "icebench.writers"  # installed packages' writers (harness/engines/writers)


def split_reference(text: str) -> tuple[Path | None, str, str]:
    """A plug-in from outside a package, as `--writer-file` names it: (the file, "", "") for
    `path.py`, else (None, module, class) for `module` or `module:Class` (class "" for every one)."""
    if text.endswith(".py"):
        return Path(text), "", ""
    module, _, class_name = text.partition(":")
    return None, module, class_name


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


def declared(package_dir: Path, skip: tuple[str, ...] = ("base",)) -> dict[str, dict[str, object]]:
    """name -> literal class attributes of each plug-in of `package_dir`, read from the sources
    without importing them (the CLI checks names and writes its help in milliseconds; importing
    the writers takes seconds). A plug-in is a class that assigns itself a literal `name`; its other
    attributes are inherited as Python would, through the classes the package (`skip` included)
    declares. tests/test_cli_fast.py holds these to what `discover` imports."""
    return declared_in(sorted(package_dir.glob("*.py")), skip)


def declared_in(paths: Sequence[Path], skip: tuple[str, ...] = ()) -> dict[str, dict[str, object]]:
    """`declared` over these files (a writer file of a user's: its classes' bases outside it
    count for nothing but the `name` they declare)."""
    classes: dict[str, tuple[list[str], dict[str, object]]] = {}
    plugins: list[str] = []
    for path in paths:
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.ClassDef):
                continue
            own = dict(_literal_assignments(node))
            classes[node.name] = ([_base_name(base) for base in node.bases], own)
            if "name" in own and path.stem not in skip:
                plugins.append(node.name)

    def attributes(class_name: str) -> dict[str, object]:
        bases, own = classes.get(class_name, ([], {}))
        inherited: dict[str, object] = {}
        for base in reversed(bases):
            inherited |= attributes(base)
        return inherited | own

    found = {
        str(attributes(plugin)["name"]): attributes(plugin) | {"class_name": plugin} for plugin in plugins
    }
    return dict(sorted(found.items()))


def _literal_assignments(node: ast.ClassDef) -> Iterator[tuple[str, object]]:
    for statement in node.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name):
            with contextlib.suppress(ValueError):
                yield target.id, ast.literal_eval(value)


def _base_name(base: ast.expr) -> str:
    return base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
