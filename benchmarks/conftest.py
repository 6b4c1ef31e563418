"""Benchmarks inside pytest, for users who gate there: `make perf` (pytest-benchmark for time,
pytest-memray for allocations). Not part of `make test`: they take minutes and measure the machine."""

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from harness.base.settings import load_settings
from harness.run.matrix import prepare_data
from scenarios import get_scenario
from scenarios.base import DataSets


@pytest.fixture(scope="session", autouse=True)
def arrow_allocates_with_malloc() -> None:
    """Arrow's default pool (jemalloc/mimalloc) maps its own arenas, which memray cannot attribute;
    the system pool goes through malloc, so limit_memory sees Arrow's buffers too."""
    pa.set_memory_pool(pa.system_memory_pool())


@pytest.fixture(scope="session")
def small_sets() -> DataSets:
    """The cached `small` base set (make bench generates the same one)."""
    return prepare_data(load_settings(None), "small", ["base"])


@pytest.fixture
def empty_append_table(tmp_path: Path, small_sets: DataSets) -> Table:
    catalog = SqlCatalog("icebench", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=tmp_path.as_uri())
    return get_scenario("append")().prepare(catalog, "bench", small_sets)
