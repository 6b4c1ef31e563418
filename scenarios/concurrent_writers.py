"""concurrent-writers: two workers append to the same table at once.

Each worker loads the table, opens its source, then waits for the other (harness/worker.py,
Rendezvous): both write from the same snapshot, so whichever commits second meets a conflict.
A writer may retry it (pyiceberg 0.12.0 does, 0.11 and older do not; Iceberg Java does) and both land,
or fail cleanly: then its rows must be nowhere in the table. The two sets have disjoint keys, so a
lost or doubled append shows as missing, unexpected or duplicate keys.
"""

from __future__ import annotations

from harness.model import Expectation, Operation
from scenarios.base import DataSets, Scenario


class ConcurrentWriters(Scenario):
    name = "concurrent-writers"
    description = "two workers append the base and the replacement set to one table at the same time"
    operation = Operation.APPEND
    source_set = "base"
    worker_sets = ("base", "replacement")
    in_default_matrix = False  # judges conflict handling, not speed: name it to run it

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        return self.expected_landed(sets, list(self.worker_sets))  # both appends landed
