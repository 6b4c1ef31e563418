"""`matrix --find-cap`: the smallest memory cap each pair survives, bisected to ~10%.

A pair that ran under the matrix's largest cap without an OOM kill or error is run again under
caps halfway (in log terms) between the largest cap it failed under and the smallest it survived,
until the two are within `PRECISION` of each other. Every probe is a run of its own, recorded as
any other: the figure is read back from the records (reports/caps.py), never kept apart.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from harness.model import RunRecord

if TYPE_CHECKING:
    from harness.run.events import MatrixEvents
    from harness.run.runner import Runner, RunPlan

PRECISION = 1.1  # the smallest cap survived is at most 10% above the largest one failed
FLOOR_BYTES = 64 * 2**20  # below this no Python worker with pyarrow starts


def find_caps(
    runner: Runner, plans: list[RunPlan], records: list[RunRecord], top_cap: int | None, events: MatrixEvents
) -> list[RunRecord]:
    """The probes' records, for every whole-set pair of `plans` that survived `top_cap`."""
    if top_cap is None:
        return []
    ran = list(zip(plans, records, strict=True))
    tops = [plan for plan, record in ran if _searchable(plan, top_cap) and record.survived_cap]
    probes: list[RunRecord] = []
    runner.probing_caps = runner.starved_is_oom = True
    with events.stage("find-cap", len(tops) * _probes_at_most(top_cap)):
        for top in tops:
            same = [record for plan, record in ran if _same_pair(plan, top)]
            low = max((r.cap_bytes or 0 for r in same if not r.survived_cap), default=FLOOR_BYTES)
            high = min(r.cap_bytes or top_cap for r in same if r.survived_cap)
            while high > low * PRECISION:
                cap = _between(low, high)
                plan = dataclasses.replace(top, cap_bytes=cap)
                events.run_started(plan)
                record = runner.run(plan)
                events.run_finished(plan, record)
                probes.append(record)
                low, high = (low, cap) if record.survived_cap else (cap, high)
    runner.probing_caps = runner.starved_is_oom = False
    return probes


def _searchable(plan: RunPlan, top_cap: int) -> bool:
    return plan.cap_bytes == top_cap and plan.limit_rows is None and plan.repeat == 0


def _same_pair(plan: RunPlan, other: RunPlan) -> bool:
    return (plan.scenario, plan.writer, plan.preset, plan.layout, plan.limit_rows) == (
        other.scenario,
        other.writer,
        other.preset,
        other.layout,
        other.limit_rows,
    )


def _between(low: int, high: int) -> int:
    """The geometric middle, in whole MiB."""
    return min(high - 2**20, max(low + 2**20, round(math.sqrt(low * high) / 2**20) * 2**20))


def _probes_at_most(top_cap: int) -> int:
    """Probes of one pair from the floor to `top_cap` (the progress bar's length)."""
    return max(1, math.ceil(math.log2(math.log(max(top_cap / FLOOR_BYTES, PRECISION)) / math.log(PRECISION))))
