"""Exit 1 when results regressed against a baseline."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.flags import add_config_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results_dirs", type=Path, nargs="*", metavar="RESULTS_DIR",
        help="default: the newest folder under the results root",
    )  # fmt: skip
    parser.add_argument("--baseline", type=Path, required=True, help="a file `baseline save` wrote")
    add_config_flag(parser, "a [gate] table of thresholds")
    parser.add_argument("--results", type=Path, help="results root folder (default: results)")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table instead")


def run(args: argparse.Namespace) -> None:
    """Exit 1 with a table of what regressed; 2 (via IcebenchError) for bad input."""
    from harness.base.settings import load_settings
    from harness.cli.output import print_not_comparable, say, show
    from reports.baseline import build_baseline, load_baseline, newest_results_folder
    from reports.compare import compare, not_comparable
    from reports.gate import (
        GateFailed,
        load_thresholds,
        passed_text,
        regressions,
        regressions_markdown,
        regressions_table,
        require_compared,
    )

    baseline = load_baseline(args.baseline)  # first: a missing baseline is bad input, nothing ran
    thresholds = load_thresholds(args.config)
    folders = args.results_dirs or [
        newest_results_folder(load_settings(args.config, results_dir=args.results).results_dir)
    ]
    rows = compare(baseline, build_baseline(folders))
    found = regressions(rows, thresholds)
    against = f"{', '.join(str(f) for f in folders)} against {args.baseline}"
    print_not_comparable(not_comparable(rows))  # listed, never failed: their numbers measure other code
    require_compared(rows)
    if not found:
        say(passed_text(rows, thresholds, against))
        return
    if args.markdown:
        print(regressions_markdown(found))
    else:
        show(regressions_table(found, title=f"regressions: {against}"))
    raise GateFailed(f"gate failed: {len(found)} regressions, {against}")
