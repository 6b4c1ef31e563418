"""A maintenance step on the table a matrix pair's write left (`matrix --maintenance compact,expire`):
a run of its own, by the writer's maintainer (harness/engines/maintainers/), judged against what
the write had to leave: the rows unchanged, and what the step promises (harness/judge/maintenance.py).
The rounds workload's maintenance phases are judged the same way (scenarios/rounds.py)."""

from __future__ import annotations

from typing import ClassVar

from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from harness.engines.maintainers import get_maintainer
from harness.engines.writers.base import Writer
from harness.judge.maintenance import maintenance_checks
from harness.judge.oracle import Evidence
from harness.model import PLAIN_LAYOUT, Check, Expectation, Maintenance, TableLayout, WorkerEnd
from scenarios.base import DataSets, Scenario


def maintenance_refusal(maintainer: str, step: Maintenance) -> str | None:
    """Why `maintainer` cannot take `step` (the run is then unsupported), or None."""
    return get_maintainer(maintainer).unsupported_reason(step)


def step_checks(evidence: Evidence, step: Maintenance, maintainer: str) -> list[Check]:
    """What the step promises, as its maintainer promises it."""
    return maintenance_checks(evidence, step, maintainer, get_maintainer(maintainer).compaction_snapshots)


class MaintenanceStep(Scenario):
    """One step after `written`'s write, on its table; made by the matrix, never listed."""

    name = "maintenance"
    description = "a maintenance step on the table a pair's write left"
    listed: ClassVar[bool] = False
    operation = Maintenance.COMPACT  # per instance: the step's

    def __init__(self, step: Maintenance, written: Scenario, maintainer: str) -> None:
        self.operation = step
        self.written = written
        self.maintainer = maintainer
        self.source_set = written.source_set  # names the rows and columns of its record

    def prepare(
        self, catalog: Catalog, namespace: str, sets: DataSets, layout: TableLayout = PLAIN_LAYOUT
    ) -> Table:
        return catalog.load_table(self.table_identifier(namespace))

    def table_identifier(self, namespace: str) -> str:
        return self.written.table_identifier(namespace)

    def unsupported_reason(self, writer: type[Writer]) -> str | None:
        return maintenance_refusal(self.maintainer, self.operation)

    def outcome_checks(self, evidence: Evidence, ends: list[WorkerEnd], sets: DataSets) -> list[Check]:
        return step_checks(evidence, self.operation, self.maintainer)

    def expected_before(self, sets: DataSets) -> Expectation:
        """The table the write had to leave: a step keeps its rows, and writes none anew."""
        return self.written.expected_after(sets).model_copy(update={"changed_rows": None})

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        return self.expected_before(sets)
