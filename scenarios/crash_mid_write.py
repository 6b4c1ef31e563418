"""crash-mid-write: the worker is SIGKILLed at a chosen point of an append; the table must survive it.

The kill needs no help from the writer: the worker hands it a StepTimer that kills its own process
(harness/engines/worker.py, KillingStepTimer) once the first step is staged, on entering the first
catalog commit, or once the commit that completes the operation returned. Afterwards the oracle
checks that the table loads, sits at the last snapshot the writer saw committed, and holds
exactly the rows committed by then; the files the dead writer left are counted as orphans.

`KilledMidWrite` is the family's protocol: any scenario becomes a crash scenario by deriving from
it first and naming a kill point (tests/test_upsert_add_files.py kills upserts this way).
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any

from harness.base.results import read_report
from harness.engines.writers.base import Writer
from harness.judge.oracle import Evidence, failed_check
from harness.model import (
    SIGKILL_EXIT_CODES,
    Check,
    Expectation,
    Feed,
    KillNote,
    KillPoint,
    Operation,
    WorkerEnd,
    WorkerResult,
    WorkerSpec,
)
from scenarios.base import DataSets, Scenario, expect_both, expect_prefix

NOT_AT_LAST_COMMIT = "the table is not at the last snapshot the writer saw committed before it was killed"


class KilledMidWrite(Scenario):
    """Abstract: the worker kills itself at `kill_point`; the table must be as its last commit left it."""

    @property
    @abstractmethod
    def kill_point(self) -> KillPoint:
        """Where the worker is killed."""

    def unsupported_reason(self, writer: type[Writer]) -> str | None:
        if not writer.consumes_batches:
            return (
                f"{writer.name} does not support {self.name}: its steps are engine phases, not batches "
                "(consumes_batches is False), so the timer cannot place the kill points in its write"
            )
        return super().unsupported_reason(writer)

    def spec_fields(self, feed: Feed, folder: Path, run_folder: Path) -> dict[str, Any]:
        return {"kill_at": self.kill_point, "kill_note_path": folder / "kill-note.json"}

    def report_of_death(self, spec: WorkerSpec, returncode: int, oom_kills: int) -> WorkerResult | None:
        return read_kill_note(spec.kill_note_path, returncode, oom_kills)

    def expectation(self, sets: DataSets, ends: list[WorkerEnd], limit_rows: int | None) -> Expectation:
        """After the kill, the table as the writer's last commit left it (it cannot have committed
        rows it was not fed); any other end as for its operation."""
        (end,) = ends
        if isinstance(end.result, KillNote):
            return self.expected_after(sets, end.result.rows_committed)
        return super().expectation(sets, ends, limit_rows)

    def outcome_checks(self, evidence: Evidence, ends: list[WorkerEnd], sets: DataSets) -> list[Check]:
        """The kill as asked, or the point never reached; other failures (an error or an OOM before
        the point) are judged like any failed write."""
        (end,) = ends
        note = end.result
        if isinstance(note, KillNote):
            return [
                Check(name="killed_at_point", passed=True, expected=note.point, actual=note.describe()),
                Check.equal(
                    "at_last_committed_snapshot",
                    note.committed_snapshot_id,
                    evidence.after.current_snapshot_id,
                    NOT_AT_LAST_COMMIT,
                ),
            ]
        if note is not None and note.kill_missed:  # the scenario did not do what it says
            return [failed_check("killed_at_point", note.kill_missed)]
        return super().outcome_checks(evidence, ends, sets)


def read_kill_note(path: Path | None, returncode: int, oom_kills: int) -> KillNote | None:
    """The note of a worker that died by the kill it was asked to give itself: the note says what
    had landed, the exit code proves the kill (a note without it is not taken on its word)."""
    if path is None or returncode not in SIGKILL_EXIT_CODES or oom_kills:
        return None
    return read_report(path, KillNote)


class CrashMidWrite(KilledMidWrite):
    """Abstract: one concrete scenario per kill point, each found by name like any other."""

    operation = Operation.APPEND
    # The table holds a committed snapshot before the append, so "the last committed snapshot" is
    # one the kill can be measured against; the replacement set's keys are disjoint from the base
    # set's, so a lost or duplicated batch shows up as missing or duplicate keys.
    initial_set = "replacement"
    source_set = "base"
    in_default_matrix = False  # judges recovery, not speed: name them (SCENARIOS=crash-...) to run

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        """The initial set plus the first `limit_rows` rows appended (None: all of them)."""
        return expect_both(self.expected_before(sets), expect_prefix(sets[self.source_set], limit_rows))


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
