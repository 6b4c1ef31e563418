"""Your own parquet set as a data set: a file, a folder or a glob, no manifest of icebench's needed.

What the oracle must know of it (rows, schema, the checksum of every column, its keys, each file's
CRC-32) is derived once, in bounded memory (a batch at a time, 16 bytes a key), into a folder of
the data cache named by the files' paths, sizes and mtimes and the key: a file changed since is a
new set. The set's own files are read where they are, never copied.

The key is one column or several, of any type Iceberg takes for an identifier (not float, not
nested), unique and never null. Its keys are ranked (generators/keys.py): the set's keys file
(`keys.parquet`, the key columns in file order) numbers them. A set derived against a base (your
change set, your replacement) numbers the base's keys as the base does and its new keys after them.
Anything icebench cannot take is refused in one line before a writer runs: a harness limit, never
a writer's failure.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from generators.checksum import CHECKSUM_VERSION, Checksum
from generators.datasets import DataSet, ProgressFactory, generation_lock
from generators.keys import KEY_SPACE_FILE, KeySpace, describe_values, fingerprints
from generators.manifest import (
    DatasetManifest,
    Expected,
    ManifestError,
    file_entry,
    key_runs,
    merge_key_ranges,
    repeated_keys,
    schema_fields,
)
from generators.source import row_group_batches, schema_difference
from harness.base.errors import SourceError, first_line

SOURCES_FOLDER = "sources"  # under the data cache
READ_ROWS = 65_536


def your_data(
    spec: str,
    key: list[str],
    cache_root: Path,
    progress: ProgressFactory | None = None,
    base: DataSet | None = None,
    kind: Literal["base", "changes"] = "base",
) -> DataSet:
    """The parquet files `spec` names (a file, a folder's *.parquet, or a glob) keyed by the
    columns `key`; with `base`, numbered in its key space (a change set of it: `kind="changes"`)."""
    files = source_files(spec)
    against = f"{base.directory.name}-{kind}" if base else ""
    folder = cache_root / SOURCES_FOLDER / _identity(spec, files, [*key, against])
    return derived_set(folder, lambda _: files, key, progress, base, kind)


def derived_set(
    folder: Path,
    make_files: Callable[[Path], list[Path]],
    key: list[str],
    progress: ProgressFactory | None,
    base: DataSet | None = None,
    kind: Literal["base", "changes"] = "base",
) -> DataSet:
    """The set in `folder`, made once: `make_files(staging)` gives its parquet files (yours, or
    files it writes into the staging folder, kept under their names there), then its manifest is
    derived; a set half-made by a process that died is made again."""
    with generation_lock(folder):  # another invocation may be deriving the same set
        try:
            return DataSet(folder, DatasetManifest.load(folder))
        except ManifestError:
            pass
        staging = folder.with_name(f".{folder.name}.partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            files = make_files(staging)
            _derive(files, key, _Keying(folder, staging, base, kind), progress).save(staging)
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
        found = sorted(  # hidden files and folders inside it left out, not a hidden folder it is in
            p
            for p in path.rglob("*.parquet")
            if not any(part.startswith(".") for part in p.relative_to(path).parts)
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


def _identity(spec: str, files: list[Path], key: list[str]) -> str:
    """The cache folder's name: what the set is, and a digest of what its files are now."""
    stats = [(str(path), (stat := path.stat()).st_size, stat.st_mtime_ns) for path in files]
    digest = hashlib.sha256(json.dumps([stats, key, CHECKSUM_VERSION]).encode()).hexdigest()[:16]
    label = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(spec.rstrip("/*")).name)[:40]
    return f"{label or 'source'}-{digest}"


