"""What a scenario is: a starting table, the workers that write to it, and the table expected after.

A scenario family (the crash-* faults, the concurrent races) carries its own protocol through the
hooks of `Scenario`: what its workers are asked (`feeds`, `spec_fields`), what a dead worker left
to say (`report_of_death`), what the table must hold after what came of them (`expectation`), and
the checks only it can make (`outcome_checks`). The runner knows no family.
"""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.io.pyarrow import parquet_file_to_data_file
from pyiceberg.table import Table, TableProperties
from pyiceberg.types import StringType

from generators.checksum import Checksum
from generators.datasets import DataSet, DataSets
from generators.manifest import DatasetManifest, key_runs
from generators.schema import EVOLVED_COLUMN
from generators.source import ParquetSource
from harness.base.layout import create_table
from harness.engines.writers.base import Writer
from harness.engines.writers.fanout_files import fanout_data_files
from harness.engines.writers.staged_files import staged_files
from harness.judge.oracle import Evidence, operation_checks, replaced_files_deleted_check
from harness.model import (
    PLAIN_LAYOUT,
    Check,
    Expectation,
    Feed,
    Operation,
    RowSource,
    TableLayout,
    WorkerEnd,
    WorkerResult,
    WorkerSpec,
)
from harness.services.iceberg_java import append_data_files


def expect_set(data: DataSet) -> Expectation:
    manifest = data.manifest
    return Expectation(
        rows=manifest.rows,
        checksum=manifest.checksum,
        key_ranges=list(manifest.key_ranges),
        sources=[RowSource(directory=data.directory)],
        **keyed_by(manifest),
    )


def expect_empty() -> Expectation:
    return Expectation(rows=0, checksum=Checksum().hex, key_ranges=[], sources=[])


def expect_upserted(base: DataSet, changes: DataSet) -> Expectation:
    """`base` with the change set `changes` upserted into it (the change set's manifest says what
    the table then holds)."""
    after = changes.manifest.expected_after_upsert
    assert after is not None, "a change set's manifest carries the expected table"
    return Expectation(
        rows=after.rows,
        checksum=after.checksum,
        key_ranges=list(after.key_ranges),
        sources=[RowSource(directory=base.directory), RowSource(directory=changes.directory)],
        **keyed_by(changes.manifest),
    )


def expect_prefix(data: DataSet, rows: int | None) -> Expectation:
    """The first `rows` rows of a set in file order (all of it for None), as a writer is fed them."""
    if rows is None or rows >= data.manifest.rows:
        return expect_set(data)
    if rows <= 0:
        return expect_empty()
    # A prefix's checksum and keys are not in the manifest (your set's keys need not follow its
    # file order), so derive them here.
    checksum, numbers = Checksum(), []
    space = data.manifest.keys
    for batch in ParquetSource.open(data.directory, 65_536, rows).batches():
        checksum.update(batch)
        numbers.append(space.numbers(batch))
    return Expectation(
        rows=rows,
        checksum=checksum.hex,
        key_ranges=key_runs(np.unique(np.concatenate(numbers))),
        sources=[RowSource(directory=data.directory, rows=rows)],
        **keyed_by(data.manifest),
    )


def keyed_by(manifest: DatasetManifest) -> dict[str, Any]:
    """An expectation's key fields: the set's key columns and the key space its ranges number."""
    return {"key_columns": list(manifest.key_columns), "key_space": list(manifest.key_space)}


def expect_both(one: Expectation, other: Expectation) -> Expectation:
    """Both sets of rows in one table (their keys must be disjoint). Ranked keys are numbered in
    the larger key space: sets derived one from another extend their base's."""
    checksum = Checksum.from_hex(one.checksum, one.rows) + Checksum.from_hex(other.checksum, other.rows)
    keyed = max((one, other), key=lambda expected: (len(expected.key_space), bool(expected.rows)))
    return Expectation(
        rows=checksum.rows,
        checksum=checksum.hex,
        key_ranges=one.key_ranges + other.key_ranges,
        gone_key_ranges=one.gone_key_ranges + other.gone_key_ranges,
        sources=None if one.sources is None or other.sources is None else one.sources + other.sources,
        key_columns=keyed.key_columns,
        key_space=keyed.key_space,
    )


