"""The rounds workload's results: per writer and phase, each metric over the rounds and its
degradation rate (LST-Bench: the mean of (M[i] - M[i-1]) / M[i-1] over consecutive rounds), as a
table (the plot: reports/plots.py rounds_figure)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from harness.model import Metric, RunRecord, metric, total_cost
from reports.summary import metric_text, writer_text
from reports.terminal import rich_table

# What is followed over the rounds: the write's latency and memory, what it leaves in the table,
# and what reading that table costs (the full scan: the small files and deletes piling up).
ROUND_METRICS = (
    "write_s",
    "peak_rss_bytes",
    "data_files",
    "snapshots_added",
    "metadata_bytes",
    "full_scan_s",
)
# Those whose degradation rate the table shows (the others: first and last value).
RATED = ("write_s", "peak_rss_bytes", "metadata_bytes", "full_scan_s")


def degradation_rate(values: Sequence[float | None]) -> float | None:
    """LST-Bench's degradation rate: the mean relative change from one round to the next, over the
    pairs of consecutive rounds that both have a positive value; None when there is no such pair."""
    changes = [
        (later - earlier) / earlier
        for earlier, later in itertools.pairwise(values)
        if earlier and later is not None and earlier > 0
    ]
    return sum(changes) / len(changes) if changes else None


@dataclass(frozen=True)
class PhaseSeries:
    """One writer's phase over the rounds: its record per round, in order."""

    writer: str
    phase: str
    records: list[RunRecord]

    def values(self, name: str) -> list[float | None]:
        """The metric per round; None where the phase did not succeed (its figures are no write's)."""
        return [getattr(r, name) if r.status == "ok" else None for r in self.records]

    def rate(self, name: str) -> float | None:
        return degradation_rate(self.values(name))

    @property
    def first_failure(self) -> str:
        """The first round whose phase did not pass, with why; "-" when every one passed."""
        for record in self.records:
            if record.status == "unsupported":
                return f"unsupported: {record.error}"
            if record.verdict is None or not record.verdict.passed:
                failed = record.verdict.failed if record.verdict else []
                reason = (failed[0].reason or "") if failed else (record.error or "")
                names = ", ".join(check.name for check in failed[:3]) or record.status
                return f"round {record.round}: {names}" + (f": {_short(reason)}" if reason else "")
        return "-"

    @property
    def passed(self) -> int:
        return sum(bool(r.verdict and r.verdict.passed) for r in self.records)


