"""A stand-in for your own parquet, to try docs/your-data.md's walkthrough without data at hand.

    .venv/bin/python benchmarks/your_orders.py ~/orders --rows 200000 --files 4

writes `--files` parquet files of orders as a shop keeps them, and no manifest: a string key
`order_id` (`ORD-00000042`) in no particular order, `placed_at` (timestamptz over 30 days), `total`
(decimal(38, 9)), `ship_to` (a struct), `items` (a list of strings) and `attrs` (a map), with nulls
at every level. Deterministic for `--seed`; one file's rows in memory at a time.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.string())])
CITIES = pa.array(["Berlin", "Lyon", "Porto", "Oslo", "Gdansk", "Turin", "Ghent", "Cork"])
START_US = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp()) * 10**6
SPAN_US = 30 * 86_400 * 10**6


def orders(keys: np.ndarray, rng: np.random.Generator) -> pa.Table:
    """The orders numbered `keys`, each row's values drawn from `rng`."""
    rows = len(keys)
    nulls = lambda fraction=0.05: pa.array(rng.random(rows) < fraction)  # noqa: E731
    lengths = rng.integers(0, 4, rows, dtype=np.int32)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths, dtype=np.int32)]))
    elements = int(lengths.sum())
    skus = pc.binary_join_element_wise("sku-", pa.array(rng.integers(0, 5_000, elements).astype(str)), "")
    cents = rng.integers(100, 10**7, rows)
    totals = pa.array(
        np.char.add(np.char.add((cents // 100).astype(str), "."), np.char.zfill((cents % 100).astype(str), 2))
    )
    return pa.table(
        {
            "order_id": pc.binary_join_element_wise("ORD-", pa.array(np.char.zfill(keys.astype(str), 8)), ""),
            "placed_at": pa.array(START_US + rng.integers(0, SPAN_US, rows)).cast(
                pa.timestamp("us", tz="UTC")
            ),
            "total": pc.if_else(nulls(), None, totals).cast(pa.decimal128(38, 9)),
            "ship_to": pa.StructArray.from_arrays(
                [
                    pc.if_else(nulls(), None, CITIES.take(pa.array(rng.integers(0, len(CITIES), rows)))),
                    pa.array(rng.integers(10_000, 99_999, rows).astype(str)),
                ],
                fields=list(ADDRESS),
                mask=nulls(),
            ),
            "items": pa.ListArray.from_arrays(
                offsets, pc.if_else(pa.array(rng.random(elements) < 0.05), None, skus), mask=nulls()
            ),
            "attrs": pa.MapArray.from_arrays(
                pa.array(np.arange(rows + 1, dtype=np.int32)),
                pa.array(["gift"] * rows),
                pc.cast(pa.array(rng.random(rows) < 0.3), pa.string()),
                mask=nulls(),
            ),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a folder for the parquet files (made if missing)")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    if not 1 <= args.files <= args.rows:
        print(f"your_orders: need 1 <= --files <= --rows, got {args.files} and {args.rows}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    keys = rng.permutation(args.rows)  # a shop's keys come in no order a writer could lean on
    args.out.expanduser().mkdir(parents=True, exist_ok=True)
    for index, part in enumerate(np.array_split(keys, args.files)):
        path = args.out.expanduser() / f"orders-{index:02d}.parquet"
        pq.write_table(orders(part, rng), path, row_group_size=50_000)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
