"""What the command line and a config file declare before any setting is loaded: the config
file's tables and how one is read, a config field's command-line flag (`Flag`), and the names and
spellings flags take. Light on purpose: the CLI checks its flags with it before it loads
pydantic-settings (harness/base/settings.py) or anything heavier."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from harness.base.errors import IcebenchError, close_match, first_error

Table = TypeVar("Table", bound=BaseModel)
# The tables a config file may hold, and who reads them.
CONFIG_TABLES = ("settings", "matrix", "rounds", "gate", "engines")

# local-services' REST catalogs (--catalog): Iceberg's REST fixture, its default, or SeaweedFS's own.
DEFAULT_CATALOG = "iceberg-rest-fixture"
CATALOGS = (DEFAULT_CATALOG, "seaweedfs")


# A release as PEP 440 writes it, in its usual forms: 0.12.0, 1.31, 2.0rc1, 1.0.post1, 3.1.dev2.
_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?")


@dataclass(frozen=True)
class Flag:
    """The command-line flag of a config field, declared on the field (`Annotated[..., Flag(...)]`):
    the CLI makes the flag from it (harness/cli/flags.py), with the field's type and range.
    `names`: the kind of plug-in or preset its values name, checked as they are read; `repeated`:
    given once per value (a spec with commas of its own) rather than comma-separated; `check`: a
    value's spelling, checked as it is read."""

    name: str
    help: str
    metavar: str | None = None
    names: str | None = None
    repeated: bool = False
    check: Callable[[str], object] | None = None


def check_version(text: str) -> str:
    """A library version as pip takes it; whether it exists is pip's to say."""
    if not _VERSION.fullmatch(text):
        raise ValueError(f"not a version: {text!r} (e.g. 0.12.0)")
    return text


def read_toml(path: Path) -> dict[str, Any]:
    """A config file's tables; a table none of us reads is a mistake, not something to ignore."""
    try:
        tables = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise IcebenchError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise IcebenchError(f"config file {path} is a folder, not a TOML file") from None
    except OSError as exc:
        raise IcebenchError(f"config file {path} is unreadable: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise IcebenchError(f"config file {path} is not valid TOML: {exc}") from None
    for name, value in tables.items():
        if name not in CONFIG_TABLES or not isinstance(value, dict):
            raise IcebenchError(
                f"config file {path}: unknown table [{name}]{close_match(name, CONFIG_TABLES)}; "
                f"icebench reads {', '.join(f'[{t}]' for t in CONFIG_TABLES)}"
            )
    return tables


def read_table(path: Path | None, table: str, model: type[Table]) -> Table:
    """One table of a config file as `model` (its defaults when no file is given); an invalid one
    is a one-line error naming the file, the table and the first complaint."""
    if path is None:
        return model()
    try:
        return model.model_validate(read_toml(path).get(table, {}))
    except ValidationError as exc:
        raise IcebenchError(f"config file {path}: invalid [{table}] table: {first_error(exc)}") from None
