from harness.model import Expectation, Operation
from scenarios.base import DataSets, Scenario, expect_prefix


class Append(Scenario):
    name = "append"
    description = "empty table, then the whole base set in batches"
    operation = Operation.APPEND
    source_set = "base"
    accepts_row_limit = True

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        expected = expect_prefix(sets[self.source_set], limit_rows)  # a prefix for scale runs
        expected.changed_rows = expected.rows  # every row is new
        return expected
