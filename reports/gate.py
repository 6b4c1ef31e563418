"""The regression gate: thresholds applied to a comparison of current results with a baseline.

What counts as a regression: a correctness check that passed now fails; a run that was ok no
longer is (oom, error, unsupported); peak memory grew beyond a ratio; the median wall time grew
beyond a ratio; the growth exponent of a scale fit rose beyond a delta; a key of the baseline
is missing from the current results. Improvements and new keys never fail the gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.table import Table

from harness.errors import IcebenchError, first_error
from harness.settings import read_toml
from reports.baseline import Baseline, status_text
from reports.compare import METRICS, KeyComparison, change_text, compare, rich_table
from reports.summary import markdown_table

RegressionKind = Literal[
    "check_regressed", "status_regressed", "peak_memory", "wall_time", "growth_exponent", "missing"
]


class GateThresholds(BaseModel):
    """The `[gate]` table of a config file; every field is optional there."""

    model_config = ConfigDict(extra="forbid")
    peak_memory_ratio: float = Field(
        1.25,
        ge=1,
        description="fail when a run key's peak memory (max of its repeats) exceeds the baseline's "
        "by more than this ratio",
    )
    wall_time_ratio: float = Field(
        1.5,
        ge=1,
        description="fail when a run key's median wall time exceeds the baseline's by more than this ratio",
    )
    min_wall_s: float = Field(
        1.0,
        ge=0,
        description="wall-time ratios count only when the current median is at least this long: "
        "sub-second times are mostly start-up noise",
    )
    growth_exponent_delta: float = Field(
        0.3, ge=0, description="fail when a scale fit's growth exponent rose by more than this"
    )
    min_scale_write_s: float = Field(
        2.0,
        ge=0,
        description="growth exponents count only when the fit's longest write took at least this long: "
        "fits over sub-second totals are start-up noise",
    )


class GateFailed(IcebenchError):
    """Something regressed: the CLI prints one line after the table and exits 1."""

    exit_code = 1


class Regression(BaseModel):
    key: str  # run key (scenario|writer|preset|stack) or scale key (scenario|writer|preset)
    kind: RegressionKind
    subject: str  # the check, the metric, or `status` / `key`
    base: float | str | None = None
    current: float | str | None = None
    change: float | None = None  # current/base for memory and wall time, current-base for exponents
    threshold: float | None = None
    detail: str | None = None  # e.g. why the check fails now


def load_thresholds(config: Path | None) -> GateThresholds:
    """Defaults, overridden by the `[gate]` table of the config file when one is given."""
    if config is None:
        return GateThresholds()
    try:
        return GateThresholds.model_validate(read_toml(config).get("gate", {}))
    except ValidationError as exc:
        raise IcebenchError(f"config file {config}: invalid [gate] table: {first_error(exc)}") from None


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


def _ratio_regressed(
    row: KeyComparison, kind: RegressionKind, metric: str, threshold: float, floor: float = 0.0
) -> Regression | None:
    change = row.metrics[metric]
    ratio = change.ratio
    if ratio is None or change.current is None or ratio <= threshold or change.current < floor:
        return None
    return Regression(
        key=row.key,
        kind=kind,
        subject=metric,
        base=change.base,
        current=change.current,
        change=ratio,
        threshold=threshold,
    )


def _memory_metric(row: KeyComparison) -> str:
    # The kernel's peak where both sides have it; the resident peak where the isolation gave none.
    kernel = row.metrics["peak_memory_bytes"]
    return "peak_memory_bytes" if kernel.base is not None and kernel.current is not None else "peak_rss_bytes"


def _growth_regressed(row: KeyComparison, threshold: float, floor: float) -> Regression | None:
    change = row.metrics["growth_exponent"]
    delta = change.delta
    longest = row.metrics["longest_write_s"].current
    if delta is None or delta <= threshold or (longest is not None and longest < floor):
        return None
    return Regression(
        key=row.key,
        kind="growth_exponent",
        subject="growth_exponent",
        base=change.base,
        current=change.current,
        change=delta,
        threshold=threshold,
    )


def _regressions_of(row: KeyComparison, thresholds: GateThresholds) -> list[Regression]:
    if row.presence == "current only":
        return []  # new keys are not regressions
    if row.presence == "base only":
        return [Regression(key=row.key, kind="missing", subject="key", base="present", current="missing")]
    status = _status_regressed(row)
    if status is not None:
        # A run that no longer completes has no comparable numbers: its status is the regression.
        return [status, *_checks_regressed(row)]
    if row.kind == "scale":
        found = [_growth_regressed(row, thresholds.growth_exponent_delta, thresholds.min_scale_write_s)]
    else:
        found = [
            _ratio_regressed(row, "peak_memory", _memory_metric(row), thresholds.peak_memory_ratio),
            _ratio_regressed(
                row, "wall_time", "wall_s", thresholds.wall_time_ratio, floor=thresholds.min_wall_s
            ),
        ]
    return _checks_regressed(row) + [regression for regression in found if regression is not None]


def gate(baseline: Baseline, current: Baseline, thresholds: GateThresholds | None = None) -> list[Regression]:
    """Every regression of current against baseline; empty when the gate passes."""
    thresholds = thresholds or GateThresholds()
    return [
        regression for row in compare(baseline, current) for regression in _regressions_of(row, thresholds)
    ]


HEADERS = ("run key", "kind", "what", "baseline", "current", "change", "threshold", "detail")
NUMERIC_COLUMNS = range(3, 7)


def _value_text(subject: str, value: float | str | None) -> str:
    if value is None:
        return "-"
    metric = METRICS.get(subject)
    return metric.show(float(value)) if metric and not isinstance(value, str) else str(value)


def _cells(regression: Regression) -> list[str]:
    as_delta = regression.kind == "growth_exponent"
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
