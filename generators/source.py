"""A generated parquet set read as record batches of a chosen size, in constant memory."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from generators.manifest import DatasetManifest, ManifestError
from generators.place import Place, child, on_s3, parquet_file, require_set_folder
from harness.base.errors import SourceError, first_line


@dataclass(frozen=True)
class ParquetSource:
    """The files of one set, in manifest order; `limit_rows` keeps only the first rows. The set is
    a local folder or an S3 prefix (generators/place.py)."""

    directory: Place
    manifest: DatasetManifest
    batch_rows: int
    limit_rows: int | None = None

    @classmethod
    def open(cls, directory: Place, batch_rows: int, limit_rows: int | None = None) -> ParquetSource:
        """Checks the folder, its manifest and every file's footer and schema before any write."""
        require_set_folder(directory)
        try:
            manifest = DatasetManifest.load(directory)
        except ManifestError as exc:
            raise SourceError(str(exc)) from None
        source = cls(directory, manifest, batch_rows, limit_rows)
        expected = source.schema
        for path in source.paths:
            found = _read_schema(path)
            if not found.equals(expected):
                raise SourceError(
                    f"source file {path}: schema differs from {directory}/manifest.json "
                    f"({schema_difference(expected, found)})"
                )
        return source

    @property
    def paths(self) -> list[Place]:
        """Local paths, or `s3://` URIs: what an engine that reads the files itself is given."""
        return [child(self.directory, entry.name) for entry in self.manifest.files]

    @property
    def on_s3(self) -> bool:
        return on_s3(self.directory)

    @property
    def schema(self) -> pa.Schema:
        return _read_schema(self.paths[0]) if self.paths else pa.schema([])

    @property
    def rows(self) -> int:
        total = self.manifest.rows
        return total if self.limit_rows is None else min(total, self.limit_rows)

    @property
    def batch_count(self) -> int:
        return -(-self.rows // self.batch_rows)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Batches of exactly `batch_rows` rows (the last may be shorter), across file borders."""
        pending: list[pa.RecordBatch] = []
        pending_rows = 0
        remaining = self.rows
        for piece in self._file_batches():
            piece = piece.slice(0, remaining)
            remaining -= piece.num_rows
            pending.append(piece)
            pending_rows += piece.num_rows
            while pending_rows >= self.batch_rows:
                combined = pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
                yield combined.slice(0, self.batch_rows)
                rest = combined.slice(self.batch_rows)
                pending, pending_rows = ([rest], rest.num_rows) if rest.num_rows else ([], 0)
            if remaining == 0:
                break
        if pending_rows:
            yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]

    def column(self, name: str) -> Iterator[pa.Array]:
        """One column of the same rows as batches(), in the same order; the other columns are never
        read (a writer that needs only the keys reads a few MB, not the whole set)."""
        remaining = self.rows
        for piece in self._file_batches(columns=[name]):
            if remaining == 0:
                break
            piece = piece.slice(0, remaining)
            remaining -= piece.num_rows
            yield piece.column(0)

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self.batches())

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self.batches()), schema=self.schema)

    def _file_batches(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        for path in self.paths:
            try:
                with parquet_file(path) as parquet:
                    yield from row_group_batches(parquet, self.batch_rows, columns)
            except (OSError, pa.ArrowException) as exc:
                raise SourceError(f"source file {path} is unreadable: {first_line(exc)}") from None


def row_group_batches(
    parquet: pq.ParquetFile,
    batch_rows: int,
    columns: list[str] | None = None,
    use_threads: bool = False,
    row_groups: Iterable[int] | None = None,
) -> Iterator[pa.RecordBatch]:
    """A parquet file's batches (of `row_groups`, default all), read one row group at a time. One
    iter_batches call over many row groups holds far more than a row group (pyarrow 26, a file of
    35 row groups x 400 columns: ~550 MiB of Arrow memory, ~90 MiB row group by row group); a
    dataset scanner reads ahead too."""
    for row_group in range(parquet.num_row_groups) if row_groups is None else row_groups:
        yield from parquet.iter_batches(
            batch_size=batch_rows, row_groups=[row_group], columns=columns, use_threads=use_threads
        )


def _read_schema(path: Place) -> pa.Schema:
    try:
        with parquet_file(path) as parquet:
            return parquet.schema_arrow.remove_metadata()
    except FileNotFoundError:
        raise SourceError(f"source file {path} listed in manifest.json is missing") from None
    except (OSError, pa.ArrowException) as exc:
        raise SourceError(f"source file {path} is not a readable parquet file: {first_line(exc)}") from None


def schema_difference(expected: pa.Schema, found: pa.Schema) -> str:
    for field in expected:
        index = found.get_field_index(field.name)
        if index < 0:
            return f"column {field.name} is missing"
        if not found.field(index).type.equals(field.type):
            return f"column {field.name} is {found.field(index).type}, expected {field.type}"
    extra = [name for name in found.names if name not in expected.names]
    return f"unexpected columns {extra}" if extra else "column order differs"
