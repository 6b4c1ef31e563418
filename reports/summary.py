"""The summary of a results folder: a rich table for the terminal, Markdown for documents."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from rich.markup import escape
from rich.table import Table

from harness.caps import format_size
from harness.model import RunRecord
from harness.results import ScaleResult

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


def number_text(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def count_text(value: int | None) -> str:
    return "-" if value is None else str(value)


def _metadata(r: RunRecord) -> str:
    return "-" if r.metadata_files is None else f"{r.metadata_files} / {format_size(r.metadata_bytes)}"


# header, right-aligned, cell text. `peak rss` (resident) leads: it tells writers apart where
# `peak mem` (the kernel's, page cache included) reads the cap for all of them.
COLUMNS: list[tuple[str, bool, Callable[[RunRecord], str]]] = [
    ("scenario", False, lambda r: r.scenario),
    ("writer", False, lambda r: r.writer + (f" [{r.variant}]" if r.variant else "")),
    ("status", False, lambda r: r.status),
    ("peak rss", True, lambda r: format_size(r.peak_rss_bytes)),
    ("peak mem", True, lambda r: format_size(r.peak_memory_bytes)),
    ("wall s", True, lambda r: number_text(r.wall_s, 1)),
    ("write s", True, lambda r: number_text(r.write_s, 1)),
    ("verify s", True, lambda r: number_text(r.verify_s, 1)),
    ("batches", True, lambda r: count_text(r.batches)),
    ("late/early", True, lambda r: number_text(r.late_early_ratio)),
    ("snapshots", True, lambda r: count_text(r.snapshots_added)),
    ("data files", True, lambda r: count_text(r.data_files)),
    ("metadata files / bytes", True, _metadata),
]


def summary_table(records: Iterable[RunRecord], title: str = "icebench") -> Table:
    records = list(records)
    table = Table(title=title, header_style="bold")
    for index, (header, right, cell) in enumerate(COLUMNS):
        # What ran (scenario, writer) is never wrapped: the figures give way first.
        whole = max((len(cell(r)) for r in records), default=0) if index < 2 else None
        table.add_column(header, justify="right" if right else "left", no_wrap=index < 2, min_width=whole)
    table.add_column("verdict")
    for r in records:
        cells = [escape(cell(r)) for _, _, cell in COLUMNS]  # "[pyiceberg 0.9.1]" is no style
        cells[2] = f"[{STATUS_STYLE[r.status]}]{r.status}[/]"
        table.add_row(*cells, verdict_text(r))
    return table


def summary_tables(records: Sequence[RunRecord], title: str = "icebench") -> list[Table]:
    """The summary, then the workers of concurrent runs if there were any."""
    workers = worker_table(records)
    return [summary_table(records, title)] + ([workers] if workers else [])


def summary_rows(records: Iterable[RunRecord]) -> tuple[list[str], list[list[str]], set[int]]:
    """Headers, plain-text cells and the right-aligned (numeric) columns, for Markdown and HTML."""
    headers = [header for header, _, _ in COLUMNS] + ["verdict"]
    rows = [[cell(r) for _, _, cell in COLUMNS] + [verdict_text(r, markup=False)] for r in records]
    return headers, rows, {index for index, (_, right, _) in enumerate(COLUMNS) if right}


def markdown_table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Collection[int] = ()
) -> str:
    """A Markdown table whose `numeric` columns (by index) are right-aligned; `|` in cells escaped."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    alignment = "|" + "|".join("---:" if i in numeric else "---" for i in range(len(headers))) + "|"
    return "\n".join([line(headers), alignment, *(line(row) for row in rows)])


def summary_markdown(records: Iterable[RunRecord]) -> str:
    return markdown_table(*summary_rows(records))


def failed_check_rows(records: Iterable[RunRecord]) -> list[list[str]]:
    """scenario, writer, preset, check, reason, upstream: every failed correctness check."""
    return [
        [r.scenario, r.writer, r.preset, check.name, check.reason or "", check.upstream or ""]
        for r in records
        if r.verdict
        for check in r.verdict.failed
    ]


FAILED_CHECK_HEADERS = ["scenario", "writer", "preset", "check", "reason", "upstream"]


def scale_rows(result: ScaleResult) -> tuple[list[str], list[list[str]], set[int]]:
    headers = ["batches", "status", "write s", "late/early", "peak mem", "peak rss"]
    rows = [
        [
            str(p.batches),
            p.status,
            number_text(p.write_s),
            number_text(p.late_early_ratio),
            format_size(p.peak_memory_bytes),
            format_size(p.peak_rss_bytes),
        ]
        for p in result.points
    ]
    return headers, rows, {0, 2, 3, 4, 5}


def scale_title(result: ScaleResult) -> str:
    variant = f" [{result.variant}]" if result.variant else ""
    title = (
        f"scale {result.writer}{variant} / {result.scenario} / {result.preset}, "
        f"{result.batch_rows} rows per batch"
    )
    if result.growth_exponent is not None and result.tail_exponent is not None:
        title += (
            f"; growth_exponent {result.growth_exponent:.2f} ({result.growth_class}), "
            f"tail exponent {result.tail_exponent:.2f}"
        )
    return title


def scale_table(result: ScaleResult) -> Table:
    return rich_table(escape(scale_title(result)).replace("; ", "\n"), *scale_rows(result))


WORKER_HEADERS = ["scenario", "writer", "worker", "set", "status", "commits", "retries", "wall s", "peak mem"]


def worker_rows(records: Iterable[RunRecord]) -> tuple[list[str], list[list[str]], set[int]]:
    """Each worker of the concurrent runs, and its error if it failed."""
    rows = [
        [
            r.scenario,
            r.writer + (f" [{r.variant}]" if r.variant else ""),
            w.name,
            w.source_set,
            w.status + (f": {w.error}" if w.error else ""),
            str(len(w.commit_latencies_s)),
            count_text(w.commit_retries),
            number_text(w.wall_s, 1),
            format_size(w.peak_memory_bytes),
        ]
        for r in records
        for w in r.workers
    ]
    return WORKER_HEADERS, rows, {5, 6, 7, 8}


def worker_table(records: Iterable[RunRecord]) -> Table | None:
    headers, rows, numeric = worker_rows(records)
    if not rows:
        return None
    return rich_table("concurrent workers (retries: pyiceberg's own; - not counted)", headers, rows, numeric)


def rich_table(
    title: str, headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Collection[int]
) -> Table:
    table = Table(title=title, header_style="bold")
    for index, column in enumerate(headers):
        table.add_column(column, justify="right" if index in numeric else "left")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table
