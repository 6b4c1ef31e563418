"""Damaged copies of a generated set, for the bad-source scenarios: one file in the middle of the
source is broken, the others are hard links to the originals, the manifest is the original's
(it still says what the set should have held)."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq

from generators.manifest import MANIFEST_FILE, DatasetManifest, FileEntry, prepare_dataset_dir

Damage = Literal["corrupt-page", "wrong-schema", "empty-file"]
DAMAGES: tuple[Damage, ...] = ("corrupt-page", "wrong-schema", "empty-file")
FOOTER_TAIL = 8  # 4-byte footer length + "PAR1"


def damaged_copy(source: Path, out: Path, damage: Damage) -> DatasetManifest:
    """Copies the set in `source` to `out` with its middle file (by order) damaged."""
    manifest = DatasetManifest.load(source)
    prepare_dataset_dir(out)
    victim = _victim(manifest)
    for index, path in enumerate(manifest.file_paths(source)):
        target = out / path.name
        if index == victim:
            _DAMAGERS[damage](path, target)
        else:
            _link_or_copy(path, target)
    shutil.copyfile(source / MANIFEST_FILE, out / MANIFEST_FILE)
    return manifest


def _victim(manifest: DatasetManifest) -> int:
    return len(manifest.files) // 2


def intact_files(manifest: DatasetManifest) -> list[FileEntry]:
    """The files of a damaged copy that are the original's (what its manifest can verify)."""
    return [entry for index, entry in enumerate(manifest.files) if index != _victim(manifest)]


def _corrupt_pages(path: Path, target: Path) -> None:
    """Every byte between the leading magic and the footer zeroed: the footer (schema, row
    counts) still validates, the first page read fails."""
    data = bytearray(path.read_bytes())
    (footer_length,) = struct.unpack("<I", data[-FOOTER_TAIL:-4])
    end = len(data) - FOOTER_TAIL - footer_length
    data[4:end] = bytes(end - 4)
    target.write_bytes(bytes(data))


def _wrong_schema(path: Path, target: Path) -> None:
    """The same rows with the first value column as strings."""
    table = pq.read_table(path)
    name = table.column_names[1]
    position = table.schema.get_field_index(name)
    table = table.set_column(position, name, table.column(name).cast(pa.string()))
    pq.write_table(table, target)


def _empty_file(path: Path, target: Path) -> None:
    target.write_bytes(b"")


_DAMAGERS = {"corrupt-page": _corrupt_pages, "wrong-schema": _wrong_schema, "empty-file": _empty_file}


def _link_or_copy(path: Path, target: Path) -> None:
    try:
        os.link(path, target)
    except OSError:
        shutil.copyfile(path, target)
