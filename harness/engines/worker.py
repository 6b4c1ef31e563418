"""The measured process: loads the table, feeds the source to one writer, reports its timings.

Started by the runner as `python -m harness.engines.worker SPEC.json` inside the memory cap; everything
it allocates (pyarrow pools, threads, children) counts against the cap.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.table import Table

from generators.source import ParquetSource
from harness.base.caps import WORKER_OOM_SCORE_ADJ, set_oom_score_adj
from harness.base.errors import SourceError, one_line
from harness.base.orphan_guard import die_with_parent_if_asked
from harness.base.progress import ProgressFile
from harness.base.results import write_whole
from harness.base.settings import validate_options
from harness.engines.fileio import file_io_label
from harness.engines.maintainers import Maintainer, MaintenanceJob, get_maintainer
from harness.engines.writers import StepTimer, WriteJob, Writer, get_writer
from harness.model import (
    SIGKILL_EXIT_CODES,
    EngineOptions,
    ErrorKind,
    KillNote,
    KillPoint,
    Maintenance,
    Operation,
    WorkerResult,
    WorkerSpec,
)

EXIT_AS_SIGKILLED = SIGKILL_EXIT_CODES[1]  # what a shell or a container reports for a SIGKILLed process


class CommitRetries(logging.Handler):
    """Counts pyiceberg's commit retries: it logs this warning before each (no other trace of them)."""

    MESSAGE = "Commit failed due to a concurrent update, retrying"

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += record.getMessage().startswith(self.MESSAGE)


@dataclass
class FedRows:
    count: int = 0


@dataclass(frozen=True)
class CountedSource(ParquetSource):
    """The same batches, counting the rows handed to the writer (what it could have committed)."""

    fed: FedRows = dataclasses.field(default_factory=FedRows)
    progress: ProgressFile | None = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        for batch in super().batches():
            self.fed.count += batch.num_rows
            if self.progress is not None:
                self.progress.fed(self.fed.count)
            yield batch


@dataclass(kw_only=True)
class KillingStepTimer(StepTimer):
    """A StepTimer that SIGKILLs its own process at `note.point`: no writer needs to know.

    A SIGKILL runs no cleanup (no `finally`, no `except BaseException`), which is the point: the
    table and the files under it are left exactly as a crashed machine would leave them.
    """

    note: KillNote
    note_path: Path
    table: Table
    source: CountedSource

    @contextmanager
    def step(self) -> Iterator[None]:
        with super().step():
            yield
        self._reached("data-files")

    def timed(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in super().timed(batches):
            if self.steps:  # the consumer is done with a batch and asks for the next one
                self._reached("data-files")
            yield batch
        if self.steps:  # a one-batch source: its only step just ended
            self._reached("data-files")

    @contextmanager
    def commit(self) -> Iterator[None]:
        self._reached("before-commit")
        with super().commit():
            yield
        self.note.rows_committed = self.source.fed.count
        self.note.committed_snapshot_id = self.table.metadata.current_snapshot_id
        # A writer cannot commit rows it has not been given: once every row is fed, this commit
        # completed the operation (the only one, or the last of a commit-per-batch writer).
        if self.source.fed.count == self.source.rows:
            self._reached("after-commit")

    def missed(self) -> str:
        """Why the write ended without reaching the point (the writer never reported it)."""
        what = {
            "data-files": "reported no step through the timer",
            "before-commit": "never entered timer.commit()",
            "after-commit": "had no timer.commit() return after it had been fed every row",
        }[self.note.point]
        return f"kill point {self.note.point} never reached: the writer {what}; the write ran to its end"

    def _reached(self, point: KillPoint) -> None:
        if point != self.note.point:
            return
        self.note.rows_fed = self.source.fed.count
        self.note.step_latencies_s, self.note.commit_latencies_s = self.steps, self.commits
        self.note.peak_rss_bytes = peak_rss_bytes()
        # PID 1 (the worker in its container) ignores signals it has no handler for, even its own
        # SIGKILL; os._exit ends it as abruptly (no finally, no atexit), with a SIGKILL's code 137.
        if os.getpid() == 1:
            self.note.how = f"os._exit({EXIT_AS_SIGKILLED}) (PID 1 of its container ignores its own SIGKILL)"
        write_whole(self.note_path, self.note.model_dump_json())
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        os._exit(EXIT_AS_SIGKILLED)  # reached only as PID 1


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
    """The type as the table's Iceberg type sees it: Arrow's large and view layouts alike, at
    every level of a struct, list or map."""
    kind = arrow_type
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "string"
    if pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return "binary"
    if pa.types.is_timestamp(kind):
        return f"timestamp[{kind.unit}, utc={kind.tz is not None}]"
    if pa.types.is_struct(kind):
        fields = (kind.field(index) for index in range(kind.num_fields))
        return f"struct<{', '.join(f'{field.name}: {_normalised(field.type)}' for field in fields)}>"
    if pa.types.is_map(kind):
        return f"map<{_normalised(kind.key_type)}, {_normalised(kind.item_type)}>"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind):
        return f"list<{_normalised(kind.value_type)}>"
    return str(kind)


