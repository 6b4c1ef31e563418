"""Results folders as a baseline to gate against."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="baseline_action", required=True)
    save = actions.add_parser("save", help="write the baseline of results folders as JSON")
    save.add_argument("results_dirs", type=Path, nargs="+", metavar="RESULTS_DIR")
    save.add_argument("--out", type=Path, default=Path("baseline.json"), help="default: baseline.json")


def run(args: argparse.Namespace) -> None:
    """`baseline save`, its only action so far."""
    from harness.cli import output
    from reports.baseline import save_baseline

    baseline = save_baseline(args.results_dirs, args.out)
    output.console.print(
        f"baseline of {len(baseline.runs)} run keys and {len(baseline.scales)} scale fits "
        f"from {', '.join(baseline.sources)}: {args.out}"
    )
