"""`manifest.json`: what a generated data set contains and what reading it back must give."""

from __future__ import annotations

import json
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Self

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from generators.keys import KeySpace
from generators.place import Place, child, exists, filesystem, on_s3, read_bytes, write_bytes
from generators.schema import KEY_COLUMN

MANIFEST_FILE = "manifest.json"
# The files whose CRC-32 matched, as they stood then (file_mismatch): those unchanged since are
# not read again.
VERIFIED_FILE = ".verified.json"
_READ_CHUNK = 8 * 2**20
KeyRange = tuple[int, int]  # inclusive


class ManifestError(ValueError):
    """A data set folder has no readable manifest."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldSpec(_Model):
    name: str
    type: str  # str() of the Arrow type


class FileEntry(_Model):
    name: str
    rows: int
    bytes: int
    # CRC-32 of the whole file, to find a file changed since it was generated. Not a defence
    # against forgery: whoever edits a file can edit this manifest.
    crc32: str | None = None


def file_crc32(path: Place) -> str:
    crc = 0
    if on_s3(path):
        found, key = filesystem(path)
        with found.open_input_stream(key) as stream:
            while chunk := stream.read(_READ_CHUNK):
                crc = zlib.crc32(chunk, crc)
        return f"{crc:08x}"
    buffer = bytearray(_READ_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as handle:
        while read := handle.readinto(buffer):
            crc = zlib.crc32(view[:read], crc)  # releases the GIL: files are checked in threads
    return f"{crc:08x}"


def file_entry(path: Path, rows: int, name: str | None = None) -> FileEntry:
    """What a manifest records of a file: its rows, size and CRC-32, under `name` (by default the
    file's name in the set's folder)."""
    return FileEntry(name=name or path.name, rows=rows, bytes=path.stat().st_size, crc32=file_crc32(path))


def _file_state(path: Path, entry: FileEntry) -> list[int | str]:
    """What changes whenever the file is written or replaced through the file system (a ctime
    cannot be set back), with the CRC-32 it was checked against."""
    stat = path.stat()
    return [entry.crc32 or "", stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def _read_verified(directory: Path) -> dict[str, object]:
    try:
        found = json.loads((directory / VERIFIED_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _write_verified(directory: Path, verified: dict[str, object]) -> None:
    """Best effort (a read-only or full folder): without it the files are only read again."""
    staging = directory / f"{VERIFIED_FILE}.{os.getpid()}"
    try:
        staging.write_text(json.dumps(verified))
        staging.replace(directory / VERIFIED_FILE)
    except OSError:
        staging.unlink(missing_ok=True)


def _cheap_mismatch(path: Place, entry: FileEntry) -> str | None:
    """Existence, size and the footer's row count, before any byte of data is read."""
    found, key = filesystem(path)
    info = found.get_file_info(key)
    if info.type != pafs.FileType.File:
        return f"{path} is missing"
    if (size := info.size) != entry.bytes:
        return f"{path} has {size} bytes, its manifest says {entry.bytes}"
    try:
        rows = pq.read_metadata(key, filesystem=found).num_rows
    except (OSError, pa.ArrowException) as exc:
        return f"{path} has no readable parquet footer ({str(exc).splitlines()[0] if str(exc) else exc})"
    if rows != entry.rows:
        return f"{path} holds {rows} rows, its manifest says {entry.rows}"
    return None


class Expected(_Model):
    """Table content after upserting a change set into its base, keyed on the key column."""

    rows: int
    checksum: str
    key_ranges: list[KeyRange]


