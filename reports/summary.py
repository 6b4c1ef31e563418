"""The summary of a results folder: a rich table for the terminal, Markdown for documents."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial

from rich.markup import escape
from rich.table import Table

from harness.base.caps import format_size
from harness.base.reasons import clipped, counted
from harness.model import ORACLE_READER, Metric, RunRecord, metrics, run_key
from reports.fits import Fit, point_batches
from reports.terminal import keep_first, rich_table

STATUS_STYLE = {"ok": "green", "oom": "bold red", "error": "red", "unsupported": "dim"}


def left_text(record: RunRecord) -> str:
    """What a failed or killed write left in the warehouse that no metadata reaches (its orphans):
    `left 4 files, 871.7 MiB`; empty for a run that succeeded or left nothing."""
    if record.status not in ("oom", "error") or not record.orphan_files:
        return ""
    return f"left {counted(record.orphan_files, 'file')}, {format_size(record.orphan_bytes)}"


def verdict_text(record: RunRecord, markup: bool = True) -> str:
    if record.status == "unsupported":  # its refusal is the operation that failed, not the writer
        return "unsupported"
    if record.verdict is None:
        return left_text(record) or "-"
    passed, failed_word = ("[green]pass[/]", "[red]FAIL[/]") if markup else ("pass", "FAIL")
    # Named when another engine's read was judged (the table held what pyiceberg cannot read).
    judged = record.verdict.judged_by
    by = f" (judged by {judged})" if judged and judged != ORACLE_READER else ""
    left = f"; {left}" if (left := left_text(record)) else ""  # a failed write's garbage
    if record.verdict.passed:
        return passed + by + left
    if record.verdict.unjudged:  # only the harness's limits failed: the writer is not to blame
        return f"unjudged ({', '.join(c.name for c in record.verdict.failed)}){left}"
    failed = record.verdict.failed
    names = ", ".join(c.name + (f" ({c.upstream})" if c.upstream else "") for c in failed[:3])
    more = f" +{len(failed) - 3}" if len(failed) > 3 else ""
    return f"{failed_word} {names}{more}{by}{left}"


def number_text(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def count_text(value: int | None) -> str:
    return "-" if value is None else str(value)


def metric_text(metric: Metric, value: float | None, digits: int = 2) -> str:
    """A metric's value as its unit reads: sizes in KiB/MiB/GiB, counts whole, times to `digits`."""
    if value is None:
        return "-"
    if metric.unit == "bytes":
        return format_size(int(value))
    if metric.unit == "count":
        return str(int(value))
    if metric.unit == "usd":
        return f"${value:.6f}"  # a write's requests cost fractions of a cent
    return number_text(value, digits if metric.unit == "s" else 2)


def _metric_cell(metric: Metric, record: RunRecord) -> str:
    return metric_text(metric, getattr(record, metric.name, None), digits=1)


def scenario_text(record: RunRecord) -> str:
    """The scenario, the rounds workload's phase (`round 2 upsert`), a step after a write (`append
    compact`), or a point of a scale axis
    (`append (scale, 50 batches)`: a prefix of the source, not the whole set the matrix ran)."""
    if record.round is not None:
        return f"round {record.round} {record.phase}"
    if record.phase is not None:  # a maintenance step after the write (matrix --maintenance)
        return f"{record.scenario} {record.phase}"
    if record.limit_rows is not None:
        return f"{record.scenario} (scale, {run_key(record).batches} batches)"
    return record.scenario


def writer_text(record: RunRecord) -> str:
    return record.writer + (f" [{record.variant}]" if record.variant else "")


Column = tuple[str, bool, Callable[[RunRecord], str]]  # header, right-aligned, cell text


def columns() -> list[Column]:
    """What ran, then a column per summary metric of the registry (harness/model/__init__.py METRICS)."""
    return [
        ("scenario", False, scenario_text),
        ("writer", False, writer_text),
        ("status", False, lambda r: r.status),
        *((m.label, True, partial(_metric_cell, m)) for m in metrics("run") if m.summary),
    ]


def summary_table(records: Iterable[RunRecord], title: str = "icebench") -> Table:
    records = list(records)
    table = Table(title=title, header_style="bold")
    shown = columns()
    for index, (header, right, cell) in enumerate(shown):
        # What ran (scenario, writer, status) is never wrapped: the figures give way first.
        whole = max((len(cell(r)) for r in records), default=0) if index < 2 else None
        table.add_column(header, justify="right" if right else "left", no_wrap=index < 3, min_width=whole)
    table.add_column("verdict")
    for r in records:
        cells = [escape(cell(r)) for _, _, cell in shown]  # "[pyiceberg 0.9.1]" is no style
        cells[2] = f"[{STATUS_STYLE[r.status]}]{r.status}[/]"
        table.add_row(*cells, verdict_text(r))
    # In a narrow terminal what ran and its verdict stay; the metrics go from the right (the
    # registry's order puts the telling ones first).
    return keep_first(table, "scenario", "writer", "status", "verdict")


def summary_tables(records: Sequence[RunRecord], title: str = "icebench") -> list[Table]:
    """The summary, then the workers of concurrent runs and why writers did not run, if any."""
    extra = [table for table in (worker_table(records), unsupported_table(records)) if table]
    return [summary_table(records, title), *extra]


