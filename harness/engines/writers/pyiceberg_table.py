"""Baseline: materialise the whole source as one Arrow table, then one pyiceberg call."""

from collections.abc import Callable
from functools import partial

import pyarrow as pa

from harness.engines.writers.base import StepTimer, WriteJob, Writer


class PyicebergTable(Writer):
    name = "pyiceberg-table"
    description = "whole source as one pa.Table; table.append / overwrite / upsert"
    single_commit = True

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        _whole_source(job, timer, job.table.append)

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        _whole_source(job, timer, job.table.overwrite)

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        _whole_source(job, timer, partial(job.table.upsert, join_cols=job.key_columns))


def _whole_source(job: WriteJob, timer: StepTimer, call: Callable[[pa.Table], object]) -> None:
    with timer.step():
        data = job.source.read_all()
    with timer.commit():
        call(data)
