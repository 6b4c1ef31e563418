"""Room on disk for a rows axis' next point, checked before it is generated and run.

A point of the rows axis is the same shape at more rows: its sets, and (one table at a time,
each removed after its run) the largest table a writer makes of them, grow with its rows. A 10M
point of `wide` needs its 31 GB set and pyiceberg-add-files' 41 GB table, and without this check
found out two hours in, on `No space left on device`. So before each point after the first the
need is taken from what the earlier point measured: its sets' bytes (their manifests), and each
writer's table bytes (data and orphan files, from its records), scaled by the rows. A point that
does not fit stops the matrix there, with the earlier points' results and report kept.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from generators.datasets import DataSets
from harness.base.caps import format_size
from harness.base.errors import IcebenchError
from harness.model import RunRecord


@dataclass(frozen=True)
class Need:
    """Bytes a point needs in one folder's file system, and what they are for."""

    folder: Path
    bytes: int
    what: str


def point_needs(
    rows: int,
    earlier: DataSets,
    missing: list[str],
    records: list[RunRecord],
    sets_folder: Path,
    tables_folder: Path | None,
) -> list[Need]:
    """What a point of `rows` needs, scaled from the `earlier` point's sets and its `records`:
    the `missing` sets (those not cached yet) in `sets_folder`, the largest table in
    `tables_folder` (None: the tables are not on this machine)."""
    needs = []
    sized = [name for name in missing if name in earlier]
    if sized:
        manifests = [earlier[name].manifest for name in sized]
        set_bytes = sum(_scaled(sum(f.bytes for f in m.files), m.rows, rows) for m in manifests)
        needs.append(Need(sets_folder, set_bytes, f"its {', '.join(sized)} set{'s' * (len(sized) > 1)}"))
    tables = [
        (_scaled(record.data_bytes + record.orphan_bytes, record.rows, rows), record.writer)
        for record in records
        if record.rows and record.data_bytes is not None and record.orphan_bytes is not None
    ]
    if tables_folder is not None and tables:
        table_bytes, writer = max(tables)
        needs.append(Need(tables_folder, table_bytes, f"{writer}'s table"))
    return needs


def _scaled(measured_bytes: int, measured_rows: int, rows: int) -> int:
    return measured_bytes * rows // max(measured_rows, 1)


def require_room(point: str, needs: list[Need], measured_at: str) -> None:
    """A one-line error when the needs of one file system exceed its free space."""
    by_device: dict[int, list[Need]] = {}
    for need in needs:
        by_device.setdefault(_device(need.folder), []).append(need)
    for shared in by_device.values():
        wanted = sum(need.bytes for need in shared)
        free = shutil.disk_usage(_existing(shared[0].folder)).free
        if wanted > free:
            parts = " + ".join(f"{format_size(need.bytes)} for {need.what}" for need in shared)
            raise IcebenchError(
                f"rows point {point} needs about {format_size(wanted)} of disk ({parts}, scaled from "
                f"{measured_at}) but {_existing(shared[0].folder)} has {format_size(free)} free: "
                "free space, or leave the point out of --rows"
            )


def _existing(folder: Path) -> Path:
    """The folder, or its nearest parent that exists (a set's folder is made when it is generated)."""
    folder = folder.resolve()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _device(folder: Path) -> int:
    return os.stat(_existing(folder)).st_dev
