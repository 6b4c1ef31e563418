"""The files of a table as its metadata names them, against the files its location holds.

One walk of every snapshot's manifests gives both things the oracle and the maintenance steps
need to know about a table's files:
- its orphans: files under the table's location that no metadata reaches (a failed write's
  leftovers; what `orphans` maintenance may delete);
- the files its live snapshots need that are gone: a snapshot still in the metadata must stay
  readable, so a maintenance step (or a writer) that deleted one of its manifest lists, manifests,
  data or delete files broke the table.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

from pyarrow import fs as pafs
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import ManifestEntryStatus
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import Table

# Hadoop's ChecksumFileSystem `.NAME.crc`: magic, then the bytes per checksum as a 4-byte int.
HADOOP_CRC_MAGIC = b"crc\x00"
HADOOP_CRC_HEADER = 8


@dataclass
class TableFiles:
    """What the metadata names and what the location holds, compared."""

    orphans: dict[str, int] = field(default_factory=dict)  # path -> bytes: reachable from nothing
    # Files a live snapshot needs that do not exist: path -> the id of a snapshot that needs it.
    missing: dict[str, int] = field(default_factory=dict)


def table_files(table: Table) -> TableFiles:
    """The table's orphans and the files its live snapshots need but lack.

    Reachable: the current and logged metadata files, statistics files, every snapshot's manifest
    list, its manifests, and every file their entries name (deleted entries too, as Iceberg
    Java's orphan removal keeps them). Needed: see `live_files`. Orphans are reported, never
    deleted here.
    """
    metadata = table.metadata
    reachable = committed_metadata(table)
    statistics = [*metadata.statistics, *metadata.partition_statistics]
    reachable.update(stats.statistics_path for stats in statistics)
    needed = _walk(table, reachable)
    files = list_files(table, table.location())
    # Compared as the filesystem lists them (no scheme; bucket/key on S3).
    listed_as = {PyArrowFileIO.parse_location(path)[2] for path in reachable}
    orphans = {path: size for path, size in files.items() if path not in listed_as}
    genuine = _hadoop_checksums(table, files, orphans)
    missing = {
        path: snapshot_id
        for path, snapshot_id in needed.items()
        if PyArrowFileIO.parse_location(path)[2] not in files and not table.io.new_input(path).exists()
    }
    return TableFiles({path: size for path, size in orphans.items() if path not in genuine}, missing)


def live_files(table: Table) -> dict[str, int]:
    """The files the snapshots in the metadata need, each with a snapshot that needs it: each
    snapshot's manifest list, its manifests, and the files of their added and existing entries (a
    deleted entry's file may go once no snapshot left lists it as live)."""
    return _walk(table, set())


def _walk(table: Table, reachable: set[str]) -> dict[str, int]:
    """One walk of every snapshot's manifests: the files they need (path -> a snapshot's id), and
    every file they name added to `reachable`. A manifest list or manifest that is gone is needed
    and not read (nothing under it can be told)."""
    needed: dict[str, int] = {}
    read: set[str] = set()
    for snapshot in table.metadata.snapshots:
        reachable.add(snapshot.manifest_list)
        needed.setdefault(snapshot.manifest_list, snapshot.snapshot_id)
        try:
            manifests = snapshot.manifests(table.io)
        except FileNotFoundError:
            continue
        for manifest in manifests:
            reachable.add(manifest.manifest_path)
            needed.setdefault(manifest.manifest_path, snapshot.snapshot_id)
            if manifest.manifest_path in read:  # shared by later snapshots: read it once
                continue
            read.add(manifest.manifest_path)
            try:
                entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
            except FileNotFoundError:
                continue
            for entry in entries:
                reachable.add(entry.data_file.file_path)
                if entry.status != ManifestEntryStatus.DELETED:
                    needed.setdefault(entry.data_file.file_path, snapshot.snapshot_id)
    return needed


def orphan_files(table: Table) -> dict[str, int]:
    """Files under the table's location that none of its metadata reaches (path -> bytes)."""
    return table_files(table).orphans


def committed_metadata(table: Table) -> set[str]:
    """Every metadata file the table has been at. The log holds only the last
    `write.metadata.previous-versions-max` (100 by default); older ones, kept on disk unless
    `write.metadata.delete-after-commit.enabled`, are found in the log of the oldest one listed,
    and so on back: committed, they are no orphans."""
    log = table.metadata.metadata_log
    committed = {table.metadata_location, *(entry.metadata_file for entry in log)}
    while log:
        try:
            log = FromInputFile.table_metadata(table.io.new_input(log[0].metadata_file)).metadata_log
        except FileNotFoundError:  # deleted after commit: nothing older is left either
            break
        log = [entry for entry in log if entry.metadata_file not in committed]
        committed.update(entry.metadata_file for entry in log)
    return committed


def _hadoop_checksums(table: Table, files: dict[str, int], orphans: dict[str, int]) -> set[str]:
    """The `.NAME.crc` files that are Hadoop checksum files of a reachable NAME beside them: Hadoop's
    local filesystem (Spark's writes) puts one beside every file it writes, so such a pair is one
    file. Judged by content, not name: any other `.crc` stays an orphan."""
    genuine = set()
    for path in orphans:
        folder, _, name = path.rpartition("/")
        if not (name.startswith(".") and name.endswith(".crc")):
            continue
        checked = f"{folder}/{name[1 : -len('.crc')]}"
        if checked in files and checked not in orphans and _is_hadoop_checksum(table, path, files, checked):
            genuine.add(path)
    return genuine


def _is_hadoop_checksum(table: Table, path: str, files: dict[str, int], checked: str) -> bool:
    """Hadoop ChecksumFileSystem's format: `crc\\0`, the bytes per checksum (4, big-endian), then
    one CRC32 per chunk of the file. Header, size and the first chunk's CRC are checked."""
    filesystem = table_filesystem(table, path)
    with filesystem.open_input_stream(path) as stream:
        head = stream.read(HADOOP_CRC_HEADER + 4)
    if len(head) < HADOOP_CRC_HEADER or head[:4] != HADOOP_CRC_MAGIC:
        return False
    chunk = int.from_bytes(head[4:HADOOP_CRC_HEADER], "big")
    if chunk <= 0 or files[path] != HADOOP_CRC_HEADER + 4 * math.ceil(files[checked] / chunk):
        return False
    if files[checked] == 0:
        return True
    with filesystem.open_input_stream(checked) as stream:
        first = stream.read(chunk)
    return int.from_bytes(head[HADOOP_CRC_HEADER:], "big") == zlib.crc32(first)


def table_filesystem(table: Table, uri: str) -> pafs.FileSystem:
    """The table's own FileIO configuration's filesystem, so local folders and S3 read alike."""
    scheme, netloc, _ = PyArrowFileIO.parse_location(uri if "://" in uri else table.location())
    if not isinstance(table.io, PyArrowFileIO):
        raise TypeError(f"reading {uri} needs pyiceberg's PyArrowFileIO, not {type(table.io).__name__}")
    return table.io.fs_by_scheme(scheme, netloc)


def list_files(table: Table, uri: str) -> dict[str, int]:
    """Through the table's own FileIO configuration, so local folders and S3 list alike."""
    path = PyArrowFileIO.parse_location(uri)[2]
    filesystem = table_filesystem(table, uri)
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    return {info.path: info.size for info in filesystem.get_file_info(selector) if info.is_file}
