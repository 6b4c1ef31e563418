"""Two baselines side by side: per run key and metric, base -> current and their ratio.

Ratios rather than differences, so one threshold fits a 2 s run and a 200 s one alike; the
gate (`reports/gate.py`) applies its thresholds to these rows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel
from rich.table import Table

from harness.caps import format_size
from reports.baseline import KEY_SEPARATOR, Baseline, RunAggregate, ScaleAggregate, status_text
from reports.summary import count_text, markdown_table, number_text

Presence = Literal["both", "base only", "current only"]
Kind = Literal["run", "scale"]
KINDS: tuple[Kind, ...] = ("run", "scale")
# Highlighted in the table only; the gate's own thresholds decide what fails.
NOTABLE_RATIO = 1.10
NOTABLE_DELTA = 0.05


def _size(value: float | None) -> str:
    return format_size(None if value is None else int(value))


def _whole(value: float | None) -> str:
    return count_text(None if value is None else int(value))


@dataclass(frozen=True)
class Metric:
    name: str  # field of the aggregate
    header: str
    show: Callable[[float | None], str]
    as_delta: bool = False  # exponents compare by difference: a ratio of slopes means little


RUN_METRICS = (
    Metric("wall_s", "wall s (median)", number_text),
    Metric("write_s", "write s (median)", number_text),
    Metric("peak_memory_bytes", "peak mem", _size),
    Metric("peak_rss_bytes", "peak rss", _size),
    Metric("snapshots_added", "snapshots", _whole),
    Metric("data_files", "data files", _whole),
    Metric("metadata_files", "metadata files", _whole),
    Metric("metadata_bytes", "metadata bytes", _size),
)
SCALE_METRICS = (
    Metric("growth_exponent", "growth exponent", number_text, as_delta=True),
    Metric("tail_exponent", "tail exponent", number_text, as_delta=True),
    Metric("longest_write_s", "longest write s", number_text),
)
METRICS = {metric.name: metric for metric in RUN_METRICS + SCALE_METRICS}


class MetricChange(BaseModel):
    metric: str
    base: float | None
    current: float | None

    @property
    def ratio(self) -> float | None:
        """current / base; None when either side has no value, or base is 0 and current is not."""
        if self.base is None or self.current is None:
            return None
        if self.base == 0:
            return 1.0 if self.current == 0 else None
        return self.current / self.base

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.current is None else self.current - self.base


class KeyComparison(BaseModel):
    """One run key (or scale key) of either side."""

    key: str
    kind: Kind
    presence: Presence
    base_statuses: list[str] = []
    current_statuses: list[str] = []
    metrics: dict[str, MetricChange] = {}
    checks_now_failing: dict[str, str | None] = {}  # passed in every base repeat -> reason it fails now
    checks_now_passing: list[str] = []


def _compare_key(
    key: str,
    kind: Kind,
    base: RunAggregate | ScaleAggregate | None,
    current: RunAggregate | ScaleAggregate | None,
    metrics: Sequence[Metric],
) -> KeyComparison:
    presence: Presence = "current only" if base is None else "base only" if current is None else "both"
    return KeyComparison(
        key=key,
        kind=kind,
        presence=presence,
        base_statuses=list(base.statuses) if base is not None else [],
        current_statuses=list(current.statuses) if current is not None else [],
        metrics={
            # getattr's default covers the side that lacks the key.
            m.name: MetricChange(
                metric=m.name, base=getattr(base, m.name, None), current=getattr(current, m.name, None)
            )
            for m in metrics
        },
    )


def _compare_runs(key: str, base: RunAggregate | None, current: RunAggregate | None) -> KeyComparison:
    comparison = _compare_key(key, "run", base, current, RUN_METRICS)
    if base is not None and current is not None:
        comparison.checks_now_failing = {
            name: reason for name, reason in current.checks_failed.items() if name in base.checks_passed
        }
        comparison.checks_now_passing = [name for name in current.checks_passed if name in base.checks_failed]
    return comparison


def compare(base: Baseline, current: Baseline) -> list[KeyComparison]:
    """Every run key, then every scale key, of either side, sorted."""
    rows = [
        _compare_runs(key, base.runs.get(key), current.runs.get(key))
        for key in sorted(base.runs.keys() | current.runs.keys())
    ]
    rows += [
        _compare_key(key, "scale", base.scales.get(key), current.scales.get(key), SCALE_METRICS)
        for key in sorted(base.scales.keys() | current.scales.keys())
    ]
    return rows


def change_text(change: float | None, as_delta: bool) -> str:
    if change is None:
        return "-"
    return f"{change:+.2f}" if as_delta else f"{change:.2f}x"


def _metric_cell(metric: Metric, change: MetricChange, markup: bool) -> str:
    """`base → current (ratio)`; in the terminal the ratio goes on a line of its own, to fit."""
    if change.base is None and change.current is None:
        return "-"
    values = f"{metric.show(change.base)} → {metric.show(change.current)}"
    amount = change.delta if metric.as_delta else change.ratio
    if amount is None:
        return values
    text = change_text(amount, metric.as_delta)
    if not markup:
        return f"{values} ({text})"
    worse = amount > NOTABLE_DELTA if metric.as_delta else amount >= NOTABLE_RATIO
    better = amount < -NOTABLE_DELTA if metric.as_delta else amount <= 1 / NOTABLE_RATIO
    if worse or better:
        text = f"[{'red' if worse else 'green'}]{text}[/]"
    return f"{values}\n{text}"


def _status_cell(row: KeyComparison) -> str:
    if row.presence != "both":
        return row.presence
    base, current = status_text(row.base_statuses), status_text(row.current_statuses)
    return base if base == current else f"{base} → {current}"


def _checks_cell(row: KeyComparison, markup: bool) -> str:
    parts = []
    for label, style, names in (
        ("now failing", "red", list(row.checks_now_failing)),
        ("now passing", "green", row.checks_now_passing),
    ):
        if names:
            parts.append((f"[{style}]{label}[/]" if markup else label) + " " + ", ".join(names))
    return "; ".join(parts) or "-"


def _key_headers(kind: Kind) -> list[str]:
    return ["scenario", "writer", "preset"] + (["stack"] if kind == "run" else [])


def _key_cells(key: str, kind: Kind) -> list[str]:
    """The key's parts under their headers; a library variant (a last, extra part) joins the writer."""
    parts = key.split(KEY_SEPARATOR)
    width = len(_key_headers(kind))
    if len(parts) > width:
        parts[1] = f"{parts[1]} [{parts[width]}]"
    return parts[:width]


