"""Row lineage of a v3 table (the spec's "Row Lineage"), from its metadata and its rows.

Metadata: every snapshot hands out `added-rows` row ids from `first-row-id`, every live data file
holds the ids `first_row_id .. first_row_id + record_count - 1` (a file added with none inherits
them from its manifest's `first_row_id`, in the manifest's order, deleted entries skipped as Java's
ManifestReader skips them), no range is held twice, and the table's `next-row-id` lies above every
id handed out.

Rows: each live row's `_row_id` is the one its file stores, or where that is null (or the file has
no such column) its file's `first_row_id` plus its position; its `_last_updated_sequence_number` the
stored one or its file's data sequence number. No two live rows (deletes applied) share an id, none
is at or above `next-row-id`, none says it was updated after its file was written, and after a run
that wrote N rows (an upsert's change set, an append, a replacement) at least N live rows carry a
sequence number of that run: an updated row must (the spec's rule: a modified row's sequence number
is written null), an unchanged row moved to a new file should keep its own, so more is legal.

pyiceberg 0.12 reads manifest lists and manifests with its v2 schemas, which drop the v3 fields
(`first_row_id`, ids 520 and 142): they are read here with its v3 schemas.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.avro.file import AvroFile
from pyiceberg.manifest import MANIFEST_ENTRY_SCHEMAS, MANIFEST_LIST_FILE_SCHEMAS, ManifestEntryStatus
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from harness.base.reasons import short_path
from harness.judge.readback import DeleteCache, planned_tasks
from harness.model import Check

LINEAGE_CHECK = "row_lineage"
V3 = 3
DATA = 0  # a manifest's (and a data file's) content: data, not deletes
# The spec's reserved field ids of the lineage columns a data file may store.
ROW_ID_FIELD = 2147483540
LAST_UPDATED_FIELD = 2147483539
FIELD_ID_KEY = b"PARQUET:field_id"


@dataclass(frozen=True)
class RowIds:
    """The row ids one data file (or one snapshot) holds: [first, first + count)."""

    owner: str
    first: int
    count: int
    sequence: int | None = None  # a data file's data sequence number

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
            if entry["status"] == ManifestEntryStatus.DELETED.value:
                continue  # inherits nothing, as Java's ManifestReader assigns ids
            data_file = entry["data_file"]
            first = data_file.get("first_row_id")
            if first is None and next_inherited is not None:
                first = next_inherited
                next_inherited += data_file["record_count"]
            sequence = entry.get("sequence_number")  # null: inherited from the manifest
            sequence = manifest.get("sequence_number") if sequence is None else sequence
            if first is None:
                without.append(data_file["file_path"])
            else:
                held.append(RowIds(data_file["file_path"], first, data_file["record_count"], sequence))
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


@dataclass
class LiveRows:
    """The live rows' lineage, as a reader derives it (deletes applied)."""

    ids: np.ndarray  # int64, each live row's _row_id
    sequences: np.ndarray  # int64, each live row's _last_updated_sequence_number
    owners: np.ndarray  # int32, each row's file (an index into `files`)
    files: list[RowIds]
    # Stored sequence numbers above their file's data sequence number: (file, first such value).
    late: list[tuple[str, int]]
    unread: int = 0  # equality-delete files: their deletes are not applied, repeats not judged


def live_rows(table: Table, files: list[RowIds]) -> LiveRows:
    """Every live row's `_row_id` and `_last_updated_sequence_number`: two columns of each live data
    file (where it stores them) and its position deletes, a file at a time."""
    snapshot = table.current_snapshot()
    tasks, equality = planned_tasks(table, snapshot.manifests(table.io) if snapshot else [])
    deletes = DeleteCache(table, tasks)
    by_path = {ids.owner: ids for ids in files}
    kept_files: list[RowIds] = []
    ids, sequences, owners, late = [], [], [], []
    for task in tasks:
        if (held := by_path.get(task.file.file_path)) is None:  # no ids: said by the metadata part
            deletes.done(task)
            continue
        row_ids, row_sequences = _stored_lineage(table, held)
        if held.sequence is not None and (above := row_sequences[row_sequences > held.sequence]).size:
            late.append((held.owner, int(above[0])))
        if positions := deletes.positions_for(task):
            gone = np.unique(np.concatenate([np.asarray(p, dtype=np.int64) for p in positions]))
            keep = np.ones(len(row_ids), dtype=bool)
            keep[gone[gone < len(row_ids)]] = False
            row_ids, row_sequences = row_ids[keep], row_sequences[keep]
        deletes.done(task)
        owners.append(np.full(len(row_ids), len(kept_files), dtype=np.int32))
        kept_files.append(held)
        ids.append(row_ids)
        sequences.append(row_sequences)
    empty = np.empty(0, dtype=np.int64)
    return LiveRows(
        ids=np.concatenate(ids) if ids else empty,
        sequences=np.concatenate(sequences) if sequences else empty,
        owners=np.concatenate(owners) if owners else np.empty(0, dtype=np.int32),
        files=kept_files,
        late=late,
        unread=equality.count,
    )


