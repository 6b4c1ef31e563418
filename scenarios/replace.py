from harness.model import Expectation, Operation
from scenarios.base import DataSets, Scenario, expect_set


class Replace(Scenario):
    name = "replace"
    description = "table holding the base set, replaced by a second set with disjoint keys"
    operation = Operation.REPLACE
    initial_set = "base"
    source_set = "replacement"

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        expected = expect_set(sets["replacement"])
        # Every row of the replaced set must be gone, not just outnumbered.
        expected.gone_key_ranges = list(sets["base"].manifest.key_ranges)
        expected.changed_rows = expected.rows  # every row is new
        return expected
