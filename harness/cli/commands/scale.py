"""Commit-cost growth: the same batch size at several batch counts."""

from __future__ import annotations

import argparse

from harness.cli import names
from harness.cli.flags import add_settings_flags, add_source_flags, settings, your_data
from harness.cli.parser import batch_counts, known, one_known, one_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--writer", type=known("writer", names.writer_names, names.installed_writer_names),
        help=f"a writer, or several comma-separated, {one_of(names.writer_names())}",
    )  # fmt: skip
    parser.add_argument(
        "--scenario", default="append", type=one_known("scenario", names.scenario_names),
        help="an append-like scenario (default append)",
    )  # fmt: skip
    parser.add_argument(
        "--preset",
        type=one_known("preset", names.NAMES["preset"], derived=names.DERIVED_NAMES["preset"]),
        help="default small",
    )
    parser.add_argument("--batches", type=batch_counts, default=[50, 100, 200, 400], metavar="COUNTS")
    parser.add_argument("--report", action="store_true", help="end by writing report.html / report.md")
    add_source_flags(parser)
    add_settings_flags(parser)


def run(args: argparse.Namespace) -> None:
    """The scale axis alone: each writer at each batch count, no whole-set runs."""
    chosen = settings(args)
    from harness.cli import output
    from harness.cli.output import RichEvents, print_report, show
    from harness.cli.session import check_plugins, exit_on_verdict, session
    from harness.run.config import MatrixConfig
    from harness.run.matrix import run_matrix, your_scenarios
    from harness.run.plugins import the_writers
    from harness.run.your_sets import your_sets
    from reports.fits import fits
    from reports.report import write_report
    from reports.summary import fit_table

    check_plugins(chosen)
    scenario_names = your_scenarios([args.scenario]) if args.source is not None else [args.scenario]
    yours = your_sets("scale", your_data(args), args.preset is not None, chosen, scenario_names, RichEvents())
    config = MatrixConfig(
        presets=[args.preset or "small"],
        scenarios=scenario_names,
        scale_writers=args.writer or the_writers(),
        batches=args.batches,
        scale_batch_rows=args.batch_rows,  # None: the set over the largest count
        whole_set=False,
    ).resolved()
    with session(chosen) as (store, stack):
        records = run_matrix(chosen, config, store, stack, RichEvents(), yours)
    show(*(fit_table(fit) for fit in fits(records)))
    output.console.print(f"results: {store.folder}")
    if args.report:
        print_report(write_report(store.folder))
    exit_on_verdict(args, records)
