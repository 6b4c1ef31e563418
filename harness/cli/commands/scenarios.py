"""List scenarios."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No flags."""


def run(_: argparse.Namespace) -> None:
    from rich.table import Table

    from harness.cli.output import show
    from scenarios import scenarios

    table = Table(title="scenarios", header_style="bold")
    for column in ("scenario", "operation"):
        table.add_column(column, no_wrap=True)
    table.add_column("what it does")
    for name, scenario in scenarios().items():
        table.add_row(name, scenario.operation, scenario.description)
    show(table)
