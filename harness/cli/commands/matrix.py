"""Every scenario x writer (x preset, table layout, cap), with the verdict."""

from __future__ import annotations

import argparse
from functools import partial
from typing import TYPE_CHECKING

from harness.base.caps import format_size
from harness.base.errors import IcebenchError
from harness.cli.flags import (
    add_workload_flags,
    cap_axis,
    settings,
    with_flags,
    your_data,
)
from harness.run.config import MatrixConfig, YourData, load_matrix_config

if TYPE_CHECKING:
    from harness.base.results import ResultsStore
    from harness.base.settings import Settings
    from harness.model import RunRecord
    from harness.run.events import MatrixEvents
    from harness.services.stacks import Stack
    from scenarios.base import DataSets


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workload_flags(parser, MatrixConfig, memory_axis=True)


def run(args: argparse.Namespace) -> None:
    chosen = settings(args)
    asked = with_flags(load_matrix_config(args.config), args, memory=cap_axis(args))
    from generators.presets import get_preset
    from harness.cli.output import RichEvents
    from harness.cli.session import check_plugins, exit_on_verdict, run_workload
    from harness.run.matrix import run_matrix, your_scenarios
    from harness.run.your_sets import prepare_writers_for_s3, your_sets

    check_plugins(chosen)
    if args.source is not None and asked.rows:
        raise IcebenchError(
            "--source and --rows: the rows axis makes a preset's data at other row counts, not yours"
        )
    config = asked.resolved()
    if args.source is not None or any(get_preset(name).shape == "events" for name in config.presets):
        config = config.model_copy(update={"scenarios": your_scenarios(asked.scenarios)})
    data = your_data(args)
    if data.on_s3:  # read once the stack that serves it is up
        prepare_writers_for_s3(data.source or "", [*config.writers, *config.scale_writers])
        workload = partial(_on_s3_sets, chosen, config, data)
    else:
        yours = your_sets("matrix", data, args.presets is not None, chosen, config.scenarios, RichEvents())
        _check_layouts(config, yours)
        workload = partial(run_matrix, chosen, config, your_sets=yours)
    axis = f", {len(config.scale_writers)} writers at {config.batches} batches" if config.batches else ""
    shown = f"your data {args.source}" if args.source is not None else f"presets {', '.join(config.presets)}"
    pairs = f"{len(config.scenarios)} scenarios x {len(config.writers)} writers"
    if len(layouts := config.layouts()) > 1 or not layouts[0].plain:
        pairs += f" x {len(layouts)} tables ({'; '.join(layout.label for layout in layouts)})"
    if len(caps := config.caps(chosen)) > 1:
        pairs += f" x caps {', '.join(format_size(cap) for cap in caps)}"
    if config.find_cap:
        pairs += ", then the smallest cap each survives"
    what = f"{pairs} x {shown}, {config.repeat}x each{axis}"
    records = run_workload("matrix", what, chosen, args.report, workload, keep_sources=data.on_s3)
    exit_on_verdict(args, records)


def _check_layouts(config: MatrixConfig, yours: DataSets | None) -> None:
    from harness.run.matrix import check_layouts, check_preset_layouts

    if yours is None:  # a layout the tables cannot take: one line before any data is made
        check_preset_layouts(config.layouts(), config.presets)
    else:
        check_layouts(config.layouts(), config.scenarios, yours)


def _on_s3_sets(
    chosen: Settings,
    config: MatrixConfig,
    data: YourData,
    store: ResultsStore,
    stack: Stack,
    events: MatrixEvents,
) -> list[RunRecord]:
    """The matrix on a set on the stack's object store: read (and checked) once the stack is up."""
    from harness.run.matrix import run_matrix
    from harness.run.your_sets import your_sets

    yours = your_sets("matrix", data, False, chosen, config.scenarios, events)
    _check_layouts(config, yours)
    return run_matrix(chosen, config, store, stack, events, your_sets=yours)
