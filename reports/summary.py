"""The summary of a results folder: a rich table for the terminal, Markdown for documents."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.table import Table

from harness.caps import format_size
from harness.results import RunRecord, ScaleResult

STATUS_STYLE = {"ok": "green", "oom": "bold red", "error": "red", "unsupported": "dim"}


def verdict_text(record: RunRecord, markup: bool = True) -> str:
    if record.verdict is None:
        return "-"
    passed, failed_word = ("[green]pass[/]", "[red]FAIL[/]") if markup else ("pass", "FAIL")
    if record.verdict.passed:
        return passed
    failed = record.verdict.failed
    names = ", ".join(c.name + (f" ({c.upstream})" if c.upstream else "") for c in failed[:3])
    more = f" +{len(failed) - 3}" if len(failed) > 3 else ""
    return f"{failed_word} {names}{more}"


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _metadata(r: RunRecord) -> str:
    return "-" if r.metadata_files is None else f"{r.metadata_files} / {format_size(r.metadata_bytes)}"


# header, right-aligned, cell text
COLUMNS: list[tuple[str, bool, Callable[[RunRecord], str]]] = [
    ("scenario", False, lambda r: r.scenario),
    ("writer", False, lambda r: r.writer),
    ("status", False, lambda r: r.status),
    ("peak mem", True, lambda r: format_size(r.peak_memory_bytes)),
    ("peak rss", True, lambda r: format_size(r.peak_rss_bytes)),
    ("wall s", True, lambda r: _number(r.wall_s, 1)),
    ("write s", True, lambda r: _number(r.write_s, 1)),
    ("batches", True, lambda r: _count(r.batches)),
    ("late/early", True, lambda r: _number(r.late_early_ratio)),
    ("snapshots", True, lambda r: _count(r.snapshots_added)),
    ("data files", True, lambda r: _count(r.data_files)),
    ("metadata files / bytes", True, _metadata),
]


def summary_table(records: Iterable[RunRecord], title: str = "icebench") -> Table:
    table = Table(title=title, header_style="bold")
    for header, right, _ in COLUMNS:
        table.add_column(header, justify="right" if right else "left")
    table.add_column("verdict")
    for r in records:
        cells = [cell(r) for _, _, cell in COLUMNS]
        cells[2] = f"[{STATUS_STYLE[r.status]}]{r.status}[/]"
        table.add_row(*cells, verdict_text(r))
    return table


def summary_markdown(records: Iterable[RunRecord]) -> str:
    headers = [header for header, _, _ in COLUMNS] + ["verdict"]
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if right else "---" for _, right, _ in COLUMNS) + "|---|",
    ]
    for r in records:
        cells = [cell(r) for _, _, cell in COLUMNS] + [verdict_text(r, markup=False)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scale_table(result: ScaleResult) -> Table:
    title = f"scale {result.writer} / {result.scenario} / {result.preset}, {result.batch_rows} rows per batch"
    if result.growth_exponent is not None and result.tail_exponent is not None:
        title += (
            f"\ngrowth_exponent {result.growth_exponent:.2f} ({result.growth_class}), "
            f"tail exponent {result.tail_exponent:.2f}"
        )
    table = Table(title=title, header_style="bold")
    for column in ("batches", "status", "write s", "late/early", "peak mem", "peak rss"):
        table.add_column(column, justify="right")
    for p in result.points:
        table.add_row(
            str(p.batches),
            p.status,
            _number(p.write_s),
            _number(p.late_early_ratio),
            format_size(p.peak_memory_bytes),
            format_size(p.peak_rss_bytes),
        )
    return table
