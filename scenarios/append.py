from harness.writers.base import Operation
from scenarios.base import DataSets, Expectation, Scenario


class Append(Scenario):
    name = "append"
    description = "empty table, then the whole base set in batches"
    operation = Operation.APPEND
    source_set = "base"
    accepts_row_limit = True

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        return Expectation.of_prefix(sets[self.source_set], limit_rows)  # a prefix for scale runs
