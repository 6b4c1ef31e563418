"""The table's metadata held to the Iceberg spec (format/spec.md, "Snapshots", "Table Metadata"):
its refs, the lineage of the snapshots the run made, what each of them says it did.

Each check reads what the spec requires, and what Iceberg Java (the reference implementation)
refuses to load, never what pyiceberg happens to tolerate:
- `refs_current`: the `main` branch names the current snapshot, every ref a snapshot that exists;
- `snapshot_lineage`: a new snapshot's parent exists (or did before the run: an expiry may remove
  it), its sequence number is above its parent's and no other snapshot's, the manifests it added
  carry it; timestamps do not go back (Java's one minute of clock skew allowed); the snapshot log
  and the metadata log are in time order and name snapshots and files that are there;
- `snapshot_operations`: each new snapshot's operation is one the spec defines and does not
  contradict what its manifests say it changed (an `append` removes nothing; a `delete` adds no
  data file; a `replace`, which must not change the table's data, does not only add or only remove);
- `layout_in_force`: the partition spec, sort order and table properties the run asked for
  (`--partition`, `--sort`, `--table-property`) are the table's after the write, and its live data
  files were written with that spec;
- `snapshot_summary_true` (harness/judge/oracle.py) holds each summary field the writer wrote
  against the manifest entries of the snapshot it describes (`snapshot_changes` here counts them).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from pyiceberg.manifest import (
    MANIFEST_ENTRY_SCHEMAS,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from harness.base.layout import table_specs
from harness.base.reasons import counted, first_few, short_path
from harness.judge.lineage import V3, read_avro
from harness.model import Check, TableLayout

# Java's TableMetadata allows a log entry up to a minute before the one it follows (clocks of
# concurrent writers differ); so does this judge.
CLOCK_SKEW_MS = 60_000
OPERATIONS = ("append", "replace", "overwrite", "delete")
MAIN_BRANCH = "main"

_CONTENT_WORDS = {
    DataFileContent.DATA: ("data-files", "records"),
    DataFileContent.POSITION_DELETES: ("position-delete-files", "position-deletes"),
    DataFileContent.EQUALITY_DELETES: ("equality-delete-files", "equality-deletes"),
}


@dataclass
class SnapshotChanges:
    """What one snapshot's own manifest entries say it added and removed (entries ADDED or DELETED
    with its id, in the manifests it wrote): the truth its summary and its operation are held to."""

    files: Counter[DataFileContent] = field(default_factory=Counter)  # added
    rows: Counter[DataFileContent] = field(default_factory=Counter)
    removed_files: Counter[DataFileContent] = field(default_factory=Counter)
    removed_rows: Counter[DataFileContent] = field(default_factory=Counter)
    added_bytes: int = 0
    removed_bytes: int = 0
    # The manifests it wrote, with the sequence number each carries (the lineage check holds them
    # to the snapshot's): taken from the same read of its manifest list.
    manifests: dict[str, int | None] = field(default_factory=dict)

    def summary_fields(self) -> dict[str, int]:
        """The spec's optional summary fields (Java's SnapshotSummary) as these entries give them."""
        deletes = (DataFileContent.POSITION_DELETES, DataFileContent.EQUALITY_DELETES)
        fields = {
            "added-files-size": self.added_bytes,
            "removed-files-size": self.removed_bytes,
            "added-delete-files": sum(self.files[content] for content in deletes),
            "removed-delete-files": sum(self.removed_files[content] for content in deletes),
        }
        for content, (files, rows) in _CONTENT_WORDS.items():
            removed = "deleted" if content == DataFileContent.DATA else "removed"
            fields |= {
                f"added-{files}": self.files[content],
                f"{removed}-{files}": self.removed_files[content],
                f"added-{rows}": self.rows[content],
                f"{removed}-{rows}": self.removed_rows[content],
            }
        return fields

    @property
    def adds_data(self) -> bool:
        return self.files[DataFileContent.DATA] > 0

    @property
    def removes_data(self) -> bool:
        return self.removed_files[DataFileContent.DATA] > 0

    @property
    def touches_deletes(self) -> bool:
        deletes = (DataFileContent.POSITION_DELETES, DataFileContent.EQUALITY_DELETES)
        return any(self.files[content] or self.removed_files[content] for content in deletes)


def snapshot_changes(table: Table, snapshot: Snapshot) -> SnapshotChanges:
    """The entries `snapshot` added or deleted, from the manifests it wrote (those its manifest list
    says it added): each manifest is read once, whatever the number of snapshots."""
    changes = SnapshotChanges()
    for manifest in snapshot.manifests(table.io):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        changes.manifests[manifest.manifest_path] = manifest.sequence_number
        entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
        for entry, size in zip(entries, _content_sizes(table, manifest.manifest_path, entries), strict=True):
            if entry.snapshot_id != snapshot.snapshot_id:
                continue
            data_file = entry.data_file
            if entry.status == ManifestEntryStatus.ADDED:
                changes.files[data_file.content] += 1
                changes.rows[data_file.content] += data_file.record_count
                changes.added_bytes += size
            elif entry.status == ManifestEntryStatus.DELETED:
                changes.removed_files[data_file.content] += 1
                changes.removed_rows[data_file.content] += data_file.record_count
                changes.removed_bytes += size
    return changes


def _content_sizes(table: Table, manifest_path: str, entries: list[ManifestEntry]) -> list[int]:
    """Each entry's bytes as a summary counts them: a deletion vector's own blob, not the Puffin
    file it shares with others (Java's ScanTaskUtil.contentSizeInBytes). pyiceberg 0.12 drops the
    v3 field `content_size_in_bytes`: a manifest holding Puffin files is read again with its v3
    schema."""
    if not any(entry.data_file.file_format == FileFormat.PUFFIN for entry in entries):
        return [entry.data_file.file_size_in_bytes for entry in entries]
    records = read_avro(table, manifest_path, MANIFEST_ENTRY_SCHEMAS[V3])
    return [
        record["data_file"].get("content_size_in_bytes") or entry.data_file.file_size_in_bytes
        for entry, record in zip(entries, records, strict=True)
    ]


def new_snapshots(table: Table, before_ids: set[int]) -> list[Snapshot]:
    """The snapshots the run made, oldest first."""
    made = [snapshot for snapshot in table.metadata.snapshots if snapshot.snapshot_id not in before_ids]
    return sorted(made, key=lambda snapshot: (snapshot.sequence_number or 0, snapshot.timestamp_ms))


def metadata_checks(
    table: Table, made: list[Snapshot], before_ids: set[int], changes: dict[int, SnapshotChanges]
) -> list[Check]:
    """The spec's metadata checks of a table after a run that began with snapshots `before_ids` and
    `made` these (new_snapshots); `changes`: each one's own entries (snapshot_changes)."""
    return [
        refs_check(table),
        lineage_check(table, made, before_ids, changes),
        operations_check(made, changes),
    ]


def layout_check(table: Table, layout: TableLayout, spec_ids: Iterable[int]) -> Check:
    """The asked-for layout in force after the write (partition fields and sort fields by source
    column and transform, their names and field ids aside: a table re-created by its writer may
    number them otherwise), and `spec_ids`, the live data files' specs, the table's default."""
    if layout.plain:
        return Check(name="layout_in_force", passed=True, actual="no layout asked for")
    schema = table.schema()
    spec, order = table_specs(layout, schema)
    problems = []

    def column(source_id: int) -> str:
        try:
            return schema.find_column_name(source_id) or str(source_id)
        except ValueError:
            return f"field {source_id}"

    def fields_of(partitioning: PartitionSpec) -> list[str]:
        return [f"{f.transform}({column(f.source_id)})" for f in partitioning.fields]

    asked, found = fields_of(spec), fields_of(table.spec())
    if asked != found:
        problems.append(f"partitioned by [{', '.join(found)}], asked for [{', '.join(asked)}]")
    asked_order = [f"{column(f.source_id)} {f.direction.name.lower()}" for f in order.fields]
    found_order = [f"{column(f.source_id)} {f.direction.name.lower()}" for f in table.sort_order().fields]
    if asked_order != found_order:
        problems.append(f"sorted by [{', '.join(found_order)}], asked for [{', '.join(asked_order)}]")
    # format-version is asked as a property and kept as the metadata's own field.
    properties = {**table.metadata.properties, "format-version": str(table.metadata.format_version)}
    problems += [
        f"property {key} is {properties.get(key)!r}, asked for {value!r}"
        for key, value in layout.properties
        if properties.get(key) != value
    ]
    default = table.metadata.default_spec_id
    other = sum(spec_id != default for spec_id in spec_ids)
    if other:
        problems.append(f"{counted(other, 'live data file')} written with another spec than the table's")
    return Check.holds(
        "layout_in_force",
        not problems,
        lambda: first_few(problems),
        expected=layout.label,
        actual=" ".join(found) or "unpartitioned",
    )


def refs_check(table: Table) -> Check:
    metadata = table.metadata
    ids = {snapshot.snapshot_id for snapshot in metadata.snapshots}
    problems = []
    current = metadata.current_snapshot_id
    if current is not None and current != -1 and current not in ids:
        problems.append(f"current-snapshot-id {current} names no snapshot of the table")
    main = metadata.refs.get(MAIN_BRANCH)
    main_id = main.snapshot_id if main is not None else None
    if (current if current != -1 else None) != main_id:
        problems.append(f"refs.main names snapshot {main_id} but current-snapshot-id is {current}")
    problems += [
        f"ref {name!r} names snapshot {ref.snapshot_id}, which the table does not have"
        for name, ref in metadata.refs.items()
        if ref.snapshot_id not in ids
    ]
    return Check.holds(
        "refs_current",
        not problems,
        lambda: first_few(problems) + " (Iceberg Java refuses to load such metadata)",
        expected=current,
        actual={name: ref.snapshot_id for name, ref in metadata.refs.items()},
    )


def lineage_check(
    table: Table, made: list[Snapshot], before_ids: set[int], changes: dict[int, SnapshotChanges]
) -> Check:
    metadata = table.metadata
    by_id = {snapshot.snapshot_id: snapshot for snapshot in metadata.snapshots}
    known = set(by_id) | before_ids
    problems: list[str] = []
    for snapshot in made:
        problems += _parent_problems(snapshot, by_id, before_ids)
        if metadata.format_version >= 2:
            problems += _sequence_problems(table, snapshot, by_id, changes[snapshot.snapshot_id])
    if metadata.format_version >= 2:
        numbers = Counter(snapshot.sequence_number for snapshot in metadata.snapshots)
        shared = [(n, count) for n, count in numbers.items() if count > 1]
        problems += [f"{count} snapshots share sequence number {n}" for n, count in shared]
    problems += _log_order("snapshot-log", [entry.timestamp_ms for entry in metadata.snapshot_log])
    problems += [
        f"snapshot-log names snapshot {entry.snapshot_id}, which the table never had"
        for entry in metadata.snapshot_log
        if entry.snapshot_id not in known
    ]
    problems += _log_order("metadata-log", [entry.timestamp_ms for entry in metadata.metadata_log])
    problems += [
        f"metadata-log names {short_path(entry.metadata_file)}, which is not there"
        for entry in metadata.metadata_log
        if not table.io.new_input(entry.metadata_file).exists()
    ]
    return Check.holds(
        "snapshot_lineage",
        not problems,
        lambda: first_few(problems),
        expected="parents present, sequence numbers rising, logs in order",
        actual=counted(len(made), "new snapshot"),
    )


def _parent_problems(snapshot: Snapshot, by_id: dict[int, Snapshot], before_ids: set[int]) -> list[str]:
    parent_id = snapshot.parent_snapshot_id
    if parent_id is None:
        return []
    parent = by_id.get(parent_id)
    if parent is None:
        if parent_id in before_ids:
            return []  # expired during the run: gone, but it was there
        return [f"snapshot {snapshot.snapshot_id}'s parent {parent_id} does not exist and never did"]
    earlier = parent.timestamp_ms - snapshot.timestamp_ms
    if earlier > CLOCK_SKEW_MS:
        return [f"snapshot {snapshot.snapshot_id} is timestamped {earlier:,} ms before its parent's"]
    return []


def _sequence_problems(
    table: Table, snapshot: Snapshot, by_id: dict[int, Snapshot], change: SnapshotChanges
) -> list[str]:
    number = snapshot.sequence_number or 0
    problems = []
    parent = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id is not None else None
    if parent is not None and number <= (parent.sequence_number or 0):
        problems.append(
            f"snapshot {snapshot.snapshot_id} has sequence number {number}, not above its parent's "
            f"{parent.sequence_number}"
        )
    if number > table.metadata.last_sequence_number:
        problems.append(
            f"snapshot {snapshot.snapshot_id} has sequence number {number}, above the table's "
            f"last-sequence-number {table.metadata.last_sequence_number}"
        )
    for path, carried in change.manifests.items():
        if carried != number:
            problems.append(
                f"{short_path(path)}, added by snapshot {snapshot.snapshot_id} "
                f"(sequence number {number}), carries sequence number {carried}"
            )
    return problems


def _log_order(name: str, timestamps: Iterable[int]) -> list[str]:
    stamps = list(timestamps)
    return [
        f"{name} goes back {earlier - later:,} ms at entry {index + 1}"
        for index, (earlier, later) in enumerate(itertools.pairwise(stamps))
        if later < earlier - CLOCK_SKEW_MS
    ]


def operations_check(made: list[Snapshot], changes: dict[int, SnapshotChanges]) -> Check:
    problems = []
    for snapshot in made:
        operation = snapshot.summary.operation.value if snapshot.summary is not None else None
        problem = _operation_problem(operation, changes[snapshot.snapshot_id])
        if problem is not None:
            problems.append(f"snapshot {snapshot.snapshot_id} is labelled {operation!r} but {problem}")
    return Check.holds(
        "snapshot_operations",
        not problems,
        lambda: first_few(problems),
        expected="each operation as its manifests' changes allow",
        actual={str(s.snapshot_id): s.summary.operation.value for s in made if s.summary is not None},
    )


def _operation_problem(operation: str | None, change: SnapshotChanges) -> str | None:
    """How the label contradicts the change (the spec's definitions of the four), or None."""
    if operation not in OPERATIONS:
        return f"the spec defines only {', '.join(OPERATIONS)}"
    if operation == "append" and (change.removes_data or change.touches_deletes):
        return "it removes data files or adds or removes delete files (an append only adds data files)"
    if operation == "delete" and change.adds_data:
        return "it adds data files (a delete only removes data files or adds delete files)"
    if operation == "replace" and not change.touches_deletes and change.adds_data != change.removes_data:
        done = "only adds data files" if change.adds_data else "only removes data files"
        return f"it {done}, which changes the table's data (a replace rewrites files, the data unchanged)"
    return None
