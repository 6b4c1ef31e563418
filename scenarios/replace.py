from harness.writers.base import Operation
from scenarios.base import DataSets, Expectation, Scenario


class Replace(Scenario):
    name = "replace"
    description = "table holding the base set, replaced by a second set with disjoint keys"
    operation = Operation.REPLACE
    initial_set = "base"
    source_set = "replacement"

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        expected = Expectation.of_set(sets["replacement"].manifest)
        # Every row of the replaced set must be gone, not just outnumbered.
        expected.gone_key_ranges = list(sets["base"].manifest.key_ranges)
        return expected
