"""List writer backends and the operations they support."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No flags."""


def run(_: argparse.Namespace) -> None:
    """Operations per writer, and on which stacks it can run (the reasons it cannot, numbered below)."""
    from rich.markup import escape
    from rich.table import Table

    from harness.cli import output
    from harness.cli.output import show
    from harness.engines.writers import writers
    from harness.model import Operation
    from harness.services.stacks import stacks

    table = Table(title="writers", header_style="bold")
    operations = tuple(Operation)
    for column in ("writer", *operations, "commits", *stacks()):
        table.add_column(column, no_wrap=True)
    table.add_column("what it does")
    reasons: list[str] = []

    def numbered(reason: str) -> str:
        if reason not in reasons:
            reasons.append(reason)
        return f"[dim]no ({reasons.index(reason) + 1})[/]"

    for name, writer in writers().items():
        marks = [
            "yes"
            if writer.supports(op)
            else numbered(f"{op}: {writer.lacks[op]}")
            if op in writer.lacks
            else "[dim]unsupported[/]"
            for op in operations
        ]
        on_stacks = []
        for stack in stacks().values():
            reason = writer.supports_catalog(stack.catalog_shape)
            on_stacks.append(numbered(reason) if reason else "yes")
        table.add_row(
            name, *marks, "one" if writer.single_commit else "several", *on_stacks, writer.description
        )
    show(table)
    for number, reason in enumerate(reasons, 1):
        output.console.print(f"({number}) {escape(reason)}")
