from harness.model import Expectation, Operation
from scenarios.base import DataSets, Scenario


class Upsert(Scenario):
    name = "upsert"
    description = "table holding the base set, then a change set (updates + new keys) keyed on id"
    operation = Operation.UPSERT
    initial_set = "base"
    source_set = "changes"

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        after = sets[self.source_set].manifest.expected_after_upsert
        assert after is not None, "a change set's manifest carries the expected table"
        return Expectation(rows=after.rows, checksum=after.checksum, key_ranges=list(after.key_ranges))
