"""concurrent-writers: two workers append to the same table at once.

Both write from the same snapshot (scenarios/concurrent.py), so whichever commits second meets a
conflict: it retries and both land, or it fails cleanly. The two sets have disjoint keys, so a
lost or doubled append shows as missing, unexpected or duplicate keys.
"""

from __future__ import annotations

from harness.model import Expectation, Feed, Operation
from scenarios.base import DataSets
from scenarios.concurrent import Concurrent, landed_sets


class ConcurrentWriters(Concurrent):
    name = "concurrent-writers"
    description = "two workers append the base and the replacement set to one table at the same time"
    operation = Operation.APPEND
    source_set = "base"
    in_default_matrix = False  # judges conflict handling, not speed: name it to run it

    def feeds(self) -> tuple[Feed, ...]:
        return (
            Feed(name="a", source_set="base", operation=Operation.APPEND),
            Feed(name="b", source_set="replacement", operation=Operation.APPEND),
        )

    def expected_landed(self, sets: DataSets, landed: list[Feed]) -> Expectation:
        return landed_sets(self.expected_before(sets), sets, landed)
