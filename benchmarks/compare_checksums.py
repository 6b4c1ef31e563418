"""Checksum version 2 (tests/old_checksum_v2.py: one 64-bit lane) against today's
(generators/checksum.py: 32 lanes) on a generated set, read batch by batch as the oracle reads a
table:

    .venv/bin/python benchmarks/compare_checksums.py DIR [--batch-rows N] [--only old|new|none]

Both in one process (the default) time each batch with both, alternating which goes first, so
the ratio holds on a busy machine. --only runs one (or none: reading alone) for its peak RSS, and
traces numpy's allocations (tracemalloc) for the largest one hashing call held at once.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from old_checksum_v2 import V2Checksum, v2_row_hashes

from generators.checksum import Checksum, hash_rows
from generators.manifest import DatasetManifest

Hasher = Callable[[pa.RecordBatch], Any]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("directory", type=Path)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--only", choices=["old", "new", "none"])
    args = parser.parse_args()
    manifest = DatasetManifest.load(args.directory)
    hashers: dict[str, Hasher] = {"old": v2_row_hashes, "new": hash_rows}
    if args.only:
        hashers = {args.only: hashers[args.only]} if args.only != "none" else {}
    for hasher in hashers.values():  # numba: load (or compile) the kernels outside the timing
        hasher(pa.table({"warm": [1]}))
    if args.only:
        tracemalloc.start()
    held = 0
    seconds = dict.fromkeys(hashers, 0.0)
    sums = {name: {"old": V2Checksum, "new": Checksum}[name]() for name in hashers}
    started, batches = time.perf_counter(), 0
    for path in manifest.file_paths(args.directory):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=args.batch_rows):
            order = list(hashers) if batches % 2 == 0 else list(hashers)[::-1]
            for name in order:
                if args.only:
                    tracemalloc.reset_peak()
                    before = tracemalloc.get_traced_memory()[0]
                began = time.perf_counter()
                hashes = hashers[name](batch)
                seconds[name] += time.perf_counter() - began
                if args.only:
                    held = max(held, tracemalloc.get_traced_memory()[1] - before)
                sums[name].add_rows(hashes)
            batches += 1
    total = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{manifest.rows:,} rows x {manifest.columns} columns, {batches} batches of {args.batch_rows:,}")
    for name in hashers:
        rate = manifest.rows / seconds[name] if seconds[name] else 0
        print(f"  {name}: {seconds[name]:.1f} s hashing ({rate:,.0f} rows/s), checksum {sums[name].hex[:16]}")
    if len(hashers) == 2:
        print(f"  new / old: {seconds['new'] / seconds['old']:.2f}")
    print(f"  manifest: checksum {manifest.checksum[:16]} (version {manifest.checksum_version})")
    print(f"  wall {total:.1f} s in all (reading included), peak RSS {peak:.0f} MiB")
    if args.only:
        print(f"  largest allocation of one hashing call (tracemalloc): {held / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
