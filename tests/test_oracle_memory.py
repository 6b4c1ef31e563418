"""The oracle's memory does not grow with the row group size a writer chose: the same rows of
`small` (200,000 x 100) in one-row-group files and in 10,000-row groups, each table read back in a
process of its own, peak within 10% of each other (one 200,000-row group read whole: +395 MiB
against +155 MiB, the finding this test closes)."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from harness.base.settings import Settings
from harness.run.matrix import prepare_data

# Reads the table back as the oracle does and prints the process's resident peak (VmHWM).
READ_BACK = """
import json, re, sys
from pathlib import Path
from pyiceberg.catalog.sql import SqlCatalog
from harness.judge.readback import read_content
catalog = SqlCatalog("memory", uri=sys.argv[1], warehouse=sys.argv[2])
content = read_content(catalog.load_table(sys.argv[3]))
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024
print(json.dumps({"rows": content.rows, "checksum": content.checksum, "peak": peak}))
"""


@pytest.fixture(scope="module")
def small_base(settings: Settings) -> Path:
    return prepare_data(settings, "small", ["base"])["base"].directory


def _table_of_row_groups(small_base: Path, folder: Path, rows_per_group: int) -> dict[str, str]:
    """The base set rewritten as one file of `rows_per_group`-row groups, added to a table of its own."""
    folder.mkdir()
    data = pq.read_table(sorted(small_base.glob("*.parquet")))
    path = folder / "data.parquet"
    pq.write_table(data, path, row_group_size=rows_per_group)
    uri, warehouse = f"sqlite:///{folder}/catalog.db", f"file://{folder}/warehouse"
    catalog = SqlCatalog("memory", uri=uri, warehouse=warehouse)
    catalog.create_namespace("groups")
    table = catalog.create_table("groups.rows", schema=data.schema)
    table.add_files([str(path)])
    assert pq.ParquetFile(path).num_row_groups == -(-data.num_rows // rows_per_group)
    return {"uri": uri, "warehouse": warehouse}


def _read_back(table: dict[str, str]) -> dict[str, int | str]:
    done = subprocess.run(
        [sys.executable, "-c", READ_BACK, table["uri"], table["warehouse"], "groups.rows"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_oracles_peak_does_not_grow_with_the_row_group_size(small_base, tmp_path):
    many = _read_back(_table_of_row_groups(small_base, tmp_path / "many", 10_000))
    one = _read_back(_table_of_row_groups(small_base, tmp_path / "one", 200_000))
    assert one["rows"] == many["rows"] == 200_000
    assert one["checksum"] == many["checksum"]
    assert one["peak"] <= 1.10 * many["peak"], (one["peak"] >> 20, many["peak"] >> 20)
