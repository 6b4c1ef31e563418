"""The regression gate: thresholds applied to a comparison of current results with a baseline.

What counts as a regression: a correctness check that passed now fails; a run that was ok no
longer is (oom, error, unsupported); a metric the registry gates (harness/model/__init__.py METRICS: peak
memory, wall time, manifests, orphan files, a fit's growth exponent) got worse beyond its
threshold; a key of the baseline is missing from the current results. A time's ratio is divided by
the machine's (`MachineFactor`: the calibration workload's, timed beside the runs on each side), so a
slower or busier machine is not a regression. Improvements and new keys never fail the gate; keys
whose writer module changed are listed as not comparable, never failed. A gate that passed says what
it held (`passed_text`): what it compared, each threshold in use and the figure that came closest to it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError
from rich.table import Table

from harness.base.config_file import read_table
from harness.base.errors import IcebenchError
from harness.base.reasons import counted
from harness.model import MachineSpeed, Metric, metric, metrics
from reports.baseline import Baseline, status_text
from reports.compare import NOT_COMPARABLE, KeyComparison, change_text, compare, kind_metrics
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
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise PydanticCustomError("threshold", f"{name}: a finite number >= 0 (got {value!r})")
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


@dataclass(frozen=True)
class MachineFactor:
    """How much longer the calibration workload took now than beside the baseline's runs, per clock
    (2.0: the machine ran it at half the speed). A time's ratio divided by it is the code's change."""

    base: MachineSpeed
    current: MachineSpeed

    @classmethod
    def of(cls, base: MachineSpeed | None, current: MachineSpeed | None) -> MachineFactor | None:
        return None if base is None or current is None else cls(base, current)

    def on(self, clock: Literal["cpu", "wall"]) -> float:
        if clock == "cpu":
            return self.current.cpu_s / self.base.cpu_s
        return self.current.wall_s / self.base.wall_s

    @property
    def text(self) -> str:
        """`machine 1.45x cpu, 1.52x wall (calibration 2.05 s cpu now, 1.41 s in the baseline)`."""
        return (
            f"machine {self.on('cpu'):.2f}x cpu, {self.on('wall'):.2f}x wall (calibration "
            f"{self.current.cpu_s:.2f} s cpu now, {self.base.cpu_s:.2f} s in the baseline)"
        )


def machine_text(machine: MachineFactor | None) -> str:
    """What the gate did with the machine's speed, for the CLI to say."""
    if machine is not None:
        return f"{machine.text}: time ratios are divided by it"
    return (
        "machine: no calibration on one side (results or baseline made before it), time ratios compared "
        "as measured"
    )


@dataclass(frozen=True)
class Held:
    """One gated figure of one key, as the gate held it: the change against the threshold's limit,
    or under its floor (the current value of the floor's metric too small to mean anything)."""

    key: str
    metric: Metric  # the gated metric: its threshold and how it compares
    change: float  # current / base, or current - base; a time's ratio divided by the machine's
    limit: float
    floored: bool
    measured: float | None = None  # a time's ratio as measured, before the machine's was taken out

    @property
    def regressed(self) -> bool:
        return not self.floored and self.metric.worse(self.change, self.limit)

    @property
    def has_room(self) -> bool:
        """Whether the threshold lets the figure get any worse at all."""
        return self.limit > (1 if self.metric.compare == "ratio" else 0)

    @property
    def used(self) -> float:
        """How much of the room the threshold allows the change took: 0 no worse than the
        baseline (or better), 1 at the limit; a limit of no room (`manifests_delta = 0`) is 1 when
        the figure held and 0 when it improved. Ratios are compared on a log scale (1.5x of 2x:
        0.58), as the gate's ratios are."""
        if self.metric.compare == "ratio":
            worse, room = math.log(max(self.change, 1e-12)), math.log(self.limit)
        else:
            worse, room = self.change, self.limit
        worse = worse if self.metric.better == "lower" else -worse
        if worse < 0:
            return 0.0
        return worse / room if room > 0 else 1.0


def _held(
    row: KeyComparison, gated: Metric, thresholds: GateThresholds, machine: MachineFactor | None
) -> Held | None:
    """The gated figure of `gated` for the key; None when a side has no value to compare."""
    assert gated.gate is not None and gated.threshold is not None
    change = row.metrics.get(gated.name)
    amount = change.change(gated) if change is not None else None
    if amount is None:
        return None
    measured = None
    if machine is not None and gated.gate.clock is not None and gated.compare == "ratio":
        measured, amount = amount, amount / machine.on(gated.gate.clock)
    floor = gated.gate.floor
    reached = row.metrics.get(floor.metric) if floor is not None else None
    floored = (
        floor is not None
        and reached is not None
        and reached.current is not None
        and reached.current < thresholds.limit(floor.name)
    )
    return Held(row.key, gated, amount, thresholds.limit(gated.threshold), floored, measured)


def _metric_regressed(
    row: KeyComparison, gated: Metric, thresholds: GateThresholds, machine: MachineFactor | None
) -> Regression | None:
    held = _held(row, gated, thresholds, machine)
    if held is None or not held.regressed:
        return None
    assert gated.gate is not None
    change = row.metrics[gated.name]
    return Regression(
        key=row.key,
        kind=gated.gate.kind,
        subject=gated.name,
        base=change.base,
        current=change.current,
        change=held.change,
        threshold=held.limit,
        detail=None
        if held.measured is None
        else f"{held.measured:.2f}x as measured, the machine's {held.measured / held.change:.2f}x taken out",
    )


