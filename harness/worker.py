"""The measured process: loads the table, feeds the source to one writer, reports its timings.

Started by the runner as `python -m harness.worker SPEC.json` inside the memory cap; everything
it allocates (pyarrow pools, threads, children) counts against the cap.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel
from pyiceberg.catalog import load_catalog
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.table import Table

from harness.errors import SourceError, one_line
from harness.source import ParquetSource
from harness.spark import DEFAULT_MASTER
from harness.writers import Operation, StepTimer, WriteJob, get_writer

ErrorKind = Literal["bad_input", "memory", "write"]


class WorkerSpec(BaseModel):
    catalog: dict[str, str]
    table: str
    writer: str
    operation: Operation
    key_columns: list[str]
    source_dir: Path
    batch_rows: int
    limit_rows: int | None = None
    cap_bytes: int | None = None
    spark_master: str = DEFAULT_MASTER
    started_marker: Path
    result_path: Path


class WorkerResult(BaseModel):
    status: Literal["ok", "error"]
    error: str | None = None
    error_kind: ErrorKind | None = None
    step_latencies_s: list[float] = []
    commit_latencies_s: list[float] = []
    write_s: float | None = None
    batches: int = 0
    peak_rss_bytes: int | None = None
    versions: dict[str, str] = {}


def check_schema(source: ParquetSource, table: Table, table_name: str) -> None:
    """The source must fit the table as it is: no unknown columns, no changed types."""
    table_fields = {f.name: f.type for f in schema_to_pyarrow(table.schema())}
    for field in source.schema:
        if field.name not in table_fields:
            raise SourceError(f"source {source.directory}: column {field.name} is not in table {table_name}")
        if _normalised(field.type) != _normalised(table_fields[field.name]):
            raise SourceError(
                f"source {source.directory}: column {field.name} is {field.type}, "
                f"table {table_name} has {table_fields[field.name]}"
            )


def _normalised(arrow_type: pa.DataType) -> str:
    if pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return "string"
    if pa.types.is_timestamp(arrow_type):
        return f"timestamp[{arrow_type.unit}, utc={arrow_type.tz is not None}]"
    return str(arrow_type)


def _classify(exc: BaseException) -> ErrorKind:
    if isinstance(exc, SourceError):
        return "bad_input"
    if isinstance(exc, MemoryError | pa.ArrowMemoryError):
        return "memory"
    return "write"


def run(spec: WorkerSpec) -> WorkerResult:
    writer = get_writer(spec.writer)()
    result = WorkerResult(status="ok", versions=writer.versions())
    timer = StepTimer()
    try:
        table = load_catalog("icebench", **spec.catalog).load_table(spec.table)
        source = ParquetSource.open(spec.source_dir, spec.batch_rows, spec.limit_rows)
        check_schema(source, table, spec.table)
        result.batches = source.batch_count
        spec.started_marker.touch()
        start = time.perf_counter()
        job = WriteJob(table, source, spec.operation, spec.key_columns, spec.cap_bytes, spec.spark_master)
        writer.write(job, timer)
        result.write_s = time.perf_counter() - start
    except Exception as exc:
        traceback.print_exc()
        result.status, result.error, result.error_kind = "error", one_line(exc), _classify(exc)
    result.step_latencies_s, result.commit_latencies_s = timer.steps, timer.commits
    result.peak_rss_bytes = peak_rss_bytes()
    return result


def peak_rss_bytes() -> int | None:
    """VmHWM: this process's peak resident set since exec (ru_maxrss would include the parent's
    memory at fork time)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def main() -> None:
    spec = WorkerSpec.model_validate_json(Path(sys.argv[1]).read_text())
    spec.result_path.write_text(run(spec).model_dump_json())


if __name__ == "__main__":
    main()
