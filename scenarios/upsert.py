from harness.model import Expectation, Operation
from scenarios.base import DataSets, Scenario, expect_upserted


class Upsert(Scenario):
    name = "upsert"
    description = "table holding the base set, then a change set (updates + new keys) keyed on id"
    operation = Operation.UPSERT
    initial_set = "base"
    source_set = "changes"

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        assert self.initial_set is not None, "an upsert changes a table that holds a set"
        expected = expect_upserted(sets[self.initial_set], sets[self.source_set])
        expected.changed_rows = sets[self.source_set].manifest.rows  # each changed row updated or new
        return expected
