from generators.checksum import Checksum
from harness.source import ParquetSource
from harness.writers.base import Operation
from scenarios.base import DataSets, Expectation, Scenario


class Append(Scenario):
    name = "append"
    description = "empty table, then the whole base set in batches"
    operation = Operation.APPEND
    source_set = "base"
    accepts_row_limit = True

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        base = sets[self.source_set]
        if limit_rows is None or limit_rows >= base.manifest.rows:
            return Expectation.of_set(base.manifest)
        # A prefix of the set (scale runs): its checksum is not in the manifest, so derive it here.
        checksum = Checksum()
        for batch in ParquetSource.open(base.directory, 65_536, limit_rows).batches():
            checksum.update(batch)
        first_key = base.manifest.key_ranges[0][0]
        return Expectation(
            rows=limit_rows, checksum=checksum.hex, key_ranges=[(first_key, first_key + limit_rows - 1)]
        )