class DatasetManifest(_Model):
    kind: Literal["base", "changes"]
    rows: int
    columns: int
    seed: int
    schema_fields: list[FieldSpec]
    files: list[FileEntry]
    checksum: str
    # The generators.checksum algorithm of every checksum here; manifests from before it was
    # recorded hold version 1's.
    checksum_version: int = 1
    key_columns: list[str] = [KEY_COLUMN]
    # Ranked keys (generators/keys.py): the files of the key space the key ranges number; none
    # for the generated sets, whose one integer key is its own number.
    key_space: list[Path] = []
    key_ranges: list[KeyRange]
    # Change sets only.
    base_checksum: str | None = None
    updates: int = 0
    inserts: int = 0
    update_ratio: float = 0.0
    insert_ratio: float = 0.0
    evolved: bool = False
    expected_after_upsert: Expected | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_key_column(cls, data: Any) -> Any:
        """Manifests written before composite keys name one `key_column`."""
        if isinstance(data, dict) and "key_column" in data:
            data = {**data, "key_columns": [data["key_column"]]}
            del data["key_column"]
        return data

    @property
    def keys(self) -> KeySpace:
        return KeySpace(tuple(self.key_columns), tuple(self.key_space))

    @model_validator(mode="after")
    def _changes_know_their_base(self) -> Self:
        if self.kind == "changes" and (self.base_checksum is None or self.expected_after_upsert is None):
            raise ValueError("a change set needs base_checksum and expected_after_upsert")
        return self

    def require_checksum_version(self, directory: Path, version: int) -> Self:
        """The manifest, if its checksums are of `version` (generators.checksum.CHECKSUM_VERSION):
        those of another version cannot be verified against."""
        if self.checksum_version != version:
            raise ManifestError(
                f"data set {directory} has version {self.checksum_version} checksums, this icebench "
                f"computes version {version}: regenerate the set (icebench generate)"
            )
        return self

    def file_mismatch(self, directory: Place, entries: list[FileEntry] | None = None) -> str | None:
        """The first of `entries` (default: every file) whose size, footer rows or CRC-32 differ
        from this manifest's, as `PATH ...`; None when all match. A manifest from before CRC-32s
        were recorded cannot be verified: that is a mismatch too. A local file whose CRC-32
        matched before and that was not written since (VERIFIED_FILE) is not read again; a set on
        S3 is read whole each time (an object's stat cannot say it was not replaced)."""
        entries = self.files if entries is None else entries
        if unrecorded := [entry.name for entry in entries if entry.crc32 is None]:
            return f"{child(directory, unrecorded[0])} has no CRC-32 in its manifest (an older set)"
        for entry in entries:
            if problem := _cheap_mismatch(child(directory, entry.name), entry):
                return problem
        if on_s3(directory):
            return self._crc_mismatch([(child(directory, entry.name), entry) for entry in entries])
        directory = Path(directory)
        verified = _read_verified(directory)
        unchecked = [
            (directory / entry.name, entry)
            for entry in entries
            if verified.get(entry.name) != _file_state(directory / entry.name, entry)
        ]
        if not unchecked:
            return None
        if problem := self._crc_mismatch(unchecked):
            return problem
        _write_verified(
            directory, verified | {entry.name: _file_state(Path(path), entry) for path, entry in unchecked}
        )
        return None

    @staticmethod
    def _crc_mismatch(files: list[tuple[Place, FileEntry]]) -> str | None:
        with ThreadPoolExecutor(min(len(files), os.cpu_count() or 1)) as pool:
            found = list(pool.map(file_crc32, [path for path, _ in files]))
        for (path, entry), crc in zip(files, found, strict=True):
            if crc != entry.crc32:
                return f"{path} has CRC-32 {crc}, its manifest says {entry.crc32} (changed since generated)"
        return None

    def field_names(self) -> list[str]:
        return [field.name for field in self.schema_fields]

    def file_paths(self, directory: Place) -> list[Place]:
        return [child(directory, entry.name) for entry in self.files]

    def save(self, directory: Place) -> Place:
        path = child(directory, MANIFEST_FILE)
        write_bytes(path, (self.model_dump_json(indent=2) + "\n").encode())
        return path

    @classmethod
    def load(cls, directory: Place) -> Self:
        path = child(directory, MANIFEST_FILE)
        if not exists(path):
            what = "no manifest" if exists(directory) else "data set folder does not exist"
            raise ManifestError(f"{what}: {path}")
        try:
            return cls.model_validate_json(read_bytes(path))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "document"
            raise ManifestError(f"corrupt manifest {path}: {where}: {first['msg']}") from None


def schema_fields(schema: pa.Schema) -> list[FieldSpec]:
    return [FieldSpec(name=field.name, type=str(field.type)) for field in schema]


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def prepare_dataset_dir(directory: Path) -> None:
    """Create the folder and drop a previous set's files, manifest first, so a half-written
    set never looks complete."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST_FILE).unlink(missing_ok=True)
    (directory / VERIFIED_FILE).unlink(missing_ok=True)
    for stale in directory.glob("part-*.parquet"):
        stale.unlink()


def key_runs(sorted_keys: np.ndarray) -> list[KeyRange]:
    """Sorted distinct integer keys as inclusive runs of consecutive ones."""
    if not len(sorted_keys):
        return []
    breaks = np.flatnonzero(np.diff(sorted_keys) != 1)
    starts, ends = np.concatenate([[0], breaks + 1]), np.concatenate([breaks, [len(sorted_keys) - 1]])
    return [(int(sorted_keys[start]), int(sorted_keys[end])) for start, end in zip(starts, ends, strict=True)]


def repeated_keys(keys: np.ndarray) -> tuple[int, int, int | None]:
    """(keys that appear more than once, rows beyond each key's first, the smallest such key)."""
    ordered = np.sort(keys)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if not len(repeated):
        return 0, 0, None
    distinct = 1 + int(np.count_nonzero(repeated[1:] != repeated[:-1]))  # sorted already: no np.unique
    return distinct, len(repeated), int(repeated[0])


def merge_key_ranges(ranges: list[KeyRange]) -> list[KeyRange]:
    """Sort and join overlapping or adjacent inclusive ranges."""
    merged: list[KeyRange] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged
