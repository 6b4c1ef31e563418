"""crash-mid-write: the worker is SIGKILLed at a chosen point of an append; the table must survive it.

The kill needs no help from the writer: the worker hands it a StepTimer that kills its own process
(harness/worker.py, KillingStepTimer) once the first step is staged, on entering the first
catalog commit, or once the commit that completes the operation returned. Afterwards the oracle
checks that the table loads, sits at the last snapshot the writer saw committed, and holds
exactly the rows committed by then; the files the dead writer left are counted as orphans.
"""

from __future__ import annotations

from abc import abstractmethod

from harness.model import Expectation, KillPoint, Operation
from harness.writers.base import Writer
from scenarios.base import DataSets, Scenario, expect_both, expect_prefix, expect_set


class CrashMidWrite(Scenario):
    """Abstract: one concrete scenario per kill point, each found by name like any other."""

    operation = Operation.APPEND
    # The table holds a committed snapshot before the append, so "the last committed snapshot" is
    # one the kill can be measured against; the replacement set's keys are disjoint from the base
    # set's, so a lost or duplicated batch shows up as missing or duplicate keys.
    initial_set = "replacement"
    source_set = "base"
    in_default_matrix = False  # judges recovery, not speed: name them (SCENARIOS=crash-...) to run

    @property
    @abstractmethod
    def kill_point(self) -> KillPoint:  # type: ignore[override]
        """Where the worker is killed."""

    def unsupported_reason(self, writer: type[Writer]) -> str | None:
        if not writer.consumes_batches:
            return (
                f"{writer.name} does not support {self.name}: its steps are engine phases, not batches "
                "(consumes_batches is False), so the timer cannot place the kill points in its write"
            )
        return super().unsupported_reason(writer)

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        """The initial set plus the first `limit_rows` rows appended (None: all of them).

        After a kill, `limit_rows` is what the writer had committed when it died.
        """
        initial = expect_set(sets[self.initial_set].manifest)
        return expect_both(initial, expect_prefix(sets[self.source_set], limit_rows))


class CrashDuringDataFiles(CrashMidWrite):
    name = "crash-data-files"
    description = "append of the base set onto the replacement set, SIGKILLed once the first batch is staged"
    kill_point = "data-files"


class CrashBeforeCommit(CrashMidWrite):
    name = "crash-before-commit"
    description = "append of the base set onto the replacement set, SIGKILLed on entering the commit"
    kill_point = "before-commit"


class CrashAfterCommit(CrashMidWrite):
    name = "crash-after-commit"
    description = "append of the base set onto the replacement set, SIGKILLed once the commit returned"
    kill_point = "after-commit"
