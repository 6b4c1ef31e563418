"""Longevity: N rounds of append/upsert/replace on a table each writer wrote itself."""

from __future__ import annotations

import argparse
from functools import partial

from harness.base.errors import IcebenchError
from harness.cli.flags import (
    add_workload_flags,
    settings,
    with_flags,
    your_data,
)
from harness.run.config import RoundsConfig, load_rounds_config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workload_flags(parser, RoundsConfig)


def run(args: argparse.Namespace) -> None:
    """Each writer's rounds of phases on its own table, judged after every phase."""
    chosen = settings(args)
    if args.changes is not None:
        raise IcebenchError(f"--changes {args.changes}: rounds derive each round's change set from --source")
    asked = with_flags(load_rounds_config(args.config), args)
    from harness.cli.output import RichEvents
    from harness.cli.session import check_plugins, exit_on_verdict, run_workload
    from harness.run.rounds import check_rounds_layouts, run_rounds
    from harness.run.your_sets import your_sets

    check_plugins(chosen)
    config = asked.resolved()
    yours = your_sets("rounds", your_data(args), args.preset is not None, chosen, [], RichEvents())
    check_rounds_layouts(config.layouts(), yours["base"] if yours else None, config.preset)
    phases = ", ".join(config.phases)
    data = f"your data {args.source}" if yours else config.preset
    tables = "; ".join(layout.label for layout in config.layouts() if not layout.plain)
    what = f"{len(config.writers)} writers x {config.rounds} rounds of {phases} on {data}"
    what += f" ({tables})" if tables else ""
    workload = partial(run_rounds, chosen, config, your_set=yours["base"] if yours else None)
    exit_on_verdict(args, run_workload("rounds", what, chosen, args.report, workload))
