"""The regression gate: thresholds applied to a comparison of current results with a baseline.

What counts as a regression: a correctness check that passed now fails; a run that was ok no
longer is (oom, error, unsupported); a metric the registry gates (harness/model.py METRICS: peak
memory, wall time, manifests, orphan files, a fit's growth exponent) got worse beyond its
threshold; a key of the baseline is missing from the current results. Improvements and new keys
never fail the gate; keys whose writer module changed are listed as not comparable, never failed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError
from rich.table import Table

from harness.base.errors import IcebenchError
from harness.base.settings import read_table
from harness.model import Metric, metric, metrics
from reports.baseline import Baseline, status_text
from reports.compare import KeyComparison, change_text, compare, kind_metrics
from reports.summary import markdown_table, metric_text
from reports.terminal import rich_table


def threshold_defaults() -> dict[str, float]:
    """Every key of the [gate] table and its default: the limit of each gated metric, and its floor."""
    defaults: dict[str, float] = {}
    for m in _gated():
        assert m.gate is not None and m.threshold is not None
        defaults[m.threshold] = m.gate.limit
        if m.gate.floor is not None:
            defaults[m.gate.floor.name] = m.gate.floor.value
    return defaults


def _gated() -> list[Metric]:
    return [m for m in metrics("run") + metrics("fit") if m.gate is not None]


class GateThresholds(BaseModel):
    """The `[gate]` table of a config file; every key is optional there. Its keys come from the
    metric registry: `<kind>_ratio` or `<kind>_delta` per gated metric, and their floors
    (`min_wall_s`, ...)."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _known_and_filled(cls, data: Any) -> dict[str, float]:
        defaults = threshold_defaults()
        given = dict(data) if isinstance(data, dict) else {}
        for name, value in given.items():
            if name not in defaults:
                raise PydanticCustomError(
                    "unknown_threshold", f"{name}: no such threshold; known: {', '.join(defaults)}"
                )
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise PydanticCustomError("threshold", f"{name}: a number of at least 0 (got {value!r})")
            if name.endswith("_ratio") and value < 1:
                raise PydanticCustomError("threshold", f"{name}: a ratio of at least 1 (got {value!r})")
        return {**defaults, **{name: float(value) for name, value in given.items()}}

    def limit(self, name: str) -> float:
        return float((self.model_extra or {})[name])


class GateFailed(IcebenchError):
    """Something regressed: the CLI prints one line after the table and exits 1."""

    exit_code = 1


class Regression(BaseModel):
    key: str  # run key, or fit key (the run key less the batch axis)
    kind: str  # check_regressed, status_regressed, missing, or a gated metric's kind (wall_time, ...)
    subject: str  # the check, the metric, or `status` / `key`
    base: float | str | None = None
    current: float | str | None = None
    change: float | None = None  # current/base, or current-base for the metrics compared so
    threshold: float | None = None
    detail: str | None = None  # e.g. why the check fails now


def load_thresholds(config: Path | None) -> GateThresholds:
    """Defaults, overridden by the `[gate]` table of the config file when one is given."""
    return read_table(config, "gate", GateThresholds)


def _status_regressed(row: KeyComparison) -> Regression | None:
    was_ok = bool(row.base_statuses) and all(status == "ok" for status in row.base_statuses)
    if not was_ok or all(status == "ok" for status in row.current_statuses):
        return None
    return Regression(
        key=row.key,
        kind="status_regressed",
        subject="status",
        base="ok",
        current=status_text(row.current_statuses),
    )


def _checks_regressed(row: KeyComparison) -> list[Regression]:
    return [
        Regression(
            key=row.key, kind="check_regressed", subject=name, base="passed", current="failed", detail=reason
        )
        for name, reason in row.checks_now_failing.items()
    ]


def _metric_regressed(row: KeyComparison, gated: Metric, thresholds: GateThresholds) -> Regression | None:
    assert gated.gate is not None and gated.threshold is not None
    subject = gated.name
    own = row.metrics.get(subject)
    # E.g. the kernel's peak where both sides have it; the resident peak where the isolation gave none.
    if gated.gate.fallback and (own is None or own.base is None or own.current is None):
        subject = gated.gate.fallback
    change = row.metrics.get(subject)
    amount = change.change(gated) if change is not None else None
    limit = thresholds.limit(gated.threshold)
    if change is None or amount is None or not gated.worse(amount, limit):
        return None
    floor = gated.gate.floor
    if floor is not None:
        reached = row.metrics.get(floor.metric)
        if (
            reached is not None
            and reached.current is not None
            and reached.current < thresholds.limit(floor.name)
        ):
            return None
    return Regression(
        key=row.key,
        kind=gated.gate.kind,
        subject=subject,
        base=change.base,
        current=change.current,
        change=amount,
        threshold=limit,
    )


def _regressions_of(row: KeyComparison, thresholds: GateThresholds) -> list[Regression]:
    if row.presence in ("current only", "not comparable"):
        return []  # new keys are not regressions; a changed writer is listed, not judged
    if row.presence == "base only":
        return [Regression(key=row.key, kind="missing", subject="key", base="present", current="missing")]
    status = _status_regressed(row)
    if status is not None:
        # A run that no longer completes has no comparable numbers: its status is the regression.
        return [status, *_checks_regressed(row)]
    found = [_metric_regressed(row, m, thresholds) for m in kind_metrics(row.kind) if m.gate is not None]
    return _checks_regressed(row) + [regression for regression in found if regression is not None]


def require_compared(rows: Sequence[KeyComparison]) -> None:
    """A gate that compared no key would pass whatever the results hold: that is a failure too."""
    if any(row.presence == "both" for row in rows):
        return
    counts = Counter(row.presence for row in rows)
    found = ", ".join(f"{count} {presence}" for presence, count in sorted(counts.items())) or "no keys"
    raise GateFailed(
        f"gate compared nothing: no run key is in both the baseline and the results with the same "
        f"writer source ({found}); re-record the baseline (make gate-baseline)"
    )


def regressions(rows: Sequence[KeyComparison], thresholds: GateThresholds | None = None) -> list[Regression]:
    """Every regression among compared rows; empty when the gate passes."""
    thresholds = thresholds or GateThresholds()
    return [regression for row in rows for regression in _regressions_of(row, thresholds)]


def gate(baseline: Baseline, current: Baseline, thresholds: GateThresholds | None = None) -> list[Regression]:
    """Every regression of current against baseline; empty when the gate passes."""
    return regressions(compare(baseline, current), thresholds)


HEADERS = ("run key", "kind", "what", "baseline", "current", "change", "threshold", "detail")
NUMERIC_COLUMNS = range(3, 7)


def _value_text(subject: str, value: float | str | None) -> str:
    if value is None:
        return "-"
    known = metric(subject)
    return metric_text(known, float(value)) if known and not isinstance(value, str) else str(value)


def _cells(regression: Regression) -> list[str]:
    known = metric(regression.subject)
    as_delta = known is not None and known.compare == "delta"
    return [
        regression.key,
        regression.kind,
        regression.subject,
        _value_text(regression.subject, regression.base),
        _value_text(regression.subject, regression.current),
        change_text(regression.change, as_delta),
        change_text(regression.threshold, as_delta),
        regression.detail or "",
    ]


def regressions_table(regressions: Sequence[Regression], title: str = "regressions") -> Table:
    return rich_table(title, HEADERS, [_cells(r) for r in regressions], NUMERIC_COLUMNS)


def regressions_markdown(regressions: Sequence[Regression]) -> str:
    return markdown_table(HEADERS, [_cells(r) for r in regressions], NUMERIC_COLUMNS)
