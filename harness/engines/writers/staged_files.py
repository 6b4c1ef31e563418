"""Parquet files a writer puts under the table location itself, for its one commit to add.

Until that commit lands, the files are this writer's alone: when the write fails first, they are
deleted, so a failed write leaves neither a new snapshot nor an orphan. The one exception is a
commit whose outcome is unknown (the request may have landed), where deleting could break the
table: the files are kept, as pyiceberg keeps its own in that case.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import PartitionKey
from pyiceberg.table import Table, Transaction

from harness.engines.writers.base import StepTimer

log = logging.getLogger(__name__)

try:  # pyiceberg 0.12: a commit refused by its conflict checks; older versions have no such checks
    from pyiceberg.exceptions import ValidationException

    NOT_LANDED: tuple[type[Exception], ...] = (CommitFailedException, ValidationException)
except ImportError:  # pragma: no cover - pyiceberg < 0.12
    NOT_LANDED = (CommitFailedException,)


class StagedFiles:
    """Files written for one commit, named `icebench-<uuid>-<tag><n>.parquet` (unique per write)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.paths: list[str] = []
        self._prefix = f"icebench-{uuid.uuid4()}"
        self._locations = table.location_provider()
        self._numbers = itertools.count()
        self._keep = False

    def new_path(self, tag: str = "", partition_key: PartitionKey | None = None) -> str:
        name = f"{self._prefix}-{tag}{next(self._numbers):05d}.parquet"
        path = self._locations.new_data_location(name, partition_key)
        self.paths.append(path)  # before anything is written: a half-written file is ours too
        return path

    def write(self, data: pa.Table, tag: str = "") -> str:
        """One parquet file holding `data`."""
        path = self.new_path(tag)
        with self.table.io.new_output(path).create(overwrite=False) as stream:
            # add_files wants decimals as INT32/INT64 where the precision allows it.
            pq.write_table(data, stream, store_decimal_as_integer=True)
        return path

    def write_batches(self, batches: Iterable[pa.RecordBatch], timer: StepTimer) -> None:
        """One file per batch, each a timed step."""
        for batch in batches:
            with timer.step():
                self.write(pa.Table.from_batches([batch]))

    @contextmanager
    def writer(self, schema: pa.Schema, tag: str = "") -> Iterator[pq.ParquetWriter]:
        """One parquet file written batch by batch (a row group per write_batch)."""
        with (
            self.table.io.new_output(self.new_path(tag)).create(overwrite=False) as stream,
            pq.ParquetWriter(stream, schema, store_decimal_as_integer=True) as writer,
        ):
            yield writer

    def adopt(self, paths: list[str]) -> None:
        """Files pyiceberg wrote for this commit (a delete's rewrites): deleted with ours on failure."""
        self.paths.extend(paths)

    def commit(self, txn: Transaction) -> None:
        """txn.commit_transaction(), noting whether a failure guarantees that nothing landed."""
        try:
            txn.commit_transaction()
        except NOT_LANDED:
            raise
        except BaseException:
            self._keep = True  # e.g. a timeout after the catalog took the request: maybe in the table
            raise

    def discard(self) -> None:
        if self._keep:
            log.warning("commit outcome unknown: %d staged files kept", len(self.paths))
            return
        for path in self.paths:
            try:
                self.table.io.delete(path)
            except Exception:  # the write's own error matters more; a leftover shows as an orphan
                log.warning("could not delete staged file %s", path, exc_info=True)
        self.paths.clear()


@contextmanager
def staged_files(table: Table) -> Iterator[StagedFiles]:
    """Files staged inside the block are deleted when it raises (nothing of them was committed)."""
    staged = StagedFiles(table)
    try:
        yield staged
    except BaseException:
        staged.discard()
        raise