@dataclass
class _Keying:
    """Where a set's keys get their numbers: the base's space, then the set's own new keys
    (`keys.parquet`, written in the staging folder as they are met, named by the final one)."""

    folder: Path
    staging: Path
    base: DataSet | None
    kind: Literal["base", "changes"]
    new_keys: int = 0
    writer: pq.ParquetWriter | None = None

    @cached_property
    def base_space(self) -> KeySpace | None:
        """One for the whole derivation: its fingerprint index is built once, not per batch."""
        return self.base.manifest.keys if self.base else None

    def numbers(self, keys: pa.Table) -> np.ndarray:
        """The key numbers of `keys` (the key columns of a batch, no nulls): the base's where it
        has the key, else the next new ones, the keys written to this set's keys file."""
        base = self.base_space
        if base is not None and not base.ranked:  # a generated set's integer keys: their own numbers
            return base.numbers(keys)
        numbers = base.numbers(keys) if base is not None else np.full(keys.num_rows, -1, np.int64)
        offset = len(base) if base is not None else 0
        new = numbers < 0
        if count := int(np.count_nonzero(new)):
            numbers[new] = offset + self.new_keys + np.arange(count)
            self.new_keys += count
            fresh = keys.filter(pa.array(new))
            self.writer = self.writer or pq.ParquetWriter(self.staging / KEY_SPACE_FILE, fresh.schema)
            self.writer.write_table(fresh)
        return numbers

    def space(self) -> list[Path]:
        if self.writer is not None:
            self.writer.close()
        inherited = list(self.base.manifest.key_space) if self.base else []
        return inherited + ([self.folder / KEY_SPACE_FILE] if self.new_keys else [])


def _derive(
    files: list[Path], key: list[str], keying: _Keying, progress: ProgressFactory | None
) -> DatasetManifest:
    schema, rows_per_file = _schema_and_rows(files)
    if not sum(rows_per_file):  # a table of nothing judges nothing; an empty change set changes nothing
        what = "change set" if keying.kind == "changes" else "source"
        where = files[0] if len(files) == 1 else f"{files[0].parent} ({len(files)} files)"
        raise SourceError(f"{what} {where} holds no rows")
    _check_key(files[0], schema, key)
    if keying.base is not None:
        _check_like_base(files[0], schema, key, keying.base)
    advance = progress(f"read {files[0].parent.name}", sum(rows_per_file)) if progress else None
    checksum, numbers, prints = Checksum(), [], []
    for path in files:
        try:
            with pq.ParquetFile(path) as parquet:
                for batch in row_group_batches(parquet, READ_ROWS, use_threads=True):
                    _hash_into(checksum, path, batch)
                    keys = _keys_of(path, batch, key)
                    prints.append(fingerprints(keys, key))
                    numbers.append(keying.numbers(keys))
                    if advance:
                        advance(batch.num_rows)
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(f"source file {path} is unreadable: {first_line(exc)}") from None
    _check_unique(files, key, np.concatenate(prints) if prints else np.empty(0, np.uint64))
    all_numbers = np.unique(np.concatenate(numbers)) if numbers else np.empty(0, np.int64)
    key_space = keying.space()
    manifest = DatasetManifest(
        kind="base",
        rows=checksum.rows,
        columns=len(schema),
        seed=0,
        schema_fields=schema_fields(schema),
        files=[
            file_entry(path, rows, name=_entry_name(path, keying.staging))
            for path, rows in zip(files, rows_per_file, strict=True)
        ],
        checksum=checksum.hex,
        checksum_version=CHECKSUM_VERSION,
        key_columns=key,
        key_space=key_space,
        key_ranges=key_runs(all_numbers),
    )
    if keying.kind == "changes" and keying.base is not None:
        return _as_changes(manifest, checksum, all_numbers, keying.base, progress)
    return manifest


def _entry_name(path: Path, staging: Path) -> str:
    """A file the set wrote by its name in its folder; your own files by their absolute paths."""
    return path.name if path.parent == staging else str(path)


