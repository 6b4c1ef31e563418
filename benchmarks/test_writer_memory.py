"""peakmem_: Python and native allocations of a writer in this process (pytest-memray's
limit_memory is the high-water mark of what the test allocated). Appending the `small` set, the
streaming writer holds a few batches (~46 MiB here), the materialising one the whole source
(~339 MiB): each has a budget that fails on a regression of its own."""

import pytest

from generators.source import ParquetSource
from harness.engines.writers import Operation, StepTimer, WriteJob, get_writer

BATCH_ROWS = 10_000
STREAMING_LIMIT = "100 MB"
MATERIALISING_LIMIT = "500 MB"


def _append(writer: str, table, small_sets) -> None:
    source = ParquetSource.open(small_sets["base"].directory, batch_rows=BATCH_ROWS)
    get_writer(writer)().write(WriteJob(table, source, Operation.APPEND, ["id"]), StepTimer())


@pytest.mark.limit_memory(STREAMING_LIMIT)
def test_peakmem_streaming_add_files_append(empty_append_table, small_sets):
    _append("pyiceberg-add-files", empty_append_table, small_sets)


@pytest.mark.limit_memory(MATERIALISING_LIMIT)
def test_peakmem_materialising_table_append(empty_append_table, small_sets):
    _append("pyiceberg-table", empty_append_table, small_sets)
