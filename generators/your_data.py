"""Your own parquet set as a data set: a file, a folder or a glob, no manifest of icebench's needed.

What the oracle must know of it (rows, schema, the checksum of every column, the key ranges, each
file's CRC-32) is derived once, in bounded memory (a batch at a time, 8 bytes a key), into a
folder of the data cache named by the files' paths, sizes and mtimes and the key: a file changed
since is a new set. The set's own files are read where they are, never copied.

The key must be one integer column, unique and never null: what icebench's key checks take so far
(issue 23 goes on to strings, dates, decimals and composite keys). Anything else is refused in
one line before a writer runs: a harness limit, never a writer's failure.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from generators.checksum import CHECKSUM_VERSION, Checksum
from generators.datasets import DataSet, ProgressFactory, generation_lock
from generators.manifest import (
    DatasetManifest,
    ManifestError,
    file_entry,
    key_runs,
    repeated_keys,
    schema_fields,
)
from generators.source import row_group_batches, schema_difference
from harness.base.errors import SourceError, first_line

SOURCES_FOLDER = "sources"  # under the data cache
READ_ROWS = 65_536
# Keys held as inclusive runs of consecutive integers; a key set of more runs than this (sparse
# keys) is beyond what the key checks take so far.
MAX_KEY_RUNS = 100_000


def your_data(spec: str, key: str, cache_root: Path, progress: ProgressFactory | None = None) -> DataSet:
    """The parquet files `spec` names (a file, a folder's *.parquet, or a glob) keyed by `key`."""
    files = source_files(spec)
    folder = cache_root / SOURCES_FOLDER / _identity(spec, files, key)
    with generation_lock(folder):  # another invocation may be deriving the same set
        try:
            return DataSet(folder, DatasetManifest.load(folder))
        except ManifestError:
            pass
        staging = folder.with_name(f".{folder.name}.partial-{os.getpid()}")
        staging.mkdir(parents=True, exist_ok=True)
        try:
            _derive(files, key, progress).save(staging)
            shutil.rmtree(folder, ignore_errors=True)  # a half-made one of a process that died
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return DataSet(folder, DatasetManifest.load(folder))


def source_files(spec: str) -> list[Path]:
    """The parquet files of a file, a folder (its *.parquet, subfolders too) or a glob, sorted."""
    if not spec.strip():
        raise SourceError("source: the path is empty; give a parquet file, a folder or a glob")
    path = Path(spec).expanduser()
    if path.is_file():
        return [path.resolve()]
    if path.is_dir():
        found = sorted(
            p for p in path.rglob("*.parquet") if not any(part.startswith(".") for part in p.parts)
        )
        if not found:
            raise SourceError(f"source {spec}: no *.parquet file in that folder")
        return [p.resolve() for p in found]
    if glob.has_magic(spec):
        found = sorted(Path(p).resolve() for p in glob.glob(os.path.expanduser(spec), recursive=True))
        files = [p for p in found if p.is_file()]
        if not files:
            raise SourceError(f"source {spec}: the pattern matches no file")
        return files
    raise SourceError(f"source {spec} does not exist")


def _identity(spec: str, files: list[Path], key: str) -> str:
    """The cache folder's name: what the set is, and a digest of what its files are now."""
    stats = [(str(path), (stat := path.stat()).st_size, stat.st_mtime_ns) for path in files]
    digest = hashlib.sha256(json.dumps([stats, key, CHECKSUM_VERSION]).encode()).hexdigest()[:16]
    label = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(spec.rstrip("/*")).name)[:40]
    return f"{label or 'source'}-{digest}"


def _derive(files: list[Path], key: str, progress: ProgressFactory | None) -> DatasetManifest:
    schema, rows_per_file = _schema_and_rows(files)
    _check_key(files[0], schema, key)
    advance = progress(f"read {files[0].parent.name}", sum(rows_per_file)) if progress else None
    checksum, keys = Checksum(), []
    for path in files:
        try:
            with pq.ParquetFile(path) as parquet:
                for batch in row_group_batches(parquet, READ_ROWS, use_threads=True):
                    _hash_into(checksum, path, batch)
                    keys.append(_keys_of(path, batch.column(key), key))
                    if advance:
                        advance(batch.num_rows)
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(f"source file {path} is unreadable: {first_line(exc)}") from None
    sorted_keys = np.sort(np.concatenate(keys)) if keys else np.empty(0, np.int64)
    _check_unique(sorted_keys, key)
    return DatasetManifest(
        kind="base",
        rows=checksum.rows,
        columns=len(schema),
        seed=0,
        schema_fields=schema_fields(schema),
        files=[
            file_entry(path, rows, name=str(path)) for path, rows in zip(files, rows_per_file, strict=True)
        ],
        checksum=checksum.hex,
        checksum_version=CHECKSUM_VERSION,
        key_column=key,
        key_ranges=_key_runs(sorted_keys, key),
    )


def _hash_into(checksum: Checksum, path: Path, batch: pa.RecordBatch) -> None:
    try:
        checksum.update(batch)
    except TypeError as exc:  # a type the checksum does not take: the harness's limit, said as such
        raise SourceError(f"source file {path}: the content {exc}") from None


def _schema_and_rows(files: list[Path]) -> tuple[pa.Schema, list[int]]:
    schema, rows = None, []
    for path in files:
        try:
            metadata = pq.read_metadata(path)
            found = metadata.schema.to_arrow_schema().remove_metadata()
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(
                f"source file {path} is not a readable parquet file: {first_line(exc)}"
            ) from None
        if schema is None:
            schema = found
        elif not found.equals(schema):
            difference = schema_difference(schema, found)
            raise SourceError(f"source file {path}: its schema differs from {files[0]}'s ({difference})")
        rows.append(metadata.num_rows)
    assert schema is not None
    return schema, rows


def _check_key(path: Path, schema: pa.Schema, key: str) -> None:
    if key not in schema.names:
        shown = ", ".join(schema.names[:8]) + (", ..." if len(schema) > 8 else "")
        raise SourceError(f"key column {key} is not in {path} (its columns: {shown}); name it with --key COL")
    kind = schema.field(key).type
    if not pa.types.is_integer(kind):
        raise SourceError(
            f"key column {key} is {kind}: icebench takes a key of one integer column so far "
            "(strings, dates, decimals and composite keys are issue 23's next step)"
        )


def _keys_of(path: Path, column: pa.Array, key: str) -> np.ndarray:
    if column.null_count:
        raise SourceError(f"key column {key} holds nulls in {path}: every row needs a key")
    return column.to_numpy(zero_copy_only=False).astype(np.int64)


def _check_unique(keys: np.ndarray, key: str) -> None:
    distinct, _, smallest = repeated_keys(keys)
    if distinct:
        raise SourceError(
            f"key column {key} is not unique: {distinct:,} keys repeat (the first {smallest}); "
            "a key names one row"
        )


def _key_runs(sorted_keys: np.ndarray, key: str) -> list[tuple[int, int]]:
    runs = int(np.count_nonzero(np.diff(sorted_keys) != 1)) + 1 if len(sorted_keys) else 0
    if runs > MAX_KEY_RUNS:
        raise SourceError(
            f"key column {key} is too sparse: its keys fall in {runs:,} runs of consecutive "
            f"integers, icebench's key checks take {MAX_KEY_RUNS:,} so far"
        )
    return key_runs(sorted_keys)
