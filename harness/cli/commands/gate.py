"""Exit 1 when results regressed against a baseline, or one variant's runs against another's."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.flags import add_config_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results_dirs", type=Path, nargs="*", metavar="RESULTS_DIR",
        help="default: the newest folder under the results root",
    )  # fmt: skip
    against = parser.add_mutually_exclusive_group(required=True)
    against.add_argument("--baseline", type=Path, help="a file `baseline save` wrote")
    against.add_argument(
        "--variants", type=variant_pair, metavar="BASE,CURRENT",
        help="two variants of a library axis in the same results, e.g. 'dlt 1.31.0,dlt 1.23.0+dc01193': "
        "the second's runs against the first's",
    )  # fmt: skip
    add_config_flag(parser, "a [gate] table of thresholds")
    parser.add_argument("--results", type=Path, help="results root folder (default: results)")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table instead")


def variant_pair(text: str) -> tuple[str, str]:
    """`BASE,CURRENT`: two variant labels as the records name them."""
    labels = [label.strip() for label in text.split(",")]
    if len(labels) != 2 or not all(labels) or labels[0] == labels[1]:
        raise argparse.ArgumentTypeError(f"two different variants, BASE,CURRENT: {text!r}")
    return labels[0], labels[1]


def run(args: argparse.Namespace) -> None:
    """Exit 1 with a table of what regressed; 2 (via IcebenchError) for bad input."""
    from harness.base.settings import load_settings
    from harness.cli.output import print_not_comparable, say, show
    from reports.baseline import build_baseline, load_baseline, newest_results_folder, variant_baselines
    from reports.compare import compare, not_comparable
    from reports.gate import (
        GateFailed,
        MachineFactor,
        load_thresholds,
        machine_text,
        passed_text,
        regressions,
        regressions_markdown,
        regressions_table,
        require_compared,
    )

    baseline = load_baseline(args.baseline) if args.baseline else None  # first: bad input, nothing ran
    thresholds = load_thresholds(args.config)
    folders = args.results_dirs or [
        newest_results_folder(load_settings(args.config, results_dir=args.results).results_dir)
    ]
    where = ", ".join(str(f) for f in folders)
    machine = None  # two variants ran interleaved, on one machine: nothing to take out
    if baseline is not None:
        results = build_baseline(folders)
        rows = compare(baseline, results)
        against = f"{where} against {args.baseline}"
        machine = MachineFactor.of(baseline.machine, results.machine)
    else:
        base, current = args.variants
        rows = compare(*variant_baselines(folders, base, current))
        against = f"{current} against {base} in {where}"
    found = regressions(rows, thresholds, machine)
    print_not_comparable(not_comparable(rows))  # listed, never failed: their numbers measure other code
    require_compared(rows)
    if not found:
        say(passed_text(rows, thresholds, against, machine))
    elif args.markdown:
        print(regressions_markdown(found))
    else:
        show(regressions_table(found, title=f"regressions: {against}"))
    if baseline is not None:
        say(f"  {machine_text(machine)}")
    if found:
        raise GateFailed(f"gate failed: {len(found)} regressions, {against}")
