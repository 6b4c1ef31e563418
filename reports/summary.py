"""The summary table printed after a run or a matrix (plots come from a separate report step)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from harness.caps import format_size
from harness.results import RunRecord

STATUS_STYLE = {"ok": "green", "oom": "bold red", "error": "red", "unsupported": "dim"}


def verdict_text(record: RunRecord) -> str:
    if record.verdict is None:
        return "-"
    if record.verdict.passed:
        return "[green]pass[/]"
    failed = record.verdict.failed
    names = ", ".join(c.name + (f" ({c.upstream})" if c.upstream else "") for c in failed[:3])
    more = f" +{len(failed) - 3}" if len(failed) > 3 else ""
    return f"[red]FAIL[/] {names}{more}"


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary_table(records: Iterable[RunRecord], title: str = "icebench") -> Table:
    table = Table(title=title, header_style="bold", show_lines=False)
    for column, justify in (
        ("scenario", "left"),
        ("writer", "left"),
        ("status", "left"),
        ("peak mem", "right"),
        ("wall s", "right"),
        ("write s", "right"),
        ("batches", "right"),
        ("late/early", "right"),
        ("snapshots", "right"),
        ("data files", "right"),
        ("metadata", "right"),
        ("verdict", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for r in records:
        table.add_row(
            r.scenario,
            r.writer,
            f"[{STATUS_STYLE[r.status]}]{r.status}[/]",
            format_size(r.peak_memory_bytes),
            _number(r.wall_s, 1),
            _number(r.write_s, 1),
            str(r.batches or "-"),
            _number(r.late_early_ratio),
            str(r.snapshots_added if r.snapshots_added is not None else "-"),
            str(r.data_files if r.data_files is not None else "-"),
            f"{r.metadata_files} / {format_size(r.metadata_bytes)}" if r.metadata_files is not None else "-",
            verdict_text(r),
        )
    return table
