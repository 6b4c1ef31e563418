"""The `icebench` command: `icebench -h` answered from the list of commands alone, in a fraction of
a second (no engine, catalog or plotting library is loaded for it); every other use is
harness/cli.py's."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence

DESCRIPTION = "`icebench`: generate data, run one scenario x writer, a matrix, or a batch-count scale."
EPILOG = (
    "exit codes: 0 done (failed checks are results), 1 gate regression, 2 bad input or error, "
    "3 --fail-on-verdict and a run did not pass, 130 Ctrl-C. docs/commands.md has more."
)
# Each command's line in the top-level help, in its order (harness/cli.py adds them so).
COMMAND_HELP: dict[str, str] = {
    "generate": "write a deterministic parquet set or an upsert change set",
    "run": "one scenario x writer run in a memory-capped worker",
    "report": "report.html + report.md with plots, next to the results",
    "summary": "print the verdict and summary tables of a results folder",
    "clean": "remove the caches icebench made (data sets, environments)",
    "writers": "list writer backends and the operations they support",
    "scenarios": "list scenarios",
    "matrix": "every scenario x writer (x preset, table layout, cap), with the verdict",
    "scale": "commit-cost growth: the same batch size at several batch counts",
    "rounds": "longevity: N rounds of append/upsert/replace on a table each writer wrote itself",
    "baseline": "results folders as a baseline to gate against",
    "compare": "ratios current / base per metric per run key",
    "gate": "exit 1 when results regressed against a baseline",
}
TOP_LEVEL_HELP = ("-h", "--help")


class HelpFormatter(argparse.HelpFormatter):
    """Help wrapped between words only: `pyiceberg-fast-append` is never split at a hyphen."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
            break_on_hyphens=False, break_long_words=False,
        )  # fmt: skip


def top_level_parser() -> argparse.ArgumentParser:
    """The parser's top level as harness/cli.py builds it, its commands without their flags."""
    parser = argparse.ArgumentParser(
        prog="icebench", description=DESCRIPTION, epilog=EPILOG, formatter_class=HelpFormatter
    )
    parser.add_argument("--version", action="store_true", help="print the version and commit, and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in COMMAND_HELP.items():
        commands.add_parser(name, help=text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) == 1 and arguments[0] in TOP_LEVEL_HELP:
        top_level_parser().print_help()
        return 0
    from harness.cli import main as full_main  # the engines, catalogs and reports: seconds to load

    return full_main(arguments)


if __name__ == "__main__":
    sys.exit(main())
