"""What the oracle's read-back leaves held per data file (issue 39: at 1,000 files of 400 columns the
files' statistics and manifest entries kept until the checks were ~270 MiB): tables of N small files
of `wide`'s 400 columns, each read back (read_content), the bytes its result holds (tracemalloc):

    .venv/bin/python benchmarks/oracle_files_held.py DIR [--files 40,120]

DIR holds the files, catalogs and warehouses (made on first use). The slope between two counts is
what a file costs; run it from another checkout to measure that checkout's oracle.
"""

from __future__ import annotations

import argparse
import gc
import re
import tracemalloc
from pathlib import Path

import numpy as np
from pyiceberg.catalog.sql import SqlCatalog
from readback_row_groups import table_of

from generators.schema import wide_schema
from generators.wide import build_batch, parquet_writer
from harness.judge.readback import read_content

COLUMNS, ROWS_PER_FILE = 400, 500


def files_of(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    schema, rng = wide_schema(COLUMNS), np.random.default_rng(1)
    paths = []
    for index in range(count):
        path = folder / f"part-{index:05d}.parquet"
        if not path.exists():
            with parquet_writer(path, schema) as writer:
                keys = np.arange(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE)
                writer.write_batch(build_batch(schema, keys, rng).cast(schema))
        paths.append(path)
    return paths


def held_bytes(root: Path, count: int) -> int:
    uri, warehouse = table_of(root, f"held_{count}", files_of(root / f"files-{count}", count))
    table = SqlCatalog("groups", uri=uri, warehouse=warehouse).load_table("groups.rows")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    content = read_content(table)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(content.files) == count
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--files", default="40,120", help="file counts, e.g. 40,120 (one: its peak alone)")
    args = parser.parse_args()
    counts = [int(count) for count in args.files.split(",")]
    held_bytes(args.root.resolve(), min(counts))  # once before: what a first read allocates for good
    held = {count: held_bytes(args.root.resolve(), count) for count in counts}
    for count, size in held.items():
        print(f"{count} files of {COLUMNS} columns: the read-back holds {size / 2**20:.1f} MiB")
    low, high = min(counts), max(counts)
    if high > low:
        print(f"per file: {(held[high] - held[low]) / (high - low) / 2**10:.0f} KiB")
    peak = int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text())[1]) * 1024
    print(f"the process's resident peak: {peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