def _classify(exc: BaseException) -> ErrorKind:
    if isinstance(exc, SourceError):
        return "bad_input"
    if isinstance(exc, MemoryError | pa.ArrowMemoryError):
        return "memory"
    return "write"


def run(spec: WorkerSpec) -> WorkerResult:
    """The writer's operation, or the maintainer's step (spec.maintainer), timed and reported."""
    engine = get_maintainer(spec.maintainer)() if spec.maintainer else get_writer(spec.writer)()
    owner = f"maintainer {spec.maintainer}" if spec.maintainer else f"writer {spec.writer}"
    result = WorkerResult(status="ok", versions=engine.versions())
    timer = StepTimer()
    retries = CommitRetries()
    logging.getLogger("pyiceberg").addHandler(retries)
    try:
        options = validate_options(engine.options, spec.writer_options, owner)
        table = load_catalog("icebench", **spec.catalog).load_table(spec.table)
        if isinstance(engine, Maintainer):
            assert isinstance(spec.operation, Maintenance), "a maintainer takes maintenance steps"
            job = MaintenanceJob(table, spec.operation, spec.batch_rows, spec.cap_bytes, options)
            work = partial(engine.maintain, job, timer)
        else:
            work, timer = _write(spec, engine, table, options, result, timer)
        spec.started_marker.touch()
        if spec.rendezvous is not None:
            spec.rendezvous.arrive()
        start = time.perf_counter()
        work()
        result.write_s = time.perf_counter() - start
        if isinstance(timer, KillingStepTimer):  # still alive: the point never came
            result.kill_missed = timer.missed()
    except Exception as exc:
        traceback.print_exc()
        result.status, result.error, result.error_kind = "error", one_line(exc), _classify(exc)
    result.step_latencies_s, result.commit_latencies_s = timer.steps, timer.commits
    result.executors = timer.executors
    result.commit_retries = retries.count if engine.pyiceberg_commits else None
    result.peak_rss_bytes = peak_rss_bytes()
    return result


def _write(
    spec: WorkerSpec,
    writer: Writer,
    table: Table,
    options: EngineOptions,
    result: WorkerResult,
    timer: StepTimer,
) -> tuple[Callable[[], None], StepTimer]:
    """The writer's operation on the source, ready to run, and the timer it reports to (a killing
    one where the scenario asks for a kill point)."""
    assert isinstance(spec.operation, Operation), "a writer takes write operations"
    if writer.writes_through_pyiceberg_io():
        result.file_io = file_io_label(table.io)
    source = CountedSource.open(spec.source_dir, spec.batch_rows, spec.limit_rows)
    check_schema(source, table, spec.table)
    result.batches = source.batch_count
    if spec.progress_path is not None:
        source = dataclasses.replace(source, progress=ProgressFile(spec.progress_path, source.rows))
    if spec.kill_at is not None:
        timer = killing_timer(spec, result, table, source)
    job = WriteJob(table, source, spec.operation, spec.key_columns, spec.cap_bytes, options)
    return partial(writer.write, job, timer), timer


def killing_timer(
    spec: WorkerSpec, result: WorkerResult, table: Table, source: CountedSource
) -> KillingStepTimer:
    assert spec.kill_at is not None and spec.kill_note_path is not None, "a kill point needs its note"
    note = KillNote(
        point=spec.kill_at,
        rows=source.rows,
        batches=result.batches,
        versions=result.versions,
        committed_snapshot_id=table.metadata.current_snapshot_id,  # until the writer commits
    )
    return KillingStepTimer(note=note, note_path=spec.kill_note_path, table=table, source=source)


def peak_rss_bytes() -> int | None:
    """VmHWM: this process's peak resident set since exec (ru_maxrss would include the parent's
    memory at fork time)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def main() -> None:
    die_with_parent_if_asked()  # first: a worker must not go on committing for a killed harness
    set_oom_score_adj(WORKER_OOM_SCORE_ADJ)  # a full harness box kills the worker, not the harness
    # Libraries' warnings (pyiceberg's commit retries among them) go to the worker log.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    spec = WorkerSpec.model_validate_json(Path(sys.argv[1]).read_text())
    write_whole(spec.result_path, run(spec).model_dump_json())


if __name__ == "__main__":
    main()
