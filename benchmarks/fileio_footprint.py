"""What each FileIO of `--fileio` costs to install and to import (seed 2's "fast yet small"):
the distributions it needs beyond pyiceberg itself (their closure, as installed here), their MB on
disk, and the seconds a fresh interpreter takes to import pyiceberg's FileIO module (median of 5).

    .venv/bin/python benchmarks/fileio_footprint.py

The run-time side (memory, time, S3 requests of a write) is `icebench matrix --fileio ...`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.engines.fileio import FILE_IOS

IMPORT_RUNS = 5


def closure(name: str, seen: set[str] | None = None) -> set[str]:
    """`name` and every distribution it requires (markers evaluated here, no extras), as installed."""
    seen = set() if seen is None else seen
    key = canonicalize_name(name)
    if key in seen:
        return seen
    try:
        found = distribution(name)
    except PackageNotFoundError:
        return seen
    seen.add(key)
    for text in found.requires or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            closure(requirement.name, seen)
    return seen


def megabytes(names: set[str]) -> float:
    total = 0
    for name in names:
        for file in distribution(name).files or []:
            path = Path(str(file.locate()))
            if path.is_file():
                total += path.stat().st_size
    return total / 2**20


def import_seconds(module: str) -> float:
    """A fresh interpreter's time to import `module` (its own start-up subtracted)."""
    program = "import time; t = time.perf_counter(); import {}; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", program.format(module)], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(IMPORT_RUNS)
    ]
    return statistics.median(runs)


def main() -> None:
    core = closure("pyiceberg")  # pyiceberg without extras: what every FileIO sits on
    print(f"pyiceberg alone: {len(core)} distributions, {megabytes(core):.0f} MB")
    print(f"{'FileIO':<9} {'its library':<18} {'beyond pyiceberg':>17} {'MB on disk':>11} {'import s':>9}")
    for name, (impl, library) in FILE_IOS.items():
        extra = closure(library) - core
        seconds = import_seconds(impl.rsplit(".", 1)[0])
        label = f"{library} {distribution(library).version}"
        print(f"{name:<9} {label:<18} {len(extra):>17} {megabytes(extra):>11.0f} {seconds:>9.2f}")


if __name__ == "__main__":
    main()