def _as_changes(
    manifest: DatasetManifest,
    written: Checksum,
    numbers: np.ndarray,
    base: DataSet,
    progress: ProgressFactory | None,
) -> DatasetManifest:
    """`manifest` as a change set of `base`: the base rows its keys replace are read (a pass over
    the base, hashing only those rows) to know the table after the upsert."""
    space, replaced = base.manifest.keys, Checksum()
    advance = progress(f"read {base.directory.name}", base.manifest.rows) if progress else None
    for path in base.manifest.file_paths(base.directory):
        with pq.ParquetFile(path) as parquet:
            for batch in row_group_batches(parquet, READ_ROWS, use_threads=True):
                hit = np.isin(space.numbers(batch.select(manifest.key_columns)), numbers, assume_unique=False)
                if hit.any():
                    replaced.update(batch.filter(pa.array(hit)))
                if advance:
                    advance(batch.num_rows)
    after = Checksum.from_hex(base.manifest.checksum, base.manifest.rows) - replaced + written
    return manifest.model_copy(
        update={
            "kind": "changes",
            "base_checksum": base.manifest.checksum,
            "updates": replaced.rows,
            "inserts": written.rows - replaced.rows,
            "expected_after_upsert": Expected(
                rows=after.rows,
                checksum=after.hex,
                key_ranges=merge_key_ranges(base.manifest.key_ranges + manifest.key_ranges),
            ),
        }
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
            if twice := _repeated_name(list(found)):
                raise SourceError(
                    f"source file {path}: two columns are named {twice} (a table's names are unique)"
                )
        elif not found.equals(schema):
            difference = schema_difference(schema, found)
            raise SourceError(f"source file {path}: its schema differs from {files[0]}'s ({difference})")
        rows.append(metadata.num_rows)
    assert schema is not None
    return schema, rows


def _repeated_name(fields: list[pa.Field], parent: str = "") -> str | None:
    """The first name given twice among `fields` or inside a struct of them, dotted."""
    names = [field.name for field in fields]
    if twice := next((name for name in names if names.count(name) > 1), None):
        return f"{parent}{twice}"
    for field in fields:
        inner = (
            _repeated_name(list(field.type), f"{parent}{field.name}.")
            if pa.types.is_struct(field.type)
            else None
        )
        if inner:
            return inner
    return None


def _check_key(path: Path, schema: pa.Schema, key: list[str]) -> None:
    if not key or len(set(key)) != len(key):
        raise SourceError(f"--key {','.join(key)}: name each key column once (--key COL[,COL])")
    for name in key:
        if name not in schema.names:
            shown = ", ".join(schema.names[:8]) + (", ..." if len(schema) > 8 else "")
            raise SourceError(
                f"key column {name} is not in {path} (its columns: {shown}); name it with --key COL"
            )
        kind = schema.field(name).type
        if pa.types.is_floating(kind) or pa.types.is_nested(kind) or pa.types.is_dictionary(kind):
            raise SourceError(
                f"key column {name} is {kind}: an Iceberg key (identifier field) is a primitive "
                "column, not a float and not nested"
            )


def _check_like_base(path: Path, schema: pa.Schema, key: list[str], base: DataSet) -> None:
    """A set numbered against a base must share its key, and its schema (a table holds both)."""
    if key != list(base.manifest.key_columns):
        keyed = ",".join(base.manifest.key_columns)
        raise SourceError(f"{path} is keyed by {','.join(key)}, its base {base.directory} by {keyed}")
    base_schema = pq.read_schema(base.manifest.file_paths(base.directory)[0]).remove_metadata()
    if not base_schema.equals(schema):
        difference = schema_difference(base_schema, schema)
        raise SourceError(f"{path}: its schema differs from its base's ({difference})")


def _keys_of(path: Path, batch: pa.RecordBatch, key: list[str]) -> pa.Table:
    keys = pa.table({name: batch.column(name) for name in key})
    if any(keys.column(name).null_count for name in key):
        null = next(name for name in key if keys.column(name).null_count)
        raise SourceError(f"key column {null} holds nulls in {path}: every row needs a key")
    return keys


def _check_unique(files: list[Path], key: list[str], prints: np.ndarray) -> None:
    distinct, _, first = repeated_keys(prints.view(np.int64))
    if not distinct:
        return
    raise SourceError(
        f"key {','.join(key)} is not unique: {distinct:,} keys repeat (one is "
        f"{_key_with_print(files, key, np.int64(first).view(np.uint64))}); a key names one row"
    )


def _key_with_print(files: list[Path], key: list[str], wanted: np.uint64) -> str:
    """The values of the key whose fingerprint is `wanted` (read again, only on a refusal)."""
    for path in files:
        with pq.ParquetFile(path) as parquet:
            for batch in parquet.iter_batches(READ_ROWS, columns=key):
                found = np.flatnonzero(fingerprints(batch, key) == wanted)
                if len(found):
                    return describe_values(batch.slice(int(found[0]), 1).to_pylist()[0])
    return "unknown"
