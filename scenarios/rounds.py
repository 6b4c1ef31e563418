"""The rounds workload's phases: each a run on the table the writer under test has written in
every phase before it (LST-Bench longevity, Onehouse lake-loader style).

Round N works on sets of its own keys: `round-N` and its change set `round-N-changes`
(generators/datasets.py). A phase is one operation of the writer:
- append: adds round-N's rows;
- upsert: applies round-N's change set (updates of round-N's keys, new keys above them);
- replace: the table becomes round-N's rows alone; every earlier row must be gone.
What the table must hold is tracked as blocks, one per round present, so the oracle judges the
table after every phase; a phase that failed must have left the table as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table

from generators.datasets import round_changes, round_set
from harness.model import PLAIN_LAYOUT, ROUND_PHASES, Expectation, KeyRanges, Operation, TableLayout
from scenarios.base import DataSets, Scenario, expect_both, expect_empty, expect_set, expect_upserted

TABLE_NAME = "rounds"

# What of round N the table holds: its set, its set with its change set applied, or (an upsert on
# a table without its set) the change set's rows alone.
Block = Literal["set", "upserted", "changes"]


@dataclass
class RoundsTable:
    """The table the workload must have made so far: a block per round present."""

    blocks: dict[int, Block] = field(default_factory=dict)

    def after(self, phase: str, round_number: int) -> RoundsTable:
        """The table once `phase` of round `round_number` has succeeded."""
        if phase == "replace":
            return RoundsTable({round_number: "set"})
        blocks = dict(self.blocks)
        if phase == "append":
            blocks[round_number] = "set"
        else:  # upsert
            blocks[round_number] = "upserted" if round_number in blocks else "changes"
        return RoundsTable(blocks)

    def expectation(self, sets: DataSets) -> Expectation:
        expected = expect_empty()
        for round_number, block in sorted(self.blocks.items()):
            expected = expect_both(expected, _block_expectation(sets, round_number, block))
        return expected


def _block_expectation(sets: DataSets, round_number: int, block: Block) -> Expectation:
    if block == "set":
        return expect_set(sets[round_set(round_number)])
    changes = sets[round_changes(round_number)]
    if block == "changes":
        return expect_set(changes)
    return expect_upserted(sets[round_set(round_number)], changes)


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
    description = "phases of N rounds (append, upsert, replace) on a table the writer wrote itself"
    listed: ClassVar[bool] = False
    operation = Operation.APPEND  # per instance: the phase's

    def __init__(self, phase: str, round_number: int, table: RoundsTable) -> None:
        self.phase = phase
        self.round_number = round_number
        self.operation = ROUND_PHASES[phase]  # the class's default, made this phase's
        self.source_set = round_changes(round_number) if phase == "upsert" else round_set(round_number)
        self.before = table

    def prepare(
        self, catalog: Catalog, namespace: str, sets: DataSets, layout: TableLayout = PLAIN_LAYOUT
    ) -> Table:
        """The table as the earlier phases left it; created empty before the first."""
        try:
            return catalog.load_table(self.table_identifier(namespace))
        except NoSuchTableError:
            return super().prepare(catalog, namespace, sets, layout)

    def after(self) -> RoundsTable:
        return self.before.after(self.phase, self.round_number)

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
