"""The downstream cost a write leaves behind: a full scan and a selective (key-range) scan of the
table, timed with fixed readers whatever the writer, so that runs compare.

The full scan is the oracle's read (harness/judge/readback.py, read_content): it loads the table,
plans it from its manifests and reads every data file a group of columns at a time, decoding on
one core while the oracle hashes on the other; `full_scan_s` is that load, plan and the reader's
own time (its waits for the oracle left out). One read serves both: a second full decode costs as
much as the first and told nothing the first did not.

The selective scan runs as a program of its own (`python -m harness.judge.scan_cost SPEC.json`,
started by the runner under the run's memory cap, so its peak is its own): pyiceberg plans it
with a row filter on the key (manifest and file pruning by statistics), then each data file is
read by row groups in bounded batches, position deletes applied, row groups whose key statistics
rule the range out skipped. pyiceberg's own `to_arrow()` would grow to 4-8 GiB at 1M x 400
(apache/iceberg-python#3036) and measure that, not the table. It always runs the harness's
pyiceberg, never a library-version variant's.

Unlike the oracle, which sets equality deletes aside and lets a reader that can apply them judge,
both scans plan as pyiceberg 0.12 does: a table holding any is the scans' recorded failure (its
reason in `scan_error`), never rows a reader must not see timed as if they were the table.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import BaseModel
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.expressions import AlwaysFalse, And, BooleanExpression, GreaterThanOrEqual, LessThanOrEqual
from pyiceberg.manifest import clear_manifest_cache
from pyiceberg.table import Table

from generators.keys import KeyRange, KeyScan, KeySpace
from generators.schema import KEY_COLUMN
from harness.base.errors import one_line
from harness.base.orphan_guard import die_with_parent_if_asked
from harness.base.results import write_whole
from harness.judge.readback import TableContent, scan_rows
from harness.model import WorkerResult
from harness.services.own_memory import high_water_mark

# The command that runs a scan (after `python`; the spec file's path follows).
SCAN_PROGRAM = ["-m", "harness.judge.scan_cost"]
SELECTIVE_FRACTION = 0.01  # the selective scan reads the first 1% of the table's key span
# The oracle's metrics carry the full scan's fields under these names until the runner records them.
FULL_SCAN_FIELDS = ("full_scan_s", "full_scan_files", "full_scan_delete_files", "full_scan_rows")
FULL_SCAN_ERROR = "full_scan_error"


class ScanSpec(BaseModel):
    catalog: dict[str, str]
    table: str
    keys: KeyRange  # the span of the key numbers the table should hold, inclusive
    key_columns: list[str] = [KEY_COLUMN]
    key_space: list[Path] = []  # ranked keys (generators/keys.py): the space they are numbered in
    result_path: Path

    def selective(self) -> KeyScan:
        """The selective scan's key range: about SELECTIVE_FRACTION of the span's keys."""
        return KeySpace(tuple(self.key_columns), tuple(self.key_space)).selective(
            self.keys, SELECTIVE_FRACTION
        )


class ScanFigures(BaseModel):
    """One scan: its time and what pyiceberg planned for it, and the rows it returned."""

    seconds: float
    data_files: int
    delete_files: int  # distinct delete files the planned tasks carry
    rows: int


class ScanReport(WorkerResult):
    """What the scan program reports; a failed scan is `status="error"` with its reason (e.g.
    equality deletes, which pyiceberg 0.12 cannot plan)."""

    selective: ScanFigures | None = None


def key_span(key_ranges: list[KeyRange]) -> KeyRange:
    """The numbers from the lowest to the highest of `key_ranges`; (0, 0) for an empty table. Its
    first SELECTIVE_FRACTION is the selective scan's range: the same for every writer of a
    scenario, and a range sorted or disjoint files can be pruned to."""
    if not key_ranges:
        return 0, 0
    return min(low for low, _ in key_ranges), max(high for _, high in key_ranges)


def key_filter(keys: KeyScan) -> BooleanExpression:
    bounds: list[BooleanExpression] = []
    for column, low, high in keys.bounds:
        if low is None or high is None:  # no key to find (an empty table)
            return AlwaysFalse()
        bounds += [GreaterThanOrEqual(column, low), LessThanOrEqual(column, high)]
    return And(*bounds) if len(bounds) > 1 else bounds[0]


def full_scan_figures(table: Table, content: TableContent) -> dict[str, Any]:
    """The full scan's fields from the oracle's read of `table` (read_content), which was that
    scan; a table with equality deletes gets pyiceberg's own refusal to plan it."""
    if content.equality_delete_files:
        return {FULL_SCAN_ERROR: f"full scan: {_planning_refusal(table)}"}
    figures = (round(content.scan_s, 4), len(content.files), content.delete_files, content.rows)
    return dict(zip(FULL_SCAN_FIELDS, figures, strict=True))