def _stored_lineage(table: Table, held: RowIds) -> tuple[np.ndarray, np.ndarray]:
    """A file's rows' ids and sequence numbers: the stored values, nulls (or no column) inherited."""
    row_ids = held.first + np.arange(held.count, dtype=np.int64)
    row_sequences = np.full(held.count, held.sequence or 0, dtype=np.int64)
    with table.io.new_input(held.owner).open() as stream:
        parquet = pq.ParquetFile(stream)
        stored = {
            int(field.metadata[FIELD_ID_KEY]): field.name
            for field in parquet.schema_arrow
            if field.metadata and FIELD_ID_KEY in field.metadata
        }
        wanted = {fid: stored[fid] for fid in (ROW_ID_FIELD, LAST_UPDATED_FIELD) if fid in stored}
        if wanted:
            columns = parquet.read(columns=list(wanted.values()))
            for field_id, values in ((ROW_ID_FIELD, row_ids), (LAST_UPDATED_FIELD, row_sequences)):
                if field_id in wanted:
                    _overlay(values, columns.column(wanted[field_id]))
    return row_ids, row_sequences


def _overlay(inherited: np.ndarray, stored: pa.ChunkedArray) -> None:
    """The stored values over the inherited ones, where not null."""
    values = stored.to_numpy(zero_copy_only=False)
    present = ~np.asarray(stored.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    inherited[present] = values[present].astype(np.int64)


def _row_problems(
    rows: LiveRows, next_row_id: int | None, since_sequence: int | None, changed_rows: int | None
) -> list[str]:
    problems = []
    order = np.argsort(rows.ids, kind="stable")
    ordered = rows.ids[order]
    # Rows an equality delete removes are still among them: repeats are not judged then.
    if not rows.unread and (repeats := np.flatnonzero(ordered[1:] == ordered[:-1])).size:
        first = repeats[0]
        a, b = (rows.files[rows.owners[order[i]]].owner for i in (first, first + 1))
        problems.append(
            f"_row_id repeats: {repeats.size} live rows share an id with another, first {ordered[first]} "
            f"in {short_path(a)} and {short_path(b)}"
        )
    if next_row_id is not None and ordered.size and ordered[-1] >= next_row_id:
        problems.append(f"live row id {ordered[-1]} is not below the table's next-row-id {next_row_id}")
    if rows.late:
        path, sequence = rows.late[0]
        problems.append(
            f"{len(rows.late)} files store a _last_updated_sequence_number above their own data sequence "
            f"number, first {sequence} in {short_path(path)}"
        )
    if since_sequence is not None and changed_rows is not None:
        updated = int(np.count_nonzero(rows.sequences > since_sequence))
        if updated < changed_rows:
            problems.append(
                f"the run wrote {changed_rows:,} rows, but only {updated:,} live rows carry a sequence "
                "number of it as _last_updated_sequence_number (an updated row's is written null)"
            )
    return problems


def lineage_check(
    table: Table, since_sequence: int | None = None, changed_rows: int | None = None
) -> Check | None:
    """The row_lineage check of a v3 table; None for v1 and v2 tables (no row ids). With
    `since_sequence` (the table's last sequence number before the run) and `changed_rows` (the rows
    the run wrote), those rows must carry the run's sequence numbers."""
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
    last = max([*files, *snapshots], key=lambda ids: ids.end, default=None)
    handed_out = last.end if last else 0
    if next_row_id is None or next_row_id < handed_out:
        owner = short_path(last.owner) if last and not last.owner.startswith("snapshot") else last.owner
        problems.append(
            f"the table's next-row-id {next_row_id} is not above the last row id handed out, "
            f"{handed_out - 1} ({owner} holds [{last.first}, {last.end}))"
        )
    rows = live_rows(table, files)
    problems += _row_problems(rows, next_row_id, since_sequence, changed_rows)
    return Check.holds(
        LINEAGE_CHECK,
        not problems,
        lambda: "; ".join(problems),
        expected="row ids unique, below next-row-id",
        actual={
            "files": len(files),
            "row_ids": sum(ids.count for ids in files),
            "next_row_id": next_row_id,
            "live_rows": len(rows.ids),
            "updated_by_run": None
            if since_sequence is None
            else int(np.count_nonzero(rows.sequences > since_sequence)),
            **({"rows_not_read": "equality deletes not applied"} if rows.unread else {}),
        },
    )
