"""Two baselines side by side: per run key and metric, base -> current and their ratio (or
difference, for the metrics of the registry that compare so).

Ratios rather than differences, so one threshold fits a 2 s run and a 200 s one alike; the
gate (`reports/gate.py`) applies its thresholds to these rows. A key whose writer module changed
between the two sides (another source hash) is not compared at all: its numbers measure other code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel
from rich.table import Table

from harness.model import Metric, RunKey, metrics
from reports.baseline import Aggregate, Baseline, RunAggregate, status_text
from reports.summary import markdown_table, metric_text
from reports.terminal import rich_table

Presence = Literal["both", "base only", "current only", "not comparable"]
Kind = Literal["run", "scale"]
KINDS: tuple[Kind, ...] = ("run", "scale")
NOT_COMPARABLE = "not comparable (writer changed)"
# Highlighted in the table only; the gate's own thresholds decide what fails.
NOTABLE_RATIO = 1.10
NOTABLE_DELTA = 0.05


def kind_metrics(kind: Kind) -> list[Metric]:
    return metrics("run" if kind == "run" else "fit")


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

    def change(self, metric: Metric) -> float | None:
        return self.ratio if metric.compare == "ratio" else self.delta


class KeyComparison(BaseModel):
    """One run key (or fit key) of either side."""

    key: str
    run_key: RunKey
    kind: Kind
    presence: Presence
    base_statuses: list[str] = []
    current_statuses: list[str] = []
    base_sources: list[str] = []  # writer source hashes
    current_sources: list[str] = []
    metrics: dict[str, MetricChange] = {}
    checks_now_failing: dict[str, str | None] = {}  # passed in every base repeat -> reason it fails now
    checks_now_passing: list[str] = []


def _writer_changed(base: Aggregate, current: Aggregate) -> bool:
    # Runs recorded before the hash existed have none: unknown is no change.
    return (
        bool(base.writer_sources and current.writer_sources) and base.writer_sources != current.writer_sources
    )


def _compare_key(key: str, kind: Kind, base: Aggregate | None, current: Aggregate | None) -> KeyComparison:
    either = base if base is not None else current
    assert either is not None  # a key comes from one side at least
    presence: Presence = "current only" if base is None else "base only" if current is None else "both"
    if base is not None and current is not None and _writer_changed(base, current):
        presence = "not comparable"
    row = KeyComparison(
        key=key,
        run_key=either.key,
        kind=kind,
        presence=presence,
        base_statuses=list(base.statuses) if base is not None else [],
        current_statuses=list(current.statuses) if current is not None else [],
        base_sources=base.writer_sources if base is not None else [],
        current_sources=current.writer_sources if current is not None else [],
    )
    if presence == "not comparable":
        return row
    row.metrics = {
        m.name: MetricChange(
            metric=m.name,
            base=base.value(m.name) if base is not None else None,
            current=current.value(m.name) if current is not None else None,
        )
        for m in kind_metrics(kind)
    }
    if isinstance(base, RunAggregate) and isinstance(current, RunAggregate):
        row.checks_now_failing = {
            name: reason for name, reason in current.checks_failed.items() if name in base.checks_passed
        }
        row.checks_now_passing = [name for name in current.checks_passed if name in base.checks_failed]
    return row


def compare(base: Baseline, current: Baseline) -> list[KeyComparison]:
    """Every run key, then every fit key, of either side, sorted."""
    rows = [
        _compare_key(key, "run", base.runs.get(key), current.runs.get(key))
        for key in sorted(base.runs.keys() | current.runs.keys())
    ]
    rows += [
        _compare_key(key, "scale", base.scales.get(key), current.scales.get(key))
        for key in sorted(base.scales.keys() | current.scales.keys())
    ]
    return rows


def not_comparable(rows: Sequence[KeyComparison]) -> list[KeyComparison]:
    return [row for row in rows if row.presence == "not comparable"]


def change_text(change: float | None, as_delta: bool) -> str:
    if change is None:
        return "-"
    return f"{change:+.2f}" if as_delta else f"{change:.2f}x"


def _metric_cell(metric: Metric, change: MetricChange | None, markup: bool) -> str:
    """`base → current (ratio)`; in the terminal the ratio goes on a line of its own, to fit."""
    if change is None or (change.base is None and change.current is None):
        return "-"
    values = f"{metric_text(metric, change.base)} → {metric_text(metric, change.current)}"
    amount = change.change(metric)
    if amount is None:
        return values
    as_delta = metric.compare == "delta"
    text = change_text(amount, as_delta)
    if not markup:
        return f"{values} ({text})"
    notable = NOTABLE_DELTA if as_delta else NOTABLE_RATIO
    # Better by as much is worse for a metric that should go the other way.
    worse = metric.worse(amount, notable)
    better = metric.model_copy(update={"better": "higher" if metric.better == "lower" else "lower"}).worse(
        amount, notable
    )
    if worse or better:
        text = f"[{'red' if worse else 'green'}]{text}[/]"
    return f"{values}\n{text}"


def _status_cell(row: KeyComparison) -> str:
    if row.presence == "not comparable":
        return NOT_COMPARABLE
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


class Layout(BaseModel):
    """The columns of one kind's table: the setup column only when the keys' setups differ (else
    it is the caption's), metric columns only where some row has a value."""

    kind: Kind
    setup: str | None  # shared by every row: said once, in the caption
    metrics: list[Metric]

    @property
    def key_headers(self) -> list[str]:
        return ["scenario", "writer", "preset", "stack"] + (["setup"] if self.setup is None else [])

    @property
    def headers(self) -> list[str]:
        checks = ["checks"] if self.kind == "run" else []
        return [*self.key_headers, "status", *(m.label for m in self.metrics), *checks]

    @property
    def numeric(self) -> range:
        first = len(self.key_headers) + 1  # after the key and the status
        return range(first, first + len(self.metrics))

    def caption(self, title: str) -> str:
        what = "runs (base → current, change)" if self.kind == "run" else "scale fits"
        return f"{title}: {what}" + (f", {self.setup}" if self.setup else "")


def _layout(rows: Sequence[KeyComparison], kind: Kind) -> Layout:
    setups = {row.run_key.setup for row in rows}
    shown = [
        m
        for m in kind_metrics(kind)
        if any(_metric_cell(m, row.metrics.get(m.name), markup=False) != "-" for row in rows)
    ]
    return Layout(kind=kind, setup=setups.pop() if len(setups) == 1 else None, metrics=shown)


def _key_cells(key: RunKey, layout: Layout) -> list[str]:
    writer = f"{key.writer} [{key.variant}]" if key.variant else key.writer
    return [key.scenario, writer, key.preset, key.stack] + ([key.setup] if layout.setup is None else [])


def _table_rows(rows: Sequence[KeyComparison], layout: Layout, markup: bool) -> list[list[str]]:
    cells = []
    for row in rows:
        line = [*_key_cells(row.run_key, layout), _status_cell(row)]
        line += [_metric_cell(m, row.metrics.get(m.name), markup) for m in layout.metrics]
        if layout.kind == "run":
            line.append(_checks_cell(row, markup))
        cells.append(line)
    return cells


def _tables(rows: Sequence[KeyComparison]) -> list[tuple[Layout, list[KeyComparison]]]:
    """The run table always, the fit table when either side has fits."""
    found = []
    for kind in KINDS:
        of_kind = [row for row in rows if row.kind == kind]
        if of_kind or kind == "run":
            found.append((_layout(of_kind, kind), of_kind))
    return found


def comparison_tables(rows: Sequence[KeyComparison], title: str = "compare") -> list[Table]:
    return [
        rich_table(
            layout.caption(title),
            layout.headers,
            _table_rows(of_kind, layout, True),
            layout.numeric,
            markup=True,
            # Narrow: what changed (the checks, then the metrics in the registry's order) before
            # the parts of the key every row likely shares.
            keep=["scenario", "writer", "status", "checks", *(m.label for m in layout.metrics), "preset"],
        )
        for layout, of_kind in _tables(rows)
    ]


def comparison_markdown(rows: Sequence[KeyComparison], title: str = "compare") -> str:
    return "\n\n".join(
        f"{layout.caption(title)}\n\n"
        + markdown_table(layout.headers, _table_rows(of_kind, layout, False), layout.numeric)
        for layout, of_kind in _tables(rows)
    )


# What sets two sides' keys apart when none is shared: the parts a user picks on the command line.
KEY_PARTS = ("scenario", "writer", "preset", "stack", "isolation", "cap_bytes", "batch_rows")


def nothing_shared(rows: Sequence[KeyComparison]) -> str | None:
    """Why `compare` shows no ratio at all: no key on both sides, and the key parts whose values
    the two sides share none of (e.g. `preset tiny vs small`). None when something was compared."""
    if not rows or any(row.presence in ("both", "not comparable") for row in rows):
        return None
    sides = {
        side: [row.run_key for row in rows if row.presence == side] for side in ("base only", "current only")
    }
    apart = []
    for part in KEY_PARTS:
        base, current = ({str(getattr(key, part)) for key in keys} for keys in sides.values())
        if base and current and not base & current:
            apart.append(f"{part} {', '.join(sorted(base))} vs {', '.join(sorted(current))}")
    counts = f"{len(sides['base only'])} keys only in base, {len(sides['current only'])} only in current"
    return f"nothing in common to compare ({counts})" + (f": {'; '.join(apart)}" if apart else "")


def version_changes(base: Baseline, current: Baseline) -> list[str]:
    """`library base -> current` for every library whose version differs."""
    return [
        f"{library} {base.versions.get(library, '-')} → {current.versions.get(library, '-')}"
        for library in sorted(base.versions.keys() | current.versions.keys())
        if base.versions.get(library) != current.versions.get(library)
    ]
