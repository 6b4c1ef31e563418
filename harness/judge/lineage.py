"""Row lineage of a v3 table, from its metadata (the spec's "Row Lineage"): every snapshot hands out
`added-rows` row ids from `first-row-id`, every live data file holds the ids `first_row_id ..
first_row_id + record_count - 1` (a file added with none inherits them from its manifest's
`first_row_id`, in the manifest's order), no id is held twice, and the table's `next-row-id` lies
above every id handed out.

pyiceberg 0.12 reads manifest lists and manifests with its v2 schemas, which drop the v3 fields
(`first_row_id`, ids 520 and 142): they are read here with its v3 schemas. Row ids a rewritten
file carries in a `_row_id` column of its own are data, not metadata: this check does not read
them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from pyiceberg.avro.file import AvroFile
from pyiceberg.manifest import MANIFEST_ENTRY_SCHEMAS, MANIFEST_LIST_FILE_SCHEMAS, ManifestEntryStatus
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from harness.model import Check

LINEAGE_CHECK = "row_lineage"
V3 = 3
DATA = 0  # a manifest's (and a data file's) content: data, not deletes


@dataclass(frozen=True)
class RowIds:
    """The row ids one data file (or one snapshot) holds: [first, first + count)."""

    owner: str
    first: int
    count: int

    @property
    def end(self) -> int:
        return self.first + self.count


def read_avro(table: Table, path: str, schema: Schema) -> list[dict[str, Any]]:
    """An Avro file's records as dicts by the schema's field names (nested records too)."""
    with AvroFile[Record](table.io.new_input(path), schema) as reader:
        return [_named(record, schema.as_struct()) for record in reader]


def _named(record: Record, struct: Any) -> dict[str, Any]:
    named = {}
    for position, field in enumerate(struct.fields):
        value = record[position] if position < len(record) else None
        if isinstance(value, Record) and hasattr(field.field_type, "fields"):
            value = _named(value, field.field_type)
        named[field.name] = value
    return named


def live_file_row_ids(table: Table) -> tuple[list[RowIds], list[str]]:
    """The row ids of every live data file of the current snapshot, and the files that have none
    (neither their own first_row_id nor one their manifest hands down)."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return [], []
    held, without = [], []
    for manifest in read_avro(table, snapshot.manifest_list, MANIFEST_LIST_FILE_SCHEMAS[V3]):
        if manifest["content"] != DATA:
            continue
        next_inherited = manifest.get("first_row_id")
        for entry in read_avro(table, manifest["manifest_path"], MANIFEST_ENTRY_SCHEMAS[V3]):
            data_file = entry["data_file"]
            first = data_file.get("first_row_id")
            if first is None and next_inherited is not None:
                first = next_inherited
                next_inherited += data_file["record_count"]
            if entry["status"] == ManifestEntryStatus.DELETED.value:
                continue
            if first is None:
                without.append(data_file["file_path"])
            else:
                held.append(RowIds(data_file["file_path"], first, data_file["record_count"]))
    return held, without


def snapshot_row_ids(table: Table) -> list[RowIds]:
    """The ids each snapshot handed out, in commit order (None where a snapshot names none)."""
    snapshots = sorted(table.snapshots(), key=lambda snapshot: snapshot.sequence_number or 0)
    return [
        RowIds(f"snapshot {snapshot.snapshot_id}", snapshot.first_row_id, snapshot.added_rows or 0)
        for snapshot in snapshots
        if snapshot.first_row_id is not None
    ]


def overlaps(ranges: list[RowIds]) -> list[tuple[RowIds, RowIds]]:
    """Pairs of neighbouring ranges (by first id) that share ids."""
    ordered = sorted((ids for ids in ranges if ids.count), key=lambda ids: ids.first)
    return [(a, b) for a, b in itertools.pairwise(ordered) if b.first < a.end]


def lineage_check(table: Table) -> Check | None:
    """The row_lineage check of a v3 table; None for v1 and v2 tables (no row ids)."""
    if table.format_version < V3:
        return None
    files, without = live_file_row_ids(table)
    snapshots = snapshot_row_ids(table)
    next_row_id = table.metadata.next_row_id
    problems = []
    if without:
        problems.append(f"{len(without)} live data files hold no row ids (first: {without[0]})")
    if missing := [s for s in table.snapshots() if s.first_row_id is None]:
        problems.append(f"{len(missing)} snapshots name no first-row-id (first: {missing[0].snapshot_id})")
    for kind, ranges in (("files", files), ("snapshots", snapshots)):
        if repeated := overlaps(ranges):
            a, b = repeated[0]
            problems.append(
                f"row ids repeat: {len(repeated)} pairs of {kind} share ids, first {a.owner} "
                f"[{a.first}, {a.end}) and {b.owner} [{b.first}, {b.end})"
            )
    handed_out = max((ids.end for ids in [*files, *snapshots]), default=0)
    if next_row_id is None or next_row_id < handed_out:
        problems.append(
            f"the table's next-row-id {next_row_id} is not above the last row id handed out, {handed_out - 1}"
        )
    return Check.holds(
        LINEAGE_CHECK,
        not problems,
        lambda: "; ".join(problems),
        expected="row ids unique, below next-row-id",
        actual={
            "files": len(files),
            "row_ids": sum(ids.count for ids in files),
            "next_row_id": next_row_id,
        },
    )
