"""Rows split by the table's partition spec as batches arrive, each partition's rows appended to an
open parquet file of its own and the file rolled at the table's target size: the data files of one
commit, in bounded memory. Iceberg Java's fan-out writer, for pyiceberg, whose own partitioned
append takes the whole input at once (a RecordBatchReader into a partitioned table is refused:
apache/iceberg-python#2152).

Memory holds one batch, the rows buffered for row groups (at most `buffer_bytes`: the largest
partition's buffer goes to its file first), and each open file's footer so far.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import FileIO, OutputFile, OutputStream
from pyiceberg.io.pyarrow import (
    _get_parquet_writer_kwargs,
    _to_requested_schema,
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
    pyarrow_to_schema,
)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
from pyiceberg.schema import sanitize_column_names
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.typedef import Record

from harness.base.layout import target_file_bytes
from harness.engines.writers.staged_files import StagedFiles

try:  # pyiceberg 0.12 writes field ids through its format model; older versions take none
    from pyiceberg.io.fileformat import FileFormatFactory

    FORMAT_MODEL: dict[str, object] = {"format_model": FileFormatFactory.get(FileFormat.PARQUET)}
except ImportError:  # pragma: no cover - pyiceberg < 0.12
    FORMAT_MODEL = {}

# write.parquet.row-group-size-bytes and its Iceberg default: a partition's buffered rows become a
# row group at this size (Arrow bytes, as pyiceberg measures its own target).
ROW_GROUP_BYTES_PROPERTY = "write.parquet.row-group-size-bytes"
DEFAULT_ROW_GROUP_BYTES = 128 * 2**20
MAX_BUFFER_BYTES = 512 * 2**20


def buffer_budget(cap_bytes: int | None) -> int:
    """Rows buffered for row groups, at most: a quarter of the worker's cap, 512 MiB at most."""
    return MAX_BUFFER_BYTES if cap_bytes is None else min(MAX_BUFFER_BYTES, cap_bytes // 4)


@dataclass
class _OpenFile:
    path: str
    output: OutputFile
    stream: OutputStream
    writer: pq.ParquetWriter


@dataclass
class _Partition:
    key: PartitionKey | None  # None: the unpartitioned table's one
    buffered: list[pa.Table] = field(default_factory=list)
    buffered_bytes: int = 0
    file: _OpenFile | None = None


class FanoutFiles:
    """The data files of one commit to `metadata`'s table, written as rows are added."""

    def __init__(self, metadata: TableMetadata, io: FileIO, staged: StagedFiles, buffer_bytes: int) -> None:
        self.spec = metadata.spec()
        self.schema = metadata.schema()
        self.file_schema = sanitize_column_names(self.schema)
        self.properties = metadata.properties
        self.io = io
        self.staged = staged
        self.buffer_bytes = buffer_bytes
        self.target_bytes = target_file_bytes(self.properties)
        self.row_group_bytes = int(self.properties.get(ROW_GROUP_BYTES_PROPERTY, DEFAULT_ROW_GROUP_BYTES))
        self.format_version = metadata.format_version
        self.data_files: list[DataFile] = []
        self._partitions: dict[tuple[object, ...], _Partition] = {}
        self._buffered_bytes = 0

    def add(self, batch: pa.RecordBatch) -> None:
        """Rows of the table's schema, split among their partitions' buffers."""
        for values, rows in self.split(batch):
            partition = self._partitions.get(values)
            if partition is None:
                partition = self._partitions[values] = _Partition(self._partition_key(values))
            partition.buffered.append(rows)
            partition.buffered_bytes += rows.nbytes
            self._buffered_bytes += rows.nbytes
            if partition.buffered_bytes >= self.row_group_bytes:
                self._flush(partition)
        while self._buffered_bytes > self.buffer_bytes:
            self._flush(max(self._partitions.values(), key=lambda p: p.buffered_bytes))

    def close(self) -> list[DataFile]:
        """Every buffer written and every file closed: the data files, in the order they closed."""
        for partition in self._partitions.values():
            self._flush(partition)
            self._close_file(partition)
        return self.data_files

    def split(self, batch: pa.RecordBatch) -> Iterator[tuple[tuple[object, ...], pa.Table]]:
        """The batch's rows by partition: each partition's values (as its transforms give them) and
        its rows, in the batch's order."""
        table = pa.Table.from_batches([batch])
        if self.spec.is_unpartitioned():
            yield (), table
            return
        keys = {f"_p{n}": self._transformed(table, field) for n, field in enumerate(self.spec.fields)}
        groups = (
            pa.table({**keys, "_row": np.arange(table.num_rows)})
            .group_by(list(keys), use_threads=False)
            .aggregate([("_row", "list")])
        )
        for group in range(groups.num_rows):
            values = tuple(groups[name][group].as_py() for name in keys)
            yield values, table.take(groups["_row_list"][group].values)

    def _transformed(self, table: pa.Table, partition_field: object) -> pa.Array:
        source = self.schema.find_field(partition_field.source_id)  # type: ignore[attr-defined]
        column = table.column(self.schema.find_column_name(partition_field.source_id))  # type: ignore[attr-defined]
        return partition_field.transform.pyarrow_transform(source.field_type)(column)  # type: ignore[attr-defined]

    def _partition_key(self, values: tuple[object, ...]) -> PartitionKey | None:
        if self.spec.is_unpartitioned():
            return None
        field_values = [PartitionFieldValue(f, v) for f, v in zip(self.spec.fields, values, strict=True)]
        return PartitionKey(field_values=field_values, partition_spec=self.spec, schema=self.schema)

    def _flush(self, partition: _Partition) -> None:
        """The partition's buffered rows as one row group of its open file (opened if none), the
        file closed once it reaches the target size."""
        if not partition.buffered:
            return
        rows = pa.concat_tables(partition.buffered)
        self._buffered_bytes -= partition.buffered_bytes
        partition.buffered, partition.buffered_bytes = [], 0
        # As pyiceberg writes its own files: the table's field ids, its types (string for
        # large_string), the names sanitized.
        given = pyarrow_to_schema(
            rows.schema,
            name_mapping=self.schema.name_mapping,
            downcast_ns_timestamp_to_us=True,
            format_version=self.format_version,
        )
        converted = pa.Table.from_batches(
            [
                _to_requested_schema(
                    self.file_schema,
                    given,
                    batch,
                    downcast_ns_timestamp_to_us=True,
                    include_field_ids=True,
                    **FORMAT_MODEL,  # type: ignore[arg-type]
                )
                for batch in rows.to_batches()
            ]
        )
        if partition.file is None:
            partition.file = self._open(partition.key, converted.schema)
        partition.file.writer.write_table(converted, row_group_size=converted.num_rows or None)
        if partition.file.stream.tell() >= self.target_bytes:
            self._close_file(partition)

    def _open(self, key: PartitionKey | None, schema: pa.Schema) -> _OpenFile:
        path = self.staged.new_path("fanout-", partition_key=key)
        output = self.io.new_output(path)
        stream = output.create(overwrite=False)
        writer = pq.ParquetWriter(
            stream, schema, store_decimal_as_integer=True, **_get_parquet_writer_kwargs(self.properties)
        )
        return _OpenFile(path, output, stream, writer)

    def _close_file(self, partition: _Partition) -> None:
        if (opened := partition.file) is None:
            return
        partition.file = None
        opened.writer.close()
        opened.stream.close()
        statistics = data_file_statistics_from_parquet_metadata(
            parquet_metadata=opened.writer.writer.metadata,
            stats_columns=compute_statistics_plan(self.file_schema, self.properties),
            parquet_column_mapping=parquet_path_to_id_mapping(self.file_schema),
        )
        self.data_files.append(
            DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=opened.path,
                file_format=FileFormat.PARQUET,
                partition=partition.key.partition if partition.key else Record(),
                file_size_in_bytes=len(opened.output),
                sort_order_id=None,
                spec_id=self.spec.spec_id,
                equality_ids=None,
                key_metadata=None,
                **statistics.to_serialized_dict(),
            )
        )


def fanout_data_files(
    metadata: TableMetadata,
    io: FileIO,
    staged: StagedFiles,
    batches: Iterable[pa.RecordBatch],
    buffer_bytes: int,
) -> list[DataFile]:
    """The data files of `batches` for one commit to `metadata`'s table."""
    files = FanoutFiles(metadata, io, staged, buffer_bytes)
    for batch in batches:
        files.add(batch)
    return files.close()
