"""Writer backends: every module here that defines a `Writer` subclass is one; nothing to register.

Writers from outside icebench join them by the same contract (harness/engines/writers/base.py,
docs/writers.md): a file or module named with `--writer-file`, or an installed package's
`icebench.writers` entry point. The files travel to every process of a run (workers, probes, the
harness box) in one variable, so each process finds the same writers by the same names.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import ModuleType

from harness.base.errors import IcebenchError, one_line
from harness.base.registry import WRITER_ENTRY_POINTS, discover, lookup, split_reference
from harness.base.settings import WRITER_FILES_ENV  # a JSON list of the references --writer-file gave
from harness.engines.writers.base import WRITER_CONTRACT, Operation, StepTimer, WriteJob, Writer

__all__ = [
    "WRITER_CONTRACT", "Operation", "StepTimer", "WriteJob", "Writer",
    "file_writers", "get_writer", "used_writer_files", "writer_file_variables", "writer_files",
    "writer_folders", "writer_origin", "writers",
]  # fmt: skip

FILE_MODULE_PREFIX = "icebench_writer_file_"  # the module a writer file is imported as


@cache
def writers() -> dict[str, type[Writer]]:
    """Every writer by name: the built-in ones, the installed plug-ins', then the writer files'."""
    found = discover(sys.modules[__name__], Writer)
    outside = [*_entry_point_writers(), *(writer for ref in writer_files() for writer in _load(ref))]
    for origin, writer in outside:
        if found.get(writer.name) is writer:  # an installed plug-in's class, named by --writer-file too
            continue
        if writer.name in found:
            taken = found[writer.name]
            raise IcebenchError(f"{origin}: writer name {writer.name!r} is taken by {_origin(taken)}")
        found[writer.name] = writer
    return found


def get_writer(name: str) -> type[Writer]:
    return lookup("writer", name, writers())


def writer_files() -> list[str]:
    """The references the run was given with --writer-file (absolute paths or module names)."""
    text = os.environ.get(WRITER_FILES_ENV)
    if not text:
        return []
    try:
        refs = json.loads(text)
    except json.JSONDecodeError:
        refs = None
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        raise IcebenchError(f"{WRITER_FILES_ENV} is not a JSON list of writer files: {text[:80]!r}")
    return refs


def file_writers() -> list[str]:
    """The names of the writers the writer files define, in their order."""
    return [writer.name for ref in writer_files() for _, writer in _load(ref)]


@contextmanager
def used_writer_files(refs: Sequence[str]) -> Iterator[list[str]]:
    """The writers of `refs` (files `path.py`, modules `module` or `module:Class`) join the
    registry, here and in every process started meanwhile; their names, in order. Each is loaded
    now: a file that is missing, does not import or defines no writer is a one-line error."""
    saved = os.environ.get(WRITER_FILES_ENV)
    absolute = [str(file.resolve()) if (file := split_reference(ref)[0]) else ref for ref in refs]
    os.environ[WRITER_FILES_ENV] = json.dumps([*writer_files(), *absolute])
    writers.cache_clear()
    try:
        writers()  # each loads, and every name is distinct from the others
        yield file_writers()
    finally:
        if saved is None:
            os.environ.pop(WRITER_FILES_ENV, None)
        else:
            os.environ[WRITER_FILES_ENV] = saved
        writers.cache_clear()


def writer_file_variables() -> dict[str, str]:
    """What a worker started with an environment of its own (a container) needs to find them."""
    return {WRITER_FILES_ENV: os.environ[WRITER_FILES_ENV]} if writer_files() else {}


def writer_folders() -> list[Path]:
    """The folders of the writer files: a container worker must see them."""
    return [file.parent for ref in writer_files() if (file := split_reference(ref)[0])]


@cache
def _load(ref: str) -> list[tuple[str, type[Writer]]]:
    """(where it came from, class) for each writer `ref` defines, in the order it defines them."""
    file, module_name, class_name = split_reference(ref)
    try:
        module = _import_file(file) if file else importlib.import_module(module_name)
    except IcebenchError:
        raise
    except Exception as exc:  # the user's code: any failure of its import is theirs, in one line
        raise IcebenchError(f"writer file {ref}: {one_line(exc)}") from None
    if class_name:
        chosen = getattr(module, class_name, None)
        if not (inspect.isclass(chosen) and issubclass(chosen, Writer)):
            raise IcebenchError(f"writer file {ref}: {module_name} has no Writer subclass {class_name!r}")
        defined = [chosen]
    else:
        defined = [  # in the order the module defines them
            cls for cls in vars(module).values()
            if inspect.isclass(cls) and issubclass(cls, Writer) and cls.__module__ == module.__name__
            and not inspect.isabstract(cls)
        ]  # fmt: skip
        if not defined:
            raise IcebenchError(f"writer file {ref}: defines no Writer subclass")
    for writer in defined:
        _check_contract(f"writer file {ref}", writer)
    return [(f"writer file {ref}", writer) for writer in defined]


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise IcebenchError(f"writer file {path}: no such file")
    # A module name of its own (two files may share a stem): its classes pickle, its source is found.
    name = f"{FILE_MODULE_PREFIX}{path.stem}_{hashlib.sha256(bytes(path)).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise IcebenchError(f"writer file {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _entry_point_writers() -> Iterator[tuple[str, type[Writer]]]:
    from importlib.metadata import entry_points  # tens of milliseconds: only once writers load

    for entry in entry_points(group=WRITER_ENTRY_POINTS):
        origin = f"entry point {entry.name} = {entry.value} ({WRITER_ENTRY_POINTS})"
        try:
            writer = entry.load()
        except Exception as exc:  # an installed package's failure, named
            raise IcebenchError(f"{origin}: {one_line(exc)}") from None
        if not (inspect.isclass(writer) and issubclass(writer, Writer)):
            raise IcebenchError(f"{origin}: not a Writer subclass")
        if writer.name != entry.name:
            raise IcebenchError(f"{origin}: the class is named {writer.name!r}, not {entry.name!r}")
        _check_contract(origin, writer)
        yield origin, writer


def _check_contract(origin: str, writer: type[Writer]) -> None:
    if not isinstance(getattr(writer, "name", None), str):
        raise IcebenchError(f"{origin}: {writer.__qualname__} has no `name`")
    if writer.contract != WRITER_CONTRACT:
        raise IcebenchError(
            f"{origin}: {writer.name} is written for writer contract {writer.contract}; this icebench "
            f"speaks {WRITER_CONTRACT} (docs/writers.md)"
        )


def writer_origin(writer: type[Writer]) -> str | None:
    """Where a writer from outside icebench comes from (its file, or module:class); None: built in."""
    module = writer.__module__
    if module.startswith(f"{__name__}."):
        return None
    if module.startswith(FILE_MODULE_PREFIX):
        return inspect.getsourcefile(writer)
    return f"{module}:{writer.__qualname__}"


def _origin(writer: type[Writer]) -> str:
    return writer_origin(writer) or f"the built-in writer ({writer.__module__})"
