"""The oracle's read-back against the row group size a writer chose: a preset's base set as
generated, and rewritten as one row group per file, each table read back (read_content) in a
process of its own, with its resident peak (VmHWM) and time:

    .venv/bin/python benchmarks/readback_row_groups.py DIR [--preset wide]

DIR holds the data cache, the rewritten files, the catalogs and the warehouses (made on first use).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog

from harness.base.settings import load_settings
from harness.run.matrix import prepare_data

# Reads the table back as the oracle does; prints its rows, time and the process's resident peak.
READ_BACK = """
import json, re, sys, time
from pathlib import Path
from pyiceberg.catalog.sql import SqlCatalog
from harness.judge.readback import read_content
table = SqlCatalog("groups", uri=sys.argv[1], warehouse=sys.argv[2]).load_table("groups.rows")
start = time.perf_counter()
content = read_content(table)
seconds = time.perf_counter() - start
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024
print(json.dumps({"rows": content.rows, "seconds": round(seconds, 2), "peak_bytes": peak}))
"""


def table_of(root: Path, name: str, files: list[Path]) -> tuple[str, str]:
    """A table of `files` (added as they are), in a catalog of its own under `root`."""
    uri, warehouse = f"sqlite:///{root}/{name}.db", f"file://{root}/warehouse-{name}"
    catalog = SqlCatalog("groups", uri=uri, warehouse=warehouse)
    catalog.create_namespace_if_not_exists("groups")
    if not catalog.table_exists("groups.rows"):
        table = catalog.create_table("groups.rows", schema=pq.read_schema(files[0]))
        table.add_files([str(path) for path in files])
    return uri, warehouse


def one_row_group_each(files: list[Path], folder: Path) -> list[Path]:
    """Each file rewritten as a single row group (one file in memory at a time)."""
    folder.mkdir(parents=True, exist_ok=True)
    rewritten = []
    for path in files:
        target = folder / path.name
        if not target.exists():
            data = pq.read_table(path)
            pq.write_table(data, target, row_group_size=max(1, data.num_rows))
        rewritten.append(target)
    return rewritten


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--preset", default="wide")
    args = parser.parse_args()
    root = args.root.resolve()
    settings = load_settings(None, data_dir=root / "data", results_dir=root / "results")
    base = prepare_data(settings, args.preset, ["base"])["base"].directory
    files = sorted(base.glob("*.parquet"))
    layouts = {
        "as generated": files,
        "one row group a file": one_row_group_each(files, root / f"{args.preset}-one-group"),
    }
    for number, (layout, paths) in enumerate(layouts.items()):
        uri, warehouse = table_of(root, f"{args.preset}-layout-{number}", paths)
        done = subprocess.run(
            [sys.executable, "-c", READ_BACK, uri, warehouse], capture_output=True, text=True, check=True
        )
        found = json.loads(done.stdout.strip().splitlines()[-1])
        groups = sum(pq.ParquetFile(path).num_row_groups for path in paths)
        print(
            f"{args.preset}, {layout} ({groups} row groups in {len(paths)} files): {found['rows']:,} rows "
            f"in {found['seconds']:.1f} s, peak {found['peak_bytes'] / 2**20:,.0f} MiB"
        )


if __name__ == "__main__":  # the generator's worker processes re-import this module
    main()