def summary_rows(records: Iterable[RunRecord]) -> tuple[list[str], list[list[str]], set[int]]:
    """Headers, plain-text cells and the right-aligned (numeric) columns, for Markdown and HTML."""
    shown = columns()
    headers = [header for header, _, _ in shown] + ["verdict"]
    rows = [[cell(r) for _, _, cell in shown] + [verdict_text(r, markup=False)] for r in records]
    return headers, rows, {index for index, (_, right, _) in enumerate(shown) if right}


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


FAILED_REASON_CHARS = 200  # a table cell, not a dump: the oracle's reasons name what differs first


def failed_check_rows(records: Iterable[RunRecord]) -> list[list[str]]:
    """scenario, writer, preset, check, reason (one line, capped), upstream: every failed check."""
    return [
        [
            scenario_text(r),
            r.writer,
            r.preset,
            check.name,
            clipped(check.reason or "", FAILED_REASON_CHARS),
            check.upstream or "",
        ]
        for r in records
        if r.verdict
        for check in r.verdict.failed
    ]


FAILED_CHECK_HEADERS = ["scenario", "writer", "preset", "check", "reason", "upstream"]

UNSUPPORTED_HEADERS = ["writer", "scenarios", "reason"]


def unsupported_rows(records: Iterable[RunRecord]) -> list[list[str]]:
    """Why writers did not run: each writer's reason once, with the scenarios it was given for."""
    scenarios_of: dict[tuple[str, str], dict[str, None]] = {}
    for r in records:
        if r.status == "unsupported":
            scenarios_of.setdefault((writer_text(r), r.error or ""), {})[r.scenario] = None
    return [[writer, ", ".join(names), reason] for (writer, reason), names in scenarios_of.items()]


def unsupported_table(records: Iterable[RunRecord]) -> Table | None:
    rows = unsupported_rows(records)
    if not rows:
        return None
    table = rich_table("not run: unsupported, and why", UNSUPPORTED_HEADERS, rows, ())
    table.columns[1].no_wrap = False  # the scenarios: a list that may wrap between its names
    return table


def fit_rows(fit: Fit) -> tuple[list[str], list[list[str]], set[int]]:
    """Each point of a scale fit (repeats one after the other)."""
    headers = ["batches", "status", "write s", "late/early", "peak mem", "peak rss"]
    rows = [
        [
            str(point_batches(p)),
            p.status,
            number_text(p.write_s),
            number_text(p.late_early_ratio),
            format_size(p.peak_memory_bytes),
            format_size(p.peak_rss_bytes),
        ]
        for p in fit.points
    ]
    return headers, rows, {0, 2, 3, 4, 5}


def fit_title(fit: Fit) -> str:
    key = fit.key
    variant = f" [{key.variant}]" if key.variant else ""
    title = f"scale {key.writer}{variant} / {key.scenario} / {key.preset}, {key.batch_rows} rows per batch"
    if fit.growth_exponent is not None and fit.tail_exponent is not None:
        title += (
            f"; growth_exponent {fit.growth_exponent:.2f} ({fit.growth_class}), "
            f"tail exponent {fit.tail_exponent:.2f}"
        )
    return title


def fit_table(fit: Fit) -> Table:
    return rich_table(escape(fit_title(fit)).replace("; ", "\n"), *fit_rows(fit))


SCAN_HEADERS = [
    "scenario",
    "writer",
    "status",
    "full scan s",
    "files / deletes",
    "rows",
    "selective scan s",
    "files / deletes",
    "rows",
    "scan rss",
    "scan error",
]


def _files_text(files: int | None, deletes: int | None) -> str:
    return "-" if files is None else f"{files} / {count_text(deletes)}"


def scan_rows(records: Iterable[RunRecord]) -> tuple[list[str], list[list[str]], set[int]]:
    """The downstream scan of each run that measured one: time, files and delete files planned,
    rows returned, for the full and the selective scan; why a scan failed."""
    rows = [
        [
            r.scenario,
            writer_text(r),
            r.status,
            number_text(r.full_scan_s),
            _files_text(r.full_scan_files, r.full_scan_delete_files),
            count_text(r.full_scan_rows),
            number_text(r.selective_scan_s),
            _files_text(r.selective_scan_files, r.selective_scan_delete_files),
            count_text(r.selective_scan_rows),
            format_size(r.scan_peak_rss_bytes),
            r.scan_error or "",
        ]
        for r in records
        if r.full_scan_s is not None or r.scan_error is not None
    ]
    return SCAN_HEADERS, rows, set(range(3, 10))


WORKER_HEADERS = [
    "scenario",
    "writer",
    "worker",
    "set (operation)",
    "status",
    "commits",
    "retries",
    "wall s",
    "peak mem",
]


def worker_rows(records: Iterable[RunRecord]) -> tuple[list[str], list[list[str]], set[int]]:
    """Each worker of the concurrent runs, and its error if it failed."""
    rows = [
        [
            r.scenario,
            writer_text(r),
            w.name,
            f"{w.source_set} ({w.operation})" if w.operation else w.source_set,
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