def _planning_refusal(table: Table) -> str:
    try:
        table.scan().plan_files()
    except Exception as exc:
        return one_line(exc)
    return "the table holds equality deletes, which the fixed reader does not apply"


def take_full_scan(metrics: dict[str, Any]) -> dict[str, Any]:
    """The full scan's fields taken out of the oracle's `metrics` (recorded only with the scan
    cost); an oracle that could not read the table measured none."""
    taken = {name: metrics.pop(name) for name in (*FULL_SCAN_FIELDS, FULL_SCAN_ERROR) if name in metrics}
    return taken or {FULL_SCAN_ERROR: "full scan: none, the oracle could not read the table"}


def both_scans(full: dict[str, Any], selective: dict[str, Any]) -> dict[str, Any]:
    """The record's scan fields: the full scan's (take_full_scan) and the selective's, their
    errors joined in `scan_error`."""
    errors = [full.get(FULL_SCAN_ERROR), selective.get("scan_error")]
    measured = {name: value for name, value in full.items() if name != FULL_SCAN_ERROR}
    return {**measured, **selective, "scan_error": "; ".join(filter(None, errors)) or None}


def measure_scan(catalog: Catalog, table_name: str, keys: KeyScan) -> ScanFigures:
    """Load, plan and read the rows whose key lies in `keys`, counting them."""
    clear_manifest_cache()  # each scan reads its manifests, as a fresh reader would
    start = time.perf_counter()
    table = catalog.load_table(table_name)
    tasks = list(table.scan(row_filter=key_filter(keys)).plan_files())
    rows = sum(batch.num_rows for batch in scan_rows(table, tasks, keys))
    return ScanFigures(
        seconds=round(time.perf_counter() - start, 4),
        data_files=len(tasks),
        delete_files=len({delete.file_path for task in tasks for delete in task.delete_files}),
        rows=rows,
    )


def run(spec: ScanSpec) -> ScanReport:
    try:
        catalog = load_catalog("icebench", **spec.catalog)
    except Exception as exc:
        traceback.print_exc()
        return ScanReport(status="error", error=f"scan: catalog unreachable: {one_line(exc)}")
    report = ScanReport(status="ok")
    try:
        report.selective = measure_scan(catalog, spec.table, spec.selective())
    except (MemoryError, pa.ArrowMemoryError) as exc:  # RLIMIT_AS: the cap
        report.status, report.error, report.error_kind = "error", f"selective scan: {one_line(exc)}", "memory"
    except Exception as exc:  # a table this reader cannot read: recorded, never a crash
        traceback.print_exc()
        report.status, report.error = "error", f"selective scan: {one_line(exc)}"
    report.peak_rss_bytes = high_water_mark()
    return report


def main() -> None:
    die_with_parent_if_asked()
    spec = ScanSpec.model_validate_json(Path(sys.argv[1]).read_text())
    write_whole(spec.result_path, run(spec).model_dump_json())


if __name__ == "__main__":
    main()
