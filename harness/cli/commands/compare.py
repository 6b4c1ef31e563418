"""Ratios current / base per metric per run key."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", type=Path, metavar="BASE", help="a results folder or a baseline file")
    parser.add_argument("current", type=Path, metavar="CUR", help="a results folder or a baseline file")
    parser.add_argument("--markdown", action="store_true", help="Markdown tables instead")


def run(args: argparse.Namespace) -> None:
    from harness.base.errors import warn
    from harness.cli import output
    from harness.cli.output import print_not_comparable, show
    from reports.baseline import baseline_of
    from reports.compare import (
        compare,
        comparison_markdown,
        comparison_tables,
        not_comparable,
        nothing_shared,
        version_changes,
    )
    from reports.gate import MachineFactor

    base, current = baseline_of(args.base), baseline_of(args.current)
    rows = compare(base, current)
    if args.markdown:
        print(comparison_markdown(rows))
    else:
        show(*comparison_tables(rows, title=f"{args.base} → {args.current}"))
    for change in version_changes(base, current):
        output.console.print(f"version changed: {change}")
    if machine := MachineFactor.of(base.machine, current.machine):  # the ratios above are as measured
        output.console.print(f"{machine.text}: the gate divides time ratios by it")
    print_not_comparable(not_comparable(rows))
    if disjoint := nothing_shared(rows):
        warn(disjoint)
