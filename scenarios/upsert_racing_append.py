"""upsert-racing-append: one worker upserts the change set while another appends a third set.

The two write from the same snapshot (scenarios/concurrent.py). Whichever commits second must
either land on top of the other's commit or fail cleanly: an upsert that retries must still
update the rows it matched and leave the appended rows alone; an append that retries must not
bring back rows the upsert replaced. The appended set (`disjoint-2`) has keys apart from the base
set's and from the change set's new keys, so every outcome has one exact expected table.
"""

from __future__ import annotations

from harness.base.errors import IcebenchError
from harness.model import Expectation, Feed, KeyRanges, Operation
from scenarios.base import DataSets
from scenarios.concurrent import Concurrent, landed_sets
from scenarios.upsert import Upsert

APPENDED = "disjoint-2"


class UpsertRacingAppend(Concurrent, Upsert):
    name = "upsert-racing-append"
    description = "base set; worker a upserts the change set while worker b appends a third set"
    in_default_matrix = False  # judges conflict handling, not speed: name it to run it

    def feeds(self) -> tuple[Feed, ...]:
        return (
            Feed(name="a", source_set=self.source_set, operation=Operation.UPSERT),
            Feed(name="b", source_set=APPENDED, operation=Operation.APPEND),
        )

    def expected_landed(self, sets: DataSets, landed: list[Feed]) -> Expectation:
        upsert, append = self.feeds()
        if overlap := ranges_overlap(self.own_key_ranges(upsert, sets), self.own_key_ranges(append, sets)):
            raise IcebenchError(
                f"{self.name}: the change set's new keys reach key {overlap}, the appended set's keys "
                "start there; no single table can be expected (use an insert ratio of at most 1)"
            )
        upserted = any(feed.operation is Operation.UPSERT for feed in landed)
        start = Upsert.expected_after(self, sets) if upserted else self.expected_before(sets)
        return landed_sets(start, sets, [feed for feed in landed if feed.operation is Operation.APPEND])

    def own_key_ranges(self, feed: Feed, sets: DataSets) -> KeyRanges:
        """The upsert's own keys are the new ones it inserts; the keys it updates were there before."""
        if feed.operation is not Operation.UPSERT:
            return super().own_key_ranges(feed, sets)
        first_new = max(high for _, high in sets[self.initial_set or ""].manifest.key_ranges) + 1
        changes = sets[feed.source_set].manifest.key_ranges
        return [(max(low, first_new), high) for low, high in changes if high >= first_new]


def ranges_overlap(one: KeyRanges, other: KeyRanges) -> int | None:
    """The first key two sets of inclusive ranges share, or None."""
    shared = [max(lo, olo) for lo, hi in one for olo, ohi in other if max(lo, olo) <= min(hi, ohi)]
    return min(shared, default=None)