def _regressions_of(
    row: KeyComparison, thresholds: GateThresholds, machine: MachineFactor | None
) -> list[Regression]:
    if row.presence in ("current only", "not comparable"):
        return []  # new keys are not regressions; a changed writer is listed, not judged
    if row.presence == "base only":
        return [Regression(key=row.key, kind="missing", subject="key", base="present", current="missing")]
    status = _status_regressed(row)
    if status is not None:
        # A run that no longer completes has no comparable numbers: its status is the regression.
        return [status, *_checks_regressed(row)]
    found = [
        _metric_regressed(row, m, thresholds, machine) for m in kind_metrics(row.kind) if m.gate is not None
    ]
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


def regressions(
    rows: Sequence[KeyComparison],
    thresholds: GateThresholds | None = None,
    machine: MachineFactor | None = None,
) -> list[Regression]:
    """Every regression among compared rows; empty when the gate passes."""
    thresholds = thresholds or GateThresholds()
    return [regression for row in rows for regression in _regressions_of(row, thresholds, machine)]


def gate(baseline: Baseline, current: Baseline, thresholds: GateThresholds | None = None) -> list[Regression]:
    """Every regression of current against baseline, times against the machine's; empty when it passes."""
    machine = MachineFactor.of(baseline.machine, current.machine)
    return regressions(compare(baseline, current), thresholds, machine)


def passed_text(
    rows: Sequence[KeyComparison],
    thresholds: GateThresholds,
    against: str,
    machine: MachineFactor | None = None,
) -> str:
    """What a gate that passed held, for the CLI to print: the keys and runs compared, how many
    figures were gated (and how many sat under a floor), each threshold in use (a config's value
    with the default it replaced) with the figure that came closest to it, and the closest margin
    of all, so that a pass near its limit is seen before it fails."""
    compared = [row for row in rows if row.presence == "both"]
    run_rows = [row for row in compared if row.kind == "run"]
    held = [
        found
        for row in compared
        for gated in kind_metrics(row.kind)
        if gated.gate is not None and (found := _held(row, gated, thresholds, machine)) is not None
    ]
    gated = [one for one in held if not one.floored]
    runs = sum(len(row.current_statuses) for row in run_rows)
    base_runs = sum(len(row.base_statuses) for row in run_rows)
    fits = counted(len(compared) - len(run_rows), "scale fit")
    lines = [
        f"gate passed: {against}, no regressions",
        f"  compared {counted(len(run_rows), 'run key')} ({runs} runs now, {base_runs} in the baseline) "
        f"and {fits}: statuses, correctness checks and {counted(len(gated), 'gated figure')} "
        f"({len(held) - len(gated)} more under their floors, not gated)",
    ]
    presence = Counter(row.presence for row in rows)
    aside = [
        f"{counted(presence[kind], 'key')} {what}"
        for kind, what in (("current only", "only in the results"), ("not comparable", NOT_COMPARABLE))
        if presence[kind]
    ]
    if aside:
        lines.append(f"  not gated: {', '.join(aside)} (new keys and changed writers never fail the gate)")
    settings = [(_threshold_text(metric, thresholds), _closest_text(metric, held)) for metric in _gated()]
    width = max(len(setting) for setting, _ in settings)
    lines += [f"  {setting:<{width}}  {closest}" for setting, closest in settings]
    # A threshold of no room (`manifests_delta = 0`) is always at its limit: not a margin.
    if closest := max((one for one in gated if one.has_room), key=lambda one: one.used, default=None):
        change, limit = (_amount(closest.metric, value) for value in (closest.change, closest.limit))
        lines.append(
            f"  closest margin: {closest.metric.threshold} {change} of {limit} allowed "
            f"({closest.used:.0%} of its room) at {closest.key}"
        )
    return "\n".join(lines)


def _amount(gated: Metric, value: float) -> str:
    """`1.30x`, `+0.10`; a count's difference whole (`+0` manifests)."""
    if gated.compare == "delta" and gated.unit == "count":
        return f"{value:+.0f}"
    return change_text(value, gated.compare == "delta")


def _threshold_text(gated: Metric, thresholds: GateThresholds) -> str:
    """`wall_time_ratio 2.00x (default 1.50x), floor min_wall_s 1`: a threshold as in use."""
    assert gated.gate is not None and gated.threshold is not None
    limit = thresholds.limit(gated.threshold)
    text = f"{gated.threshold} {_amount(gated, limit)}"
    if limit != gated.gate.limit:
        text += f" (default {_amount(gated, gated.gate.limit)})"
    if (floor := gated.gate.floor) is not None:
        unit = " s" if (reached := metric(floor.metric)) is not None and reached.unit == "s" else ""
        text += f", floor {floor.name} {thresholds.limit(floor.name):g}{unit}"
    return text


def _closest_text(gated: Metric, held: Sequence[Held]) -> str:
    """The figure of the metric that came closest to its limit, and where; or that its figures
    all sat under the floor."""
    mine = [one for one in held if one.metric.name == gated.name and not one.floored]
    floored = sum(one.metric.name == gated.name and one.floored for one in held)
    under = f", {floored} under the floor" if floored else ""
    if not (closest := max(mine, key=lambda one: one.used, default=None)):
        return f"no figure gated{under}"
    return (
        f"closest {_amount(gated, closest.change)} ({counted(len(mine), 'figure')}{under}) at {closest.key}"
    )


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
    # Narrow: what regressed and by how much against which threshold before the values behind it.
    keep = ("run key", "what", "change", "threshold", "kind", "current", "baseline")
    table = rich_table(title, HEADERS, [_cells(r) for r in regressions], NUMERIC_COLUMNS, keep=keep)
    table.columns[0].no_wrap = False  # a run key may wrap at its spaces (`cgroup 1g|2000 rows/batch`)
    return table


def regressions_markdown(regressions: Sequence[Regression]) -> str:
    return markdown_table(HEADERS, [_cells(r) for r in regressions], NUMERIC_COLUMNS)
