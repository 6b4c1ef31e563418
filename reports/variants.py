"""Builds side by side: the same pairs run under two variants of a library axis (a branch against a
release: `--dlt 1.31.0,../dlt`), the repeats interleaved (harness/run/matrix.py).

Per pair and metric, the ratio of the medians (current / base) with the spread of the repeats'
own ratios (repeat i of one against repeat i of the other: they ran side by side), and every
change of outcome (`OOM -> pass`). `icebench gate --variants BASE,CURRENT` holds the same rows to
the gate's thresholds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.table import Table

from harness.base.caps import format_size
from harness.model import Metric, RunKey, RunRecord, metrics, run_key
from harness.model import metric as registered_metric
from reports.baseline import aggregate, of_variant, status_text, variant_labels
from reports.summary import metric_text
from reports.terminal import rich_table
from reports.verdict import outcome_of

# The figures a user deciding between two builds reads first; the gate holds every gated metric.
HEADLINE = ("peak_rss_bytes", "peak_memory_bytes", "wall_s", "write_s", "data_files", "full_scan_s")
# What a run held, whatever its end: compared across an OOM too. Every other figure (times, files,
# scans of what the table holds) only between repeats that both completed.
ALWAYS_COMPARED = ("peak_rss_bytes", "peak_memory_bytes")


@dataclass
class MetricRatio:
    metric: Metric
    base: float | None  # the median (or peak) of the base variant's repeats, as the metric folds them
    current: float | None
    ratios: list[float] = field(default_factory=list)  # repeat by repeat

    @property
    def ratio(self) -> float | None:
        if self.base is None or self.current is None or self.base == 0:
            return None
        return self.current / self.base

    def text(self) -> str:
        """`1.40x (1.31-1.52)`: the ratio of the medians, then the range of the repeats' ratios."""
        if self.ratio is None:
            return f"{metric_text(self.metric, self.base)} -> {metric_text(self.metric, self.current)}"
        spread = f" ({min(self.ratios):.2f}-{max(self.ratios):.2f})" if len(self.ratios) > 1 else ""
        return f"{self.ratio:.2f}x{spread}"


@dataclass
class VariantPair:
    key: RunKey  # without the variant
    base: list[RunRecord]
    current: list[RunRecord]
    ratios: dict[str, MetricRatio] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        """`pass`, or the change: `OOM -> pass at 849.9 MiB` (the peak rss of the passing side)."""
        before, after = (status_text([outcome_of(r) for r in side]) for side in (self.base, self.current))
        if before == after:
            return after
        peak = max((r.peak_rss_bytes or 0 for r in self.current), default=0)
        at = f" at {format_size(peak)}" if after == "pass" and peak else ""
        return f"{before} -> {after}{at}"


def variant_pairs(records: Sequence[RunRecord], base: str, current: str) -> list[VariantPair]:
    """Every pair run under both variants (whole-set runs; the scale axis has its fits)."""
    sides: list[dict[str, list[RunRecord]]] = []
    keys: dict[str, RunKey] = {}
    for label in (base, current):
        side: dict[str, list[RunRecord]] = defaultdict(list)
        for record in of_variant(records, label):
            if record.limit_rows is None and record.status != "unsupported":
                key = run_key(record)
                keys[key.text] = key
                side[key.text].append(record)
        sides.append(side)
    pairs = []
    for text in sorted(sides[0].keys() & sides[1].keys()):
        pair = VariantPair(keys[text], _by_repeat(sides[0][text]), _by_repeat(sides[1][text]))
        for metric in metrics("run"):
            if metric.compare == "ratio":
                pair.ratios[metric.name] = _ratio(metric, pair.base, pair.current)
        pairs.append(pair)
    return pairs


def _ratio(metric: Metric, base: Sequence[RunRecord], current: Sequence[RunRecord]) -> MetricRatio:
    """The metric's folded values on each side and the ratio of each repeat to its twin."""

    def values(records: Sequence[RunRecord]) -> dict[int, float]:
        kept = records if metric.name in ALWAYS_COMPARED else [r for r in records if r.status == "ok"]
        return {r.repeat: value for r in kept if (value := getattr(r, metric.name, None)) is not None}

    before, after = values(base), values(current)
    ratio = MetricRatio(metric, aggregate(metric, before.values()), aggregate(metric, after.values()))
    ratio.ratios = [
        after[repeat] / before[repeat] for repeat in before.keys() & after.keys() if before[repeat]
    ]
    return ratio


def variant_title(base: str, current: str) -> str:
    return f"{current} against {base}: current / base, and the range of the repeats' own ratios"


def variant_rows(pairs: Sequence[VariantPair]) -> tuple[list[str], list[list[str]], set[int]]:
    """Headers, rows, and which columns are figures (right-aligned)."""
    shown = [name for name in HEADLINE if any(p.ratios[name].current is not None for p in pairs)]
    headers = ["scenario", "writer", "repeats", "outcome", *(_label(name) for name in shown)]
    rows = [
        [p.key.scenario, p.key.writer, f"{len(p.base)} / {len(p.current)}", p.outcome,
         *(p.ratios[name].text() for name in shown)]
        for p in pairs
    ]  # fmt: skip
    return headers, rows, set(range(4, len(headers)))


def comparisons(records: Sequence[RunRecord]) -> list[tuple[str, str, list[VariantPair]]]:
    """(base, current, pairs): each other variant against the first that ran."""
    labels = variant_labels(records)
    return [
        (labels[0], label, pairs)
        for label in labels[1:]
        if (pairs := variant_pairs(records, labels[0], label))
    ]


def variant_tables(records: Sequence[RunRecord]) -> list[Table]:
    return [
        rich_table(variant_title(base, current), *variant_rows(pairs))
        for base, current, pairs in comparisons(records)
    ]


def _by_repeat(records: list[RunRecord]) -> list[RunRecord]:
    return sorted(records, key=lambda r: r.repeat)


def _label(name: str) -> str:
    found = registered_metric(name)
    assert found is not None, f"{name} is in HEADLINE but not in the registry"
    return found.label