def _table_rows(rows: Sequence[KeyComparison], kind: Kind, markup: bool) -> list[list[str]]:
    metrics = RUN_METRICS if kind == "run" else SCALE_METRICS
    cells = []
    for row in (r for r in rows if r.kind == kind):
        line = [*_key_cells(row.key, kind), _status_cell(row)]
        line += [_metric_cell(m, row.metrics[m.name], markup) for m in metrics]
        if kind == "run":
            line.append(_checks_cell(row, markup))
        cells.append(line)
    return cells


def _headers(kind: Kind) -> list[str]:
    metrics = RUN_METRICS if kind == "run" else SCALE_METRICS
    checks = ["checks"] if kind == "run" else []
    return [*_key_headers(kind), "status", *(m.header for m in metrics), *checks]


def rich_table(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Collection[int]
) -> Table:
    """A table whose `numeric` columns (by index) are right-aligned; the text columns before them
    name the row and are never wrapped, so a narrow terminal squeezes the numbers instead."""
    table = Table(title=title, header_style="bold")
    first_numeric = min(numeric, default=len(headers))
    for index, header in enumerate(headers):
        table.add_column(
            header, justify="right" if index in numeric else "left", no_wrap=index < first_numeric
        )
    for row in rows:
        table.add_row(*row)
    return table


def _numeric_columns(kind: Kind) -> range:
    metrics = RUN_METRICS if kind == "run" else SCALE_METRICS
    first = len(_key_headers(kind)) + 1  # after the key and the status
    return range(first, first + len(metrics))


def comparison_tables(rows: Sequence[KeyComparison], title: str = "compare") -> list[Table]:
    """One table of run keys and, when either side has scale fits, one of those."""
    tables = []
    for kind in KINDS:
        cells = _table_rows(rows, kind, markup=True)
        if cells or kind == "run":
            caption = f"{title}: runs (base → current, ratio)" if kind == "run" else f"{title}: scale fits"
            tables.append(rich_table(caption, _headers(kind), cells, _numeric_columns(kind)))
    return tables


def comparison_markdown(rows: Sequence[KeyComparison]) -> str:
    parts = []
    for kind in KINDS:
        cells = _table_rows(rows, kind, markup=False)
        if cells or kind == "run":
            parts.append(markdown_table(_headers(kind), cells, _numeric_columns(kind)))
    return "\n\n".join(parts)


def version_changes(base: Baseline, current: Baseline) -> list[str]:
    """`library base -> current` for every library whose version differs."""
    return [
        f"{library} {base.versions.get(library, '-')} → {current.versions.get(library, '-')}"
        for library in sorted(base.versions.keys() | current.versions.keys())
        if base.versions.get(library) != current.versions.get(library)
    ]
