"""The concurrent family: several workers write to one table at once, each under its own cap.

Each worker loads the table, opens its source, then waits for the others at a rendezvous
(harness/model/__init__.py, Rendezvous): all write from the same snapshot, so every commit after the first
meets a conflict. A writer may retry it (pyiceberg 0.12.0 does, 0.11 and older do not; Iceberg
Java does) and its write lands, or fail cleanly: then none of the rows only it could have
written may be in the table. A failed worker is no failed check; what it left behind is.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any

from harness.judge.oracle import Evidence, failed_check, no_orphans_check
from harness.model import Check, Expectation, Feed, KeyRanges, Rendezvous, WorkerEnd
from scenarios.base import DataSets, Scenario, expect_both, expect_set


class Concurrent(Scenario):
    """Abstract: a scenario of several feeds whose keys are apart (but for the rows they update)."""

    @abstractmethod
    def feeds(self) -> tuple[Feed, ...]:
        """Two or more workers, named a, b, ..."""

    @abstractmethod
    def expected_landed(self, sets: DataSets, landed: list[Feed]) -> Expectation:
        """The table once the `landed` workers committed and the others left nothing behind."""

    def own_key_ranges(self, feed: Feed, sets: DataSets) -> KeyRanges:
        """The keys only `feed`'s write can put in the table: an append's, its whole set."""
        return list(sets[feed.source_set].manifest.key_ranges)

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        return self.expected_landed(sets, list(self.feeds()))  # every write landed

    def spec_fields(self, feed: Feed, folder: Path, run_folder: Path) -> dict[str, Any]:
        parties = len(self.feeds())
        return {
            "rendezvous": Rendezvous(directory=run_folder / "rendezvous", name=feed.name, parties=parties)
        }

    def expectation(self, sets: DataSets, ends: list[WorkerEnd], limit_rows: int | None) -> Expectation:
        return self.expected_landed(sets, [end.feed for end in ends if end.outcome.status == "ok"])

    def outcome_checks(self, evidence: Evidence, ends: list[WorkerEnd], sets: DataSets) -> list[Check]:
        failed = [end for end in ends if end.outcome.status != "ok"]
        landed = len(ends) - len(failed)
        checks = [] if failed else [no_orphans_check(evidence.orphans)]  # all landed: all reachable
        errors = "; ".join(
            f"worker {end.feed.name}: {end.outcome.error or end.outcome.status}" for end in failed
        )
        checks.append(
            failed_check("a_worker_landed", f"no concurrent write landed: {errors}")
            if not landed
            else Check(
                name="a_worker_landed",
                passed=True,
                expected=f">= 1 of {len(ends)}",
                actual=f"{landed} of {len(ends)}",
            )
        )
        leftovers = []
        for end in failed:
            left = evidence.content.tally.count_in(self.own_key_ranges(end.feed, sets))
            if left:
                leftovers.append(
                    f"{left:,} rows of worker {end.feed.name} ({end.feed.source_set}) in the table, "
                    f"yet it failed: {end.outcome.error or end.outcome.status}"
                )
        if leftovers:
            checks.append(failed_check("failed_workers_left_nothing", "; ".join(leftovers)))
        else:
            checks.append(Check(name="failed_workers_left_nothing", passed=True, expected=0, actual=0))
        if evidence.single_commit:  # however often each was retried, a landed write is one catalog commit
            commits = evidence.commits
            checks.append(
                Check.equal(
                    "one_commit_per_landed_worker",
                    landed,
                    commits,
                    f"{commits} catalog commits for {landed} of {len(ends)} landed single-commit writes",
                )
            )
        return checks


def landed_sets(expected: Expectation, sets: DataSets, landed: list[Feed]) -> Expectation:
    """`expected` plus the whole set of each landed append."""
    for feed in landed:
        expected = expect_both(expected, expect_set(sets[feed.source_set]))
    return expected
