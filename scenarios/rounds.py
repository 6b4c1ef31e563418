"""The rounds workload's phases: each a run on the table the writer under test has written in
every phase before it (LST-Bench longevity, Onehouse lake-loader style).

Each append works on a set of its own keys, a block: `round-B` (generators/datasets.py), B
counting the appends of every round so far (a round may append several times, as a real day of
loads does); the other phases work on the round's last block. A phase is one operation of the
writer:
- append: adds the next block's rows;
- upsert: applies the block's change set `round-B-changes` (updates of its keys, new keys above);
- replace: the table becomes the block's rows alone; every earlier row must be gone;
or a maintenance step by a maintainer (harness/engines/maintainers/) on the table the writer left:
- compact, expire, orphans: the table's rows must stay as they were (harness/judge/maintenance.py).
What the table must hold is tracked as blocks, so the oracle judges the table after every phase;
a phase that failed must have left the table as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table

from generators.datasets import round_changes, round_set
from harness.engines.writers.base import Writer
from harness.judge.oracle import Evidence
from harness.model import (
    PLAIN_LAYOUT,
    ROUND_PHASES,
    Check,
    Expectation,
    KeyRanges,
    Maintenance,
    Operation,
    TableLayout,
    WorkerEnd,
)
from scenarios.base import DataSets, Scenario, expect_both, expect_empty, expect_set, expect_upserted
from scenarios.maintenance_step import maintenance_refusal, step_checks

TABLE_NAME = "rounds"

# What of block B the table holds: its set, its set with its change set applied, or (an upsert on
# a table without its set) the change set's rows alone.
Block = Literal["set", "upserted", "changes"]


@dataclass
class RoundsTable:
    """The table the workload must have made so far: what it holds of each block present."""

    blocks: dict[int, Block] = field(default_factory=dict)

    def after(self, phase: str, block: int) -> RoundsTable:
        """The table once `phase` on block `block` has succeeded (a maintenance step keeps it)."""
        if phase == "replace":
            return RoundsTable({block: "set"})
        blocks = dict(self.blocks)
        if phase == "append":
            blocks[block] = "set"
        elif phase == "upsert":
            blocks[block] = "upserted" if block in blocks else "changes"
        return RoundsTable(blocks)

    def expectation(self, sets: DataSets) -> Expectation:
        expected = expect_empty()
        for round_number, block in sorted(self.blocks.items()):
            expected = expect_both(expected, _block_expectation(sets, round_number, block))
        return expected


def _block_expectation(sets: DataSets, number: int, block: Block) -> Expectation:
    if block == "set":
        return expect_set(sets[round_set(number)])
    changes = sets[round_changes(number)]
    if block == "changes":
        return expect_set(changes)
    return expect_upserted(sets[round_set(number)], changes)


def subtract_ranges(ranges: KeyRanges, removed: KeyRanges) -> KeyRanges:
    """The keys of inclusive `ranges` that no range of `removed` holds, as inclusive ranges."""
    left = sorted(ranges)
    for low_gone, high_gone in sorted(removed):
        kept: KeyRanges = []
        for low, high in left:
            if high < low_gone or low > high_gone:
                kept.append((low, high))
                continue
            if low < low_gone:
                kept.append((low, low_gone - 1))
            if high > high_gone:
                kept.append((high_gone + 1, high))
        left = kept
    return left


class RoundPhase(Scenario):
    """One phase of one round; made by the rounds driver (harness/run/rounds.py), never listed
    among the matrix's scenarios."""

    name = "rounds"
    description = "phases of N rounds (append, upsert, replace, maintenance) on a table the writer wrote"
    listed: ClassVar[bool] = False
    operation = Operation.APPEND  # per instance: the phase's

    def __init__(
        self,
        phase: str,
        round_number: int,
        table: RoundsTable,
        block: int | None = None,
        maintainer: str = "",
    ) -> None:
        self.phase = phase
        self.round_number = round_number
        self.block = round_number if block is None else block
        self.operation = ROUND_PHASES[phase]  # the class's default, made this phase's
        # A maintenance step reads no source: its set names the rows and columns of its record.
        self.source_set = round_changes(self.block) if phase == "upsert" else round_set(self.block)
        self.before = table
        self.maintainer = maintainer
        if isinstance(self.operation, Maintenance) and not maintainer:
            raise ValueError(f"the {phase} phase needs a maintainer")

    def prepare(
        self, catalog: Catalog, namespace: str, sets: DataSets, layout: TableLayout = PLAIN_LAYOUT
    ) -> Table:
        """The table as the earlier phases left it; created empty before the first."""
        try:
            return catalog.load_table(self.table_identifier(namespace))
        except NoSuchTableError:
            return super().prepare(catalog, namespace, sets, layout)

    def after(self) -> RoundsTable:
        return self.before.after(self.phase, self.block)

    def unsupported_reason(self, writer: type[Writer]) -> str | None:
        if isinstance(self.operation, Maintenance):
            return maintenance_refusal(self.maintainer, self.operation)
        return super().unsupported_reason(writer)

    def outcome_checks(self, evidence: Evidence, ends: list[WorkerEnd], sets: DataSets) -> list[Check]:
        if isinstance(self.operation, Maintenance):
            return step_checks(evidence, self.operation, self.maintainer)
        return super().outcome_checks(evidence, ends, sets)

    def expected_before(self, sets: DataSets) -> Expectation:
        return self.before.expectation(sets)

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        expected = self.after().expectation(sets)
        if self.phase == "replace":  # every earlier row the replacing set has no key of must be gone
            before = self.expected_before(sets).key_ranges
            expected.gone_key_ranges = subtract_ranges(before, expected.key_ranges)
        return expected

    def table_identifier(self, namespace: str) -> str:
        return f"{namespace}.{TABLE_NAME}"