class Scenario(ABC):
    """Subclasses set the class attributes and say what the table must hold afterwards."""

    name: ClassVar[str]
    description: ClassVar[str]
    operation: ClassVar[Operation]
    initial_set: ClassVar[str | None] = None  # data set loaded before the operation
    source_set: ClassVar[str]  # data set the writer under test is fed with
    # Whether the oracle can judge a run fed only a prefix of the source (`scale` needs that).
    accepts_row_limit: ClassVar[bool] = False
    # In the matrix when no scenarios are named (`make bench`, the CI gate).
    in_default_matrix: ClassVar[bool] = True
    # Fault scenarios whose source is broken on purpose: the bad input is the expected outcome.
    expects_bad_input: ClassVar[bool] = False
    # Among the scenarios runs and matrices name; False for parts of a workload (a rounds phase).
    listed: ClassVar[bool] = True

    @property
    def needs(self) -> tuple[str, ...]:
        feeds = (feed.source_set for feed in self.feeds())
        return tuple(dict.fromkeys(s for s in (self.initial_set, self.source_set, *feeds) if s))

    def feeds(self) -> tuple[Feed, ...]:
        """The workers of a run: one, fed the source set (a concurrent scenario has several)."""
        return (Feed(name="", source_set=self.source_set, operation=self.operation),)

    def unsupported_reason(self, writer: type[Writer]) -> str | None:
        """None when `writer` can run this scenario, else why not (recorded as unsupported)."""
        for operation in dict.fromkeys(feed.operation for feed in self.feeds()):
            if not writer.supports(operation):
                why = writer.lacks.get(str(operation))
                return f"{writer.name} does not support {operation}" + (f": {why}" if why else "")
        return None

    def spec_fields(self, feed: Feed, folder: Path, run_folder: Path) -> dict[str, Any]:
        """WorkerSpec fields only this scenario's family sets (a kill point, a rendezvous)."""
        return {}

    def report_of_death(self, spec: WorkerSpec, returncode: int, oom_kills: int) -> WorkerResult | None:
        """What a worker that left no result still tells (a fault scenario's note); None: nothing."""
        return None

    def expectation(self, sets: DataSets, ends: list[WorkerEnd], limit_rows: int | None) -> Expectation:
        """The table after the run: as promised when every worker succeeded, else untouched."""
        if all(end.outcome.status == "ok" for end in ends):
            return self.expected_after(sets, limit_rows)
        return self.expected_before(sets)

    def outcome_checks(self, evidence: Evidence, ends: list[WorkerEnd], sets: DataSets) -> list[Check]:
        """The checks of how the operation ended (the oracle's state checks come first)."""
        checks = operation_checks(evidence)
        if self.operation == Operation.REPLACE and evidence.error is None:
            checks.append(replaced_files_deleted_check(evidence))
        return checks

    def table_identifier(self, namespace: str) -> str:
        return f"{namespace}.{self.name.replace('-', '_')}"

    def table_schema(self, sets: DataSets) -> pa.Schema:
        """The schema the table is created with: the initial set's, else the source's."""
        schema_set = sets[self.initial_set or self.source_set]
        return ParquetSource.open(schema_set.directory, batch_rows=1).schema

    def expected_schema(self, sets: DataSets) -> pa.Schema:
        """The table's schema after the run: as created, plus the evolutions the scenario makes."""
        return self.table_schema(sets)

    def prepare(
        self, catalog: Catalog, namespace: str, sets: DataSets, layout: TableLayout = PLAIN_LAYOUT
    ) -> Table:
        """Creates the table, laid out as asked, and loads the initial set with one neutral commit."""
        catalog.create_namespace_if_not_exists(namespace)
        table = create_table(catalog, self.table_identifier(namespace), self.table_schema(sets), layout)
        if self.initial_set:
            register_set(table, sets[self.initial_set])
        return table

    def expected_before(self, sets: DataSets) -> Expectation:
        return expect_set(sets[self.initial_set]) if self.initial_set else expect_empty()

    @abstractmethod
    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        """The table the operation must leave (fed with only the first `limit_rows` rows, if given)."""


def register_set(table: Table, data: DataSet) -> None:
    """Puts a generated set's files under the table location (hard links when local) and adds them;
    into a partitioned table, its rows split by partition (add_files takes a file of one partition)."""
    if not table.spec().is_unpartitioned():
        load_partitioned(table, data)
        return
    locations = table.location_provider()
    paths = []
    for entry in data.manifest.files:
        # Named after the set too: two sets registered in one table must not share a file name.
        target = locations.new_data_location(f"initial-{data.directory.name}-{entry.name}")
        _place_file(data.directory / entry.name, target, table)
        paths.append(target)
    if writes_format(table):
        table.add_files(paths, check_duplicate_files=False)
    else:  # as add_files does, the files' columns named by a name mapping (they carry no field ids)
        data_files = [parquet_file_to_data_file(table.io, table.metadata, path) for path in paths]
        mapping = (
            {}
            if table.metadata.name_mapping()
            else {TableProperties.DEFAULT_NAME_MAPPING: table.schema().name_mapping.model_dump_json()}
        )
        append_data_files(table, data_files, mapping)


def load_partitioned(table: Table, data: DataSet) -> None:
    """A set's rows written by partition (the fan-out writer's files) and added in one fast append."""
    with staged_files(table) as staged:
        batches = ParquetSource.open(data.directory, LOAD_BATCH_ROWS).batches()
        data_files = fanout_data_files(table.metadata, table.io, staged, batches, LOAD_BUFFER_BYTES)
        if not writes_format(table):
            append_data_files(table, list(data_files))
            return
        txn = table.transaction()
        with txn.update_snapshot().fast_append() as append:
            for data_file in data_files:
                append.append_data_file(data_file)
        staged.commit(txn)


def writes_format(table: Table) -> bool:
    """pyiceberg 0.12 writes v1 and v2 tables; a v3 table's set-up is committed by Iceberg Java
    (it refuses to write v3 manifests: apache/iceberg-python#1551)."""
    return table.format_version <= 2


def _place_file(source: Path, target: str, table: Table) -> None:
    if target.startswith("file:"):
        local = Path(urlparse(target).path)
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, local)
            return
        except FileExistsError:
            raise  # never write through it: it may be a hard link to a cached generated set
        except OSError:
            pass  # another filesystem: copy
    with source.open("rb") as src, table.io.new_output(target).create(overwrite=False) as dst:
        shutil.copyfileobj(src, dst, length=8 * 2**20)


# The initial set into a partitioned table, in the harness's own memory (in the user's box with the
# workers): 10,000 rows a batch (60 MB of `wide`), a quarter GiB of rows buffered for row groups.
LOAD_BATCH_ROWS = 10_000
LOAD_BUFFER_BYTES = 256 * 2**20
EVOLVED_FIELD = pa.field(EVOLVED_COLUMN, pa.string())


def add_evolved_column(table: Table) -> None:
    with table.update_schema() as update:
        update.add_column(EVOLVED_FIELD.name, StringType())
