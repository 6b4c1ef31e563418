"""The parser of icebench and of each command: help wrapped between words, no flag taking an empty
value, a refused flag as one line naming it, and the types that check a flag's value as it is read
(all light: nothing here loads an engine)."""

from __future__ import annotations

import argparse
import textwrap
import typing
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from harness.base.builds import check_library_version
from harness.base.caps import parse_size
from harness.base.config_file import read_toml
from harness.base.errors import IcebenchError, close_match
from harness.base.registry import split_reference
from harness.engines.choices import check_spark_master, file_io_impl
from harness.run.config import comma_list

DESCRIPTION = "`icebench`: generate data, run one scenario x writer, a matrix, or a batch-count scale."
EPILOG = (
    "exit codes: 0 done (failed checks are results), 1 gate regression, 2 bad input or error, "
    "3 --fail-on-verdict and a run did not pass, 130 Ctrl-C. docs/commands.md has more."
)


class UsageError(IcebenchError):
    """A flag or argument argparse refused: one line naming it, exit 2."""


class HelpFormatter(argparse.HelpFormatter):
    """Help wrapped between words only: `pyiceberg-fast-append` is never split at a hyphen."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
            break_on_hyphens=False, break_long_words=False,
        )  # fmt: skip


class Parser(argparse.ArgumentParser):
    """The parser of icebench and of each of its commands (add_subparsers makes them of this type):
    no flag takes an empty value, and a refused one is one line naming it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def _add_action(self, action: argparse.Action) -> argparse.Action:
        # Here, not in add_argument: a group's flags (add_mutually_exclusive_group) come this way too.
        if isinstance(action, argparse._StoreAction) and action.nargs != 0 and action.choices is None:
            action.type = not_empty(action.type or str)
        return super()._add_action(action)

    def error(self, message: str) -> typing.NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


class VersionAction(argparse.Action):
    """`--version`: asks git only when given (argparse's own wants the text up front)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and commit, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from harness.base.results import version_text  # git, on use

        print(version_text())
        parser.exit()


def checked(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """`convert` as a flag's type: its IcebenchError or ValueError becomes argparse's one line."""

    def parse(text: str) -> Any:
        try:
            return convert(text)
        except (IcebenchError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(convert, "__name__", "value")  # argparse's "invalid <name> value"
    return parse


def not_empty(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """`convert`, after refusing an empty or blank value (which would otherwise mean the default,
    or the current folder for a path)."""

    def parse(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError("must not be empty")
        return convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def settings_model() -> type[BaseModel]:
    """Settings, loaded when a flag checked against it is given (pydantic-settings takes ~50 ms
    that `--help` need not pay)."""
    from harness.base.settings import Settings

    return Settings


def within(
    model: type[BaseModel] | Callable[[], type[BaseModel]], field: str, many: bool = False
) -> Callable[[str], Any]:
    """A flag's value checked against the type and range of `model`'s field (Settings,
    MatrixConfig...; or a function that loads it): one range for the flag, the environment and the
    config file. `many`: a comma-separated list, each item checked."""

    def parse(text: str) -> Any:
        found = model if isinstance(model, type) else model()
        info = found.model_fields[field]
        adapter: TypeAdapter[Any] = TypeAdapter(Annotated[info.annotation, *info.metadata])
        value: object = name_list(text) if many else text
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(f"{exc.errors()[0]['msg']} (got {text!r})") from None

    return parse


def int_from(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high} (got {text})")
        return value

    return parse


def name_list(text: str) -> list[str]:
    """`a,b`: at least one name (an empty list would silently mean every one)."""
    found = comma_list(text)
    if not found:
        raise argparse.ArgumentTypeError(f"no name in {text!r}")
    return found


def require_known(kind: str, name: str, choices: list[str]) -> None:
    """A one-line error for a name of `kind` (writer, scenario...) that is not one, with its near miss."""
    if name not in choices:
        raise IcebenchError(
            f"unknown {kind} {name!r}{close_match(name, choices)}; choose from {', '.join(choices)}"
        )


def known(
    kind: str,
    known_names: Callable[[], list[str]],
    late_names: Callable[[], list[str]] | None = None,
    derived: Callable[[str], bool] | None = None,
) -> Callable[[str], list[str]]:
    """`a,b` of names of `kind`, each one known: a misspelt one is refused as the flag is read.
    `late_names`: names too costly to read for every command line, asked only on a miss;
    `derived`: whether a name no list can hold is one (a preset at a row count, `wide-3M`)."""

    def parse(text: str) -> list[str]:
        given, choices = name_list(text), known_names()
        if late_names is not None and any(name not in choices for name in given):
            choices = [*choices, *late_names()]
        for name in given:
            if derived is None or not derived(name):
                checked(lambda name: require_known(kind, name, choices))(name)
        return given

    return parse


def one_known(
    kind: str,
    known_names: Callable[[], list[str]],
    late_names: Callable[[], list[str]] | None = None,
    derived: Callable[[str], bool] | None = None,
) -> Callable[[str], str]:
    """One name of `kind`, known."""
    several = known(kind, known_names, late_names, derived)

    def parse(text: str) -> str:
        given = several(text)
        if len(given) > 1:
            raise argparse.ArgumentTypeError(f"one {kind}, not {len(given)}")
        return given[0]

    return parse


def one_of(choices: Iterable[str]) -> str:
    """The names a flag takes, for its help."""
    return f"one of: {', '.join(choices)}"


def versions(library: str) -> Callable[[str], list[str]]:
    """`--LIBRARY a,b`: releases, or (for a Python library) builds from source, each checked."""

    def parse(text: str) -> list[str]:
        return [
            checked(lambda given: check_library_version(given, library))(version)
            for version in name_list(text)
        ]

    parse.__name__ = "version"
    return parse


def size(text: str) -> int:
    """A size in bytes ('2g'): parsed here once."""
    if "," in text:
        raise argparse.ArgumentTypeError(f"{text}: several caps are matrix's axis; this command takes one")
    return checked(parse_size)(text)


def sizes(text: str) -> list[int]:
    """Sizes, comma-separated (matrix --memory 2g,4g: the cap axis), each in bytes."""
    return [checked(parse_size)(item) for item in comma_list(text) or [text]]


def folder(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} does not exist or is not a folder")
    return path


def writer_reference(text: str) -> str:
    """--writer-file: a Python file that exists, or `module` / `module:Class` spelt as Python names."""
    file, module, class_name = split_reference(text)
    if file is not None:
        if not file.is_file():
            raise argparse.ArgumentTypeError(f"{text} does not exist or is not a file")
        return text
    if not all(part.isidentifier() for part in module.split(".")) or (
        class_name and not class_name.isidentifier()
    ):
        raise argparse.ArgumentTypeError(f"{text!r} is neither a .py file nor module[:Class]")
    return text


def file_io_names(text: str) -> list[str]:
    """--fileio pyarrow,fsspec: each a FileIO pyiceberg can write through."""
    chosen = name_list(text)
    for name in chosen:
        checked(file_io_impl)(name)
    return chosen


def config_file(text: str) -> Path:
    """A TOML file that exists and reads, checked even where the command would not open it."""
    path = Path(text)
    checked(read_toml)(path)
    return path


def batch_counts(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if len(values) < 2 or min(values) < 1:
        raise argparse.ArgumentTypeError("give at least two positive batch counts, e.g. 25,50,100,200")
    if len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(f"{text!r}: a batch count is given twice")
    return values


def spark_master(text: str) -> str:
    return checked(check_spark_master)(text)
