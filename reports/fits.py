"""Growth fits of the scale axis, computed from runs.jsonl: the points of one run key (less the
batch count) fitted as total write time against batch count (harness/base/growth.py)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from harness.base.growth import growth_class, growth_exponent, tail_exponent
from harness.model import RunKey, RunRecord, run_key


class Fit(BaseModel):
    key: RunKey  # the points' key without the axis
    points: list[RunRecord]  # by batch count, repeats side by side
    growth_exponent: float | None = None
    growth_class: str | None = None
    tail_exponent: float | None = None
    longest_write_s: float | None = None  # the (median) write time at the largest batch count

    @property
    def batch_counts(self) -> list[int]:
        return sorted({point_batches(p) for p in self.points})

    @property
    def writer_sources(self) -> list[str]:
        return sorted({p.writer_source for p in self.points if p.writer_source})


def point_batches(record: RunRecord) -> int:
    return run_key(record).batches or 0


def fit_of(key: RunKey, points: Iterable[RunRecord]) -> Fit:
    """Failed points are shown, never fitted; repeats of a count count by their median."""
    points = sorted(points, key=lambda p: (point_batches(p), p.repeat))
    totals: defaultdict[int, list[float]] = defaultdict(list)
    for point in points:
        if point.status == "ok" and point.write_s:
            totals[point_batches(point)].append(point.write_s)
    counts = sorted(totals)
    medians = [statistics.median(totals[count]) for count in counts]
    fit = Fit(key=key, points=points, longest_write_s=medians[-1] if medians else None)
    if len(counts) >= 2:
        fit.growth_exponent = growth_exponent(counts, medians)
        fit.growth_class = growth_class(fit.growth_exponent)
        fit.tail_exponent = tail_exponent(counts, medians)
    return fit


def fits(records: Iterable[RunRecord]) -> list[Fit]:
    """One fit per run key (less the axis) among the points of the scale axis, in order of appearance."""
    groups: dict[str, tuple[RunKey, list[RunRecord]]] = {}
    for record in records:
        if record.limit_rows is not None:
            key = run_key(record).without_axis().model_copy(update={"writer_source": None})
            groups.setdefault(key.text, (key, []))[1].append(record)
    return [fit_of(key, points) for key, points in groups.values()]
