"""What gathering every column's statistics costs the oracle's read (harness/judge/statistics.py):
read_content on one table of a preset's base set, with the statistics and without, alternating in
one process (best of N each), so the ratio holds on a busy machine:

    .venv/bin/python benchmarks/oracle_statistics_cost.py DIR [--preset small] [--repeats 8]

DIR holds the data cache, the catalog and the warehouse (generated on first use).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from pyiceberg.catalog.sql import SqlCatalog

import harness.judge.readback as readback
from harness.base.settings import load_settings
from harness.run.matrix import prepare_data
from scenarios import get_scenario
from scenarios.base import register_set


def _none(*_: Any) -> None:
    return None


def _no_sizes(*_: Any) -> dict[int, int]:
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    settings = load_settings(None, data_dir=args.root / "data", results_dir=args.root / "results")
    sets = prepare_data(settings, args.preset, ["base"])
    stamp = time.time_ns()
    catalog = SqlCatalog(
        "cost", uri=f"sqlite:///{args.root}/catalog-{stamp}.db", warehouse=f"file://{args.root}/wh-{stamp}"
    )
    table = get_scenario("append")().prepare(catalog, "bench", sets)
    register_set(table, sets["base"])
    table = table.refresh()
    gather, sizes = readback.gather, readback.footer_column_sizes
    timings: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(args.repeats):
        for mode in timings:
            readback.gather, readback.footer_column_sizes = (
                (gather, sizes) if mode == "with" else (_none, _no_sizes)
            )
            start = time.perf_counter()
            content = readback.read_content(table)
            timings[mode].append(time.perf_counter() - start)
    best = {mode: min(values) for mode, values in timings.items()}
    print(
        f"{args.preset}: {content.rows:,} rows, read_content best of {args.repeats}: "
        f"without statistics {best['without']:.3f} s, with {best['with']:.3f} s, "
        f"ratio {best['with'] / best['without']:.3f}"
    )


if __name__ == "__main__":  # the generator's worker processes re-import this module
    main()
