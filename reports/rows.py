"""Growth in rows (`matrix --rows`): the runs of one pair at several row counts of one preset's
shape (`wide`, `wide-3M`, `wide-10M`), each metric fitted as a power law of the rows fed to the
writer. Exponent ~1: grows with the data (time should); ~0: flat (a bounded writer's memory, and
the harness's own judging memory, should be)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.markup import escape
from rich.table import Table

from harness.base.growth import growth_exponent
from harness.base.row_counts import split_at_rows
from harness.model import Metric, RunKey, RunRecord, metric, run_key
from reports.summary import metric_text
from reports.terminal import rich_table

# The writer's time and resident peak, the harness's (the oracle's judging time and peak), then
# what the table grows to: its files, manifests and metadata, and what its commits took.
ROWS_METRICS = (
    "write_s", "peak_rss_bytes", "verify_s", "oracle_peak_rss_bytes", "data_files", "manifests",
    "metadata_bytes",
)  # fmt: skip
# The run's commits together (the sum of commit_latencies_s): a figure of this axis only.
COMMIT_S = Metric(name="commit_s", label="commit s", unit="s", aggregate="median")
# The row counts each fit is carried to (docs/scale.md): projections, never measurements.
PROJECTED_ROWS = (100_000_000, 1_000_000_000)


def rows_metrics() -> list[Metric]:
    return [*(found for found in (metric(name) for name in ROWS_METRICS) if found is not None), COMMIT_S]


def _value(record: RunRecord, found: Metric) -> float | None:
    value = sum(record.commit_latencies_s) if found == COMMIT_S else getattr(record, found.name)
    return float(value) if value else None


def preset_base(name: str) -> str:
    """The preset a row count was taken of (`wide-3M`: wide); a named preset: itself."""
    at = split_at_rows(name)
    return at[0] if at else name


@dataclass(frozen=True)
class RowsFit:
    key: RunKey  # the points' key, its preset the one they share the shape of
    points: list[RunRecord]  # by rows fed, repeats side by side

    @property
    def label(self) -> str:
        variant = f" [{self.key.variant}]" if self.key.variant else ""
        return f"{self.key.writer}{variant} {self.key.scenario}"

    def medians(self, found: Metric) -> list[tuple[int, float]]:
        """(rows, the median over repeats) of each row count where the write passed."""
        at_rows: defaultdict[int, list[float]] = defaultdict(list)
        for point in self.points:
            if point.status == "ok" and point.rows and (value := _value(point, found)) is not None:
                at_rows[point.rows].append(value)
        return [(rows, statistics.median(values)) for rows, values in sorted(at_rows.items())]

    def exponent(self, found: Metric) -> float | None:
        medians = self.medians(found)
        if len({rows for rows, _ in medians}) < 2:
            return None
        return growth_exponent([rows for rows, _ in medians], [value for _, value in medians])

    def projected(self, found: Metric, rows: int) -> float | None:
        """The fit carried from the most rows measured to `rows`: value x (rows / measured)^exponent."""
        if (exponent := self.exponent(found)) is None:
            return None
        measured, value = self.medians(found)[-1]
        return value * (rows / measured) ** exponent

    def spread(self, found: Metric) -> float | None:
        """The metric at the most rows over it at the fewest (the harness's memory: within 1.1x)."""
        medians = self.medians(found)
        return medians[-1][1] / medians[0][1] if len(medians) >= 2 else None


def rows_fits(records: Iterable[RunRecord]) -> list[RowsFit]:
    """One fit per pair among the matrix's own runs whose preset was taken at two or more row
    counts, in order of appearance (the scale axis' points, rounds and steps are not on it)."""
    groups: dict[str, tuple[RunKey, list[RunRecord]]] = {}
    for record in records:
        if record.limit_rows is not None or record.round is not None or record.phase or record.cap_probe:
            continue
        key = run_key(record).model_copy(update={"preset": preset_base(record.preset), "writer_source": None})
        groups.setdefault(key.text, (key, []))[1].append(record)
    return [
        RowsFit(key, sorted(points, key=lambda p: (p.rows or 0, p.repeat)))
        for key, points in groups.values()
        if len({point.preset for point in points}) >= 2
    ]


def rows_title(fit: RowsFit) -> str:
    key = fit.key
    variant = f" [{key.variant}]" if key.variant else ""
    exponents = ", ".join(
        f"{found.label} n^{exponent:.2f}"
        for found in rows_metrics()
        if (exponent := fit.exponent(found)) is not None
    )
    title = f"rows {key.writer}{variant} / {key.scenario} / {key.preset} shape, {key.setup}"
    return f"{title}; {exponents}" if exponents else title


def rows_rows(fit: RowsFit) -> tuple[list[str], list[list[str]], set[int]]:
    """Each point (rows fed, status, the metrics), then each metric's exponent in rows."""
    shown = rows_metrics()
    headers = ["rows", "preset", "status", *(found.label for found in shown)]
    rows = [
        [
            f"{point.rows:,}" if point.rows else "-",
            point.preset,
            point.status,
            *(metric_text(found, _value(point, found)) for found in shown),
        ]
        for point in fit.points
    ]
    exponents = [fit.exponent(found) for found in shown]
    rows.append(["exponent", "", "", *("-" if e is None else f"{e:.2f}" for e in exponents)])
    for count in PROJECTED_ROWS:
        projected = (metric_text(found, fit.projected(found, count)) for found in shown)
        rows.append([f"{count:,}", "projected", "", *projected])
    return headers, rows, {0, *range(3, 3 + len(shown))}


def rows_tables(records: Sequence[RunRecord]) -> list[Table]:
    return [
        rich_table(escape(rows_title(fit)).replace("; ", "\n"), *rows_rows(fit)) for fit in rows_fits(records)
    ]


ROWS_NOTE = (
    "Each pair on one preset's shape at several row counts (matrix --rows), batches of the same "
    "size: each metric against the rows fed, fitted as a power law. Exponent 1: it grows with the "
    "data (time should); 0: flat (a bounded writer's memory, and the oracle's, should be). The "
    "rows marked projected carry each fit from the most rows measured to 100M and 1B rows: what the "
    "exponents predict, not what ran."
)
