"""`icebench`: the parser made of the commands' modules, the harness box, and the one place an
error becomes a line and an exit code."""

from __future__ import annotations

import os
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any


def _terminated_while_starting(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM or SIGHUP before main() takes the signals over: the same line and exit code as
    later, not a silent 143. An exit at once, not SystemExit: nothing is started yet to clean up,
    and SystemExit raised amid a library's import can be caught there."""
    print(f"icebench: terminated ({signal.Signals(signum).name})", file=sys.stderr, flush=True)
    os._exit(128 + signum)


def _interrupted_while_starting(_signum: int, _frame: FrameType | None) -> None:
    """Ctrl-C amid the imports: main()'s line and exit code, not a KeyboardInterrupt traceback."""
    print("icebench: interrupted", file=sys.stderr, flush=True)
    os._exit(130)


# The command (its script, or `python -m harness.cli`), not an import by tests.
if Path(sys.argv[0]).name == "icebench" or Path(sys.argv[0]).parts[-2:] == ("cli", "__main__.py"):
    for _signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(_signum, _terminated_while_starting)
    signal.signal(signal.SIGINT, _interrupted_while_starting)

from harness.base.errors import IcebenchError, IcebenchWarning, failure_line
from harness.base.redaction import redact
from harness.base.signals import terminates_like_ctrl_c
from harness.cli import names
from harness.cli.commands import commands, help_line
from harness.cli.flags import harness_box_bytes
from harness.cli.parser import DESCRIPTION, EPILOG, Parser, VersionAction


def build_parser(arguments: Sequence[str] | None = None) -> Parser:
    """The parser; given the command line, with the flags of the command it names only (the
    others' help texts read the plug-ins' names: no need to, for one command)."""
    parser = Parser(prog="icebench", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action=VersionAction)
    subparsers = parser.add_subparsers(dest="command", required=True)
    found = commands()
    named = next((word for word in arguments or [] if word in found), None)
    for name, command in found.items():
        subparser = subparsers.add_parser(name, help=help_line(command))
        if arguments is None or name == named:
            command.add_arguments(subparser)
    return parser


@contextmanager
def writer_files(refs: list[str] | None) -> Iterator[None]:
    """The writers of --writer-file in the registry while the command runs (loaded only if given:
    the registry imports every writer)."""
    if not refs:
        yield
        return
    from harness.engines.writers import used_writer_files

    with used_writer_files(refs):
        yield


PYTHON_SHOWWARNING = warnings.showwarning


def show_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """The one place warnings reach the terminal: ours as one line, others as Python shows them."""
    if issubclass(category, IcebenchWarning):
        print(redact(f"icebench: warning: {message}"), file=sys.stderr)
    else:
        PYTHON_SHOWWARNING(message, category, *args, **kwargs)


@terminates_like_ctrl_c
def main(argv: Sequence[str] | None = None) -> int:
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:  # from here on, KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.default_int_handler)
    warnings.showwarning = show_warning
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        names.given_writer_files(arguments)  # first: a writer flag may name one of their writers
        args = build_parser(arguments).parse_args(arguments)
        if (box_bytes := harness_box_bytes(args)) is not None:
            from harness.services.own_memory import run_in_box

            command = [sys.executable, "-m", "harness.cli", *arguments]
            return run_in_box(box_bytes, command, lambda line: print(line, file=sys.stderr))
        with writer_files(getattr(args, "writer_files", None)):
            commands()[args.command].run(args)
    except KeyboardInterrupt:
        print("icebench: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        print(redact(f"icebench: {failure_line(exc)}"), file=sys.stderr)
        return exc.exit_code if isinstance(exc, IcebenchError) else 2
    return 0
