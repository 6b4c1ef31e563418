"""The downstream cost a write leaves behind: a full scan and a selective (key-range) scan of the
table, timed with one fixed reader whatever the writer, so that runs compare.

The reader is the oracle's streaming pyiceberg read (harness/judge/readback.py): pyiceberg plans
the scan (manifest and file pruning by statistics, with the row filter for the selective scan),
then each data file is read in bounded batches, position deletes applied; row groups whose key
statistics rule the range out are skipped. pyiceberg's own `to_arrow()` would grow to 4-8 GiB at
1M x 400 (apache/iceberg-python#3036) and measure that, not the table.

Each scan starts from loading the table (its metadata file grows with the snapshots a writer
left) and includes planning (its manifests) and reading (its files and delete files). It runs as
a program of its own (`python -m harness.judge.scan_cost SPEC.json`, started by the runner under
the run's memory cap), so its peak is its own and the harness's memory stays clean; it always runs
the harness's pyiceberg, never a library-version variant's.

Unlike the oracle, which sets equality deletes aside and lets a reader that can apply them judge,
the scan plans as pyiceberg 0.12 does: a table holding any is the scan's recorded failure (its
reason in `scan_error`), never rows a reader must not see timed as if they were the table.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

import pyarrow as pa
from pydantic import BaseModel
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression, GreaterThanOrEqual, LessThanOrEqual
from pyiceberg.manifest import clear_manifest_cache

from generators.schema import KEY_COLUMN
from harness.base.errors import one_line
from harness.base.orphan_guard import die_with_parent_if_asked
from harness.base.results import write_whole
from harness.judge.readback import KeyRange, scan_rows
from harness.model import WorkerResult
from harness.services.own_memory import high_water_mark

# The command that runs a scan (after `python`; the spec file's path follows).
SCAN_PROGRAM = ["-m", "harness.judge.scan_cost"]
SELECTIVE_FRACTION = 0.01  # the selective scan reads the first 1% of the table's key span


class ScanSpec(BaseModel):
    catalog: dict[str, str]
    table: str
    keys: KeyRange  # the selective scan's key range, inclusive
    result_path: Path


class ScanFigures(BaseModel):
    """One scan: its time and what pyiceberg planned for it, and the rows it returned."""

    seconds: float
    data_files: int
    delete_files: int  # distinct delete files the planned tasks carry
    rows: int


class ScanReport(WorkerResult):
    """What the scan program reports; a failed scan is `status="error"` with its reason (e.g.
    equality deletes, which pyiceberg 0.12 cannot plan), the other scan still measured."""

    full: ScanFigures | None = None
    selective: ScanFigures | None = None


def selective_keys(key_ranges: list[KeyRange], fraction: float = SELECTIVE_FRACTION) -> KeyRange:
    """The first `fraction` of the span of `key_ranges` (at least one key): the same for every
    writer of a scenario, and a range sorted or disjoint files can be pruned to."""
    low = min(low for low, _ in key_ranges)
    high = max(high for _, high in key_ranges)
    return low, low + max(1, round((high - low + 1) * fraction)) - 1


def key_filter(keys: KeyRange) -> BooleanExpression:
    return And(GreaterThanOrEqual(KEY_COLUMN, keys[0]), LessThanOrEqual(KEY_COLUMN, keys[1]))


def measure_scan(catalog: Catalog, table_name: str, keys: KeyRange | None = None) -> ScanFigures:
    """Load, plan and read the table (only the rows of `keys`, if given), counting the rows."""
    clear_manifest_cache()  # each scan reads its manifests, as a fresh reader would
    start = time.perf_counter()
    table = catalog.load_table(table_name)
    tasks = list(table.scan(row_filter=AlwaysTrue() if keys is None else key_filter(keys)).plan_files())
    rows = sum(batch.num_rows for batch in scan_rows(table, tasks, keys))
    return ScanFigures(
        seconds=round(time.perf_counter() - start, 4),
        data_files=len(tasks),
        delete_files=len({delete.file_path for task in tasks for delete in task.delete_files}),
        rows=rows,
    )


def run(spec: ScanSpec) -> ScanReport:
    report = ScanReport(status="ok")
    errors = []
    try:
        catalog = load_catalog("icebench", **spec.catalog)
    except Exception as exc:
        traceback.print_exc()
        return ScanReport(status="error", error=f"scan: catalog unreachable: {one_line(exc)}")
    for name, keys in (("full", None), ("selective", spec.keys)):
        try:
            setattr(report, name, measure_scan(catalog, spec.table, keys))
        except (MemoryError, pa.ArrowMemoryError) as exc:  # RLIMIT_AS: the cap
            report.error_kind = "memory"
            errors.append(f"{name} scan: {one_line(exc)}")
        except Exception as exc:  # a table this reader cannot read: recorded, never a crash
            traceback.print_exc()
            errors.append(f"{name} scan: {one_line(exc)}")
    if errors:
        report.status, report.error = "error", "; ".join(errors)
    report.peak_rss_bytes = high_water_mark()
    return report


def main() -> None:
    die_with_parent_if_asked()
    spec = ScanSpec.model_validate_json(Path(sys.argv[1]).read_text())
    write_whole(spec.result_path, run(spec).model_dump_json())


if __name__ == "__main__":
    main()