def _short(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def phase_series(records: Iterable[RunRecord]) -> list[PhaseSeries]:
    """The rounds' records by writer (and library variant) and phase, in the order they first ran."""
    grouped: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for record in records:
        if record.round is not None and record.phase is not None:
            grouped[(writer_text(record), record.phase)].append(record)
    return [
        PhaseSeries(writer, phase, sorted(found, key=lambda r: r.round or 0))
        for (writer, phase), found in grouped.items()
    ]


def _rate_text(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:+.1%}"


def _span_text(found: Metric, values: list[float | None]) -> str:
    shown = [v for v in values if v is not None]
    if not shown:
        return "-"
    return f"{metric_text(found, shown[0])} → {metric_text(found, shown[-1])}"


def followed_metrics() -> list[Metric]:
    return [found for found in (metric(name) for name in ROUND_METRICS) if found is not None]


def rounds_rows(records: Iterable[RunRecord]) -> tuple[list[str], list[list[str]], set[int]]:
    """Headers, cells and numeric columns: per writer and phase, passes, each followed metric from
    the first round to the last, the degradation rates, and the first failure."""
    followed = followed_metrics()
    headers = ["writer", "phase", "passed"]
    for found in followed:
        headers.append(found.label)  # first round → last
        if found.name in RATED:
            headers.append("Δ/round")  # the degradation rate of the column before
    headers.append("first failure")
    rows = []
    for series in phase_series(records):
        row = [series.writer, series.phase, f"{series.passed}/{len(series.records)}"]
        for found in followed:
            row.append(_span_text(found, series.values(found.name)))
            if found.name in RATED:
                row.append(_rate_text(series.rate(found.name)))
        row.append(series.first_failure)
        rows.append(row)
    return headers, rows, set(range(2, len(headers) - 1))


def rounds_tables(records: Sequence[RunRecord]) -> list[Table]:
    """The rounds table for the terminal; none when no record is a round's."""
    headers, rows, numeric = rounds_rows(records)
    if not rows:
        return []
    title = "rounds: each metric from the first round to the last; Δ/round: its degradation rate"
    return [rich_table(title, headers, rows, numeric)]


COMPACT = "compact"
MAINTENANCE_HEADERS = [
    "writer", "data files", "full scan s", "selective scan s", "scan $ / read",
    "owned, last compaction skipped", "owned, at the end",
]  # fmt: skip


def maintenance_rows(records: Iterable[RunRecord]) -> tuple[list[str], list[list[str]], set[int]]:
    """Per writer whose rounds compact: its table just before the last compaction and at the end
    (files, each scan's time, a read's request dollars), and what owning it costs either way: the
    steps that made the table as it was then and `reads` full and selective scans of it. Headers,
    cells, numeric columns; no rows when no writer compacts."""
    by_writer: dict[str, list[RunRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: r.started_at):
        if record.round is not None and record.phase is not None:
            by_writer[writer_text(record)].append(record)
    rows = []
    for writer, steps in by_writer.items():
        compactions = [index for index, step in enumerate(steps) if step.phase == COMPACT]
        if not compactions or compactions[-1] == 0:
            continue
        last_compaction = compactions[-1]
        before, after = steps[last_compaction - 1], steps[-1]
        rows.append([
            writer,
            _change(before.data_files, after.data_files, str),
            _change(before.full_scan_s, after.full_scan_s, lambda v: f"{v:.2f}"),
            _change(before.selective_scan_s, after.selective_scan_s, lambda v: f"{v:.2f}"),
            _change(_read_usd(before), _read_usd(after), lambda v: f"${v:.6f}"),
            _owned_text(steps[:last_compaction], before),
            _owned_text(steps, after),
        ])  # fmt: skip
    return MAINTENANCE_HEADERS, rows, set(range(1, len(MAINTENANCE_HEADERS)))


def _change(before: Any, after: Any, text: Callable[[Any], str]) -> str:
    shown = ["-" if value is None else text(value) for value in (before, after)]
    return " → ".join(shown)


def _read_usd(record: RunRecord) -> float | None:
    """One full and one selective scan's requests at list prices."""
    return total_cost([record.full_scan_requests_usd, record.selective_scan_requests_usd], [], 0)


def owned_cost(steps: Sequence[RunRecord], table: RunRecord) -> tuple[float | None, float | None]:
    """Every step's own cost and `reads` reads of `table` (model.total_cost), in seconds and in
    request dollars; None where a step failed or a part was not measured."""
    if any(step.status != "ok" for step in steps) or table.reads is None:
        return None, None
    seconds = total_cost(
        [step.write_s for step in steps], [table.full_scan_s, table.selective_scan_s], table.reads
    )
    dollars = total_cost([step.write_requests_usd for step in steps], [_read_usd(table)], table.reads)
    return seconds, dollars


def _owned_text(steps: Sequence[RunRecord], table: RunRecord) -> str:
    seconds, dollars = owned_cost(steps, table)
    if seconds is None:
        return "-"
    price = "" if dollars is None else f", ${dollars:.4f}"
    return f"{seconds:.1f} s{price} ({table.reads} reads)"


MAINTENANCE_TITLE = "Maintenance: the table before the last compaction → at the end, and what owning it costs"
MAINTENANCE_NOTE = (
    "owned: the steps that made the table (their own time and request dollars) and N reads of it (a "
    "full and a selective scan each, --reads); last compaction skipped: every step before it and the "
    "table as they left it; at the end: every step, the last compaction and what followed included. "
    "Dollars: S3's list prices, where the stack counts requests (the full scan's: the oracle's whole "
    "read-back, an upper bound)."
)


def maintenance_tables(records: Sequence[RunRecord]) -> list[Table]:
    """The before/after compaction table for the terminal; none when no writer's rounds compact."""
    headers, rows, numeric = maintenance_rows(records)
    if not rows:
        return []
    return [rich_table(MAINTENANCE_TITLE.lower(), headers, rows, numeric)]
