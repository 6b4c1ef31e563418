"""One scenario x writer run in a memory-capped worker."""

from __future__ import annotations

import argparse

from harness.cli import names
from harness.cli.flags import add_axis_flags, add_settings_flags, add_source_flags, settings, your_data
from harness.cli.parser import one_known, one_of
from harness.run.config import MatrixConfig

LAYOUT_FIELDS = ("partitions", "sort", "table_properties", "format_versions")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        required=True,
        type=one_known("scenario", names.scenario_names),
        help=one_of(names.scenario_names()),
    )
    parser.add_argument(
        "--writer",
        type=one_known("writer", names.writer_names, names.installed_writer_names),
        help=one_of(names.writer_names()),
    )
    parser.add_argument(
        "--preset",
        type=one_known("preset", names.NAMES["preset"], derived=names.DERIVED_NAMES["preset"]),
        help=f"{one_of(names.NAMES['preset']())} (default tiny)",
    )
    add_source_flags(parser)
    add_axis_flags(parser, MatrixConfig, LAYOUT_FIELDS)
    parser.add_argument(
        "--base", metavar="PATH", help="the set the table holds before (replace, upsert), as --source"
    )
    add_settings_flags(parser)


def run(args: argparse.Namespace) -> None:
    chosen = settings(args)
    from harness.cli import output
    from harness.cli.output import RichEvents, print_failed_checks, print_results
    from harness.cli.session import check_plugins, exit_on_verdict, session
    from harness.run.matrix import check_layouts
    from harness.run.plugins import the_writers, writer_libraries
    from harness.run.runner import Runner, RunPlan
    from harness.run.your_sets import run_sets
    from harness.services.envs import variants

    check_plugins(chosen)
    writer = the_writers(args.writer, one=True)[0]
    preset, sets = run_sets(args.scenario, args.preset, your_data(args), chosen, RichEvents())
    layouts = MatrixConfig(
        partitions=args.partitions or [""],
        sort=args.sort or "",
        table_properties=args.table_properties or [],
        format_versions=args.format_versions or [],
    ).layouts()
    check_layouts(layouts, [args.scenario], sets)
    plans = [
        RunPlan(args.scenario, writer, preset, sets, chosen.batch_rows, chosen.memory, layout=layout)
        for layout in layouts
    ]
    with session(chosen) as (store, stack):
        doing = f"{args.scenario} x {writer} on {stack.name}: set-up, capped worker, oracle"
        with output.console.status(doing) as status:

            def fed(count: int, rows: int) -> None:
                status.update(f"{doing} ({count:,} of {rows:,} rows fed to the writer)")

            runners = [
                Runner(chosen, store, stack, variant, on_progress=fed)
                for variant in variants(chosen.library_versions, chosen.file_ios, writer_libraries([writer]))
            ]
            records = [runner.run(plan) for plan in plans for runner in runners]  # variants interleaved
    print_results(records, title=f"icebench run {store.run_id}")
    print_failed_checks(records)
    output.console.print(f"results: {store.runs_path}")
    exit_on_verdict(args, records)
