"""The oracle: reads a table back (harness/judge/readback.py: pyiceberg's planning and projection, one
data file at a time; never the writer's code path) and judges it.

On request (`--verify-with NAME`, a harness/engines/verifiers plug-in such as spark) another engine reads
it as well, and must agree with pyiceberg.

A table holding equality deletes is beyond pyiceberg 0.12: its rows and checksum are then judged
as a verifier that applies them reads them: the one asked for, else the cheapest capable one that
can run here, chosen by the caller (the verdict's `judged_by` names it). When none can, the table
is unjudged, a limit of the harness, never the writer's failure. The structure checks hold either way.

Content is compared with what the source manifests promise (rows, key set, order-independent
checksum of all columns) and the schema with the source's plus the scenario's evolutions;
structure with what the table's own metadata claims: manifest statistics, snapshot summaries,
files listed once and present, nothing unreachable left after a success.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pyarrow as pa
from pyiceberg.io.pyarrow import _ConvertToIcebergWithoutIDs, visit_pyarrow
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType

from generators.checksum import Checksum, differing_forms
from generators.keys import expected_keys
from harness.base.known_issues import match_known_issue
from harness.base.reasons import counted, first_few, short_path, short_reason
from harness.base.table_files import TableFiles, list_files, table_files
from harness.engines.verifiers import PRIMARY, Verifier, VerifierFailed, equality_delete_readers
from harness.judge.difference import (
    first_difference,
    key_name,
    repeated_keys_reason,
)
from harness.judge.lineage import lineage_check
from harness.judge.metadata import (
    SnapshotChanges,
    layout_check,
    metadata_checks,
    new_snapshots,
    snapshot_changes,
)
from harness.judge.partitions import partition_check, partition_figures
from harness.judge.physical import PHYSICAL_CHECK
from harness.judge.readback import TableContent, read_content
from harness.judge.reference import REFERENCE
from harness.judge.scan_cost import full_scan_figures
from harness.model import PLAIN_LAYOUT, Check, EngineOptions, Expectation, KeyRanges, TableLayout, Verdict

OPERATION_COMPLETED = "operation_completed"
# pyiceberg's own refusal of equality deletes links this issue.
EQUALITY_DELETES_UPSTREAM = "apache/iceberg#6568"


@dataclass
class TableState:
    """What the table's metadata holds at one moment; taken before the operation and after."""

    snapshot_ids: set[int]
    current_snapshot_id: int | None
    metadata_files: dict[str, int]  # path -> bytes, everything under <table>/metadata
    # The metadata files the table has been at (its log and the current one): one per catalog commit.
    committed_metadata: set[str] = field(default_factory=set)
    # The current snapshot's summary (totals of files and records, what its commit added and deleted).
    summary: dict[str, str] = field(default_factory=dict)
    # Data file entries the current snapshot's manifests list (a path listed twice counts twice),
    # and the bytes they state.
    data_file_entries: int = 0
    data_file_bytes: int = 0
    last_sequence_number: int | None = None  # the table's, v2 and later

    def commits_since(self, before: TableState) -> int:
        """Catalog commits between `before` and this state (a failed attempt's file is not one)."""
        return len(self.committed_metadata - before.committed_metadata)


def capture_state(table: Table) -> TableState:
    table = table.refresh()
    current = table.current_snapshot()
    return TableState(
        snapshot_ids={snapshot.snapshot_id for snapshot in table.snapshots()},
        current_snapshot_id=current.snapshot_id if current else None,
        metadata_files=list_files(table, f"{table.location()}/metadata"),
        committed_metadata={entry.metadata_file for entry in table.metadata.metadata_log}
        | {table.metadata_location},
        summary=_summary(current),
        last_sequence_number=getattr(table.metadata, "last_sequence_number", None),  # v1 has none
        **_data_file_entries(table, current),
    )


def _data_file_entries(table: Table, snapshot: Snapshot | None) -> dict[str, int]:
    sizes = [
        entry.data_file.file_size_in_bytes
        for manifest in (snapshot.manifests(table.io) if snapshot else [])
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)
        if entry.data_file.content == DataFileContent.DATA
    ]
    return {"data_file_entries": len(sizes), "data_file_bytes": sum(sizes)}


def _summary(snapshot: Snapshot | None) -> dict[str, str]:
    if snapshot is None or snapshot.summary is None:
        return {}
    return {"operation": str(snapshot.summary.operation.value), **snapshot.summary.additional_properties}


def table_metrics(before: TableState, after: TableState, content: TableContent) -> dict[str, Any]:
    new_metadata = {
        path: size for path, size in after.metadata_files.items() if path not in before.metadata_files
    }
    return {
        "snapshots_added": len(after.snapshot_ids - before.snapshot_ids),
        "snapshots_removed": len(before.snapshot_ids - after.snapshot_ids),
        "snapshots": len(after.snapshot_ids),
        "data_files": len(content.data_files),
        "data_bytes": sum(facts.listed.file_size_in_bytes for facts in content.files),
        "data_files_before": before.data_file_entries,
        "data_bytes_before": before.data_file_bytes,
        "manifests": content.manifests,
        "metadata_files": sum(path.endswith(".metadata.json") for path in new_metadata),
        "metadata_bytes": sum(new_metadata.values()),
        "snapshot_summary": after.summary,
    }


@dataclass(frozen=True)
class Evidence:
    """What the oracle found, handed to the scenario's outcome checks (scenarios/base.py)."""

    table: Table
    before: TableState
    after: TableState
    content: TableContent
    orphans: dict[str, int]  # path -> bytes
    metrics: dict[str, Any]
    error: str | None  # the run's failure, None when every worker succeeded
    single_commit: bool  # the writer promises one catalog commit per operation

    @property
    def commits(self) -> int:
        return self.after.commits_since(self.before)


OutcomeChecks = Callable[[Evidence], list[Check]]
# A verifier that applies equality deletes, ready to read, with its options; or why none can run here.
EqualityReader = Callable[[], "tuple[Verifier, EngineOptions] | str"]


def judge(
    table: Table,
    *,
    expected: Expectation,
    error: str | None,
    before: TableState,
    single_commit: bool,
    expected_schema: pa.Schema | None = None,
    verifier: Verifier | None = None,
    verifier_options: EngineOptions | None = None,
    outcome_checks: OutcomeChecks | None = None,
    equality_reader: EqualityReader | None = None,
    layout: TableLayout = PLAIN_LAYOUT,
) -> tuple[Verdict, dict[str, Any]]:
    """Checks the table against `expected` (what the scenario says its run must have left) and
    `expected_schema` (the source's schema plus the scenario's evolutions), then how the operation
    ended: `outcome_checks`, the scenario's (operation_checks unless its family has its own).

    With a `verifier` (and its options) that engine reads the table too and must reach pyiceberg's
    checksum. A table with equality deletes that `verifier` cannot apply is read by `equality_reader`'s.
    `layout`: the partition spec, sort order and properties the run asked for (layout_in_force).
    """
    after = capture_state(table)
    content = read_content(table, keys=expected_keys(expected))
    metrics = table_metrics(before, after, content) | full_scan_figures(table, content)
    metrics |= partition_figures(table, content)
    files = table_files(table)
    orphans = files.orphans
    metrics.update(orphan_files=len(orphans), orphan_bytes=sum(orphans.values()))
    options = verifier_options or (verifier.options() if verifier else EngineOptions())
    checks, judged_by = _visible_content_checks(table, content, expected, verifier, options, equality_reader)
    checks += _file_checks(table, content)
    checks.append(live_files_check(files))
    lineage = lineage_check(table, before.last_sequence_number, expected.changed_rows)
    if lineage is not None:  # v3 tables
        checks.append(lineage)
    checks.append(partition_check(table, content))
    if expected_schema is not None:
        checks.append(schema_check(table, expected_schema, content))
    checks.append(manifest_stats_check(content))
    checks.append(
        Check.holds(
            PHYSICAL_CHECK,
            not content.physical_problems,
            lambda: first_few(content.physical_problems),
            expected="each column stored as the table's type",
            actual=counted(len(content.physical_problems), "column"),
        )
    )
    made = new_snapshots(table, before.snapshot_ids)
    changes = {snapshot.snapshot_id: snapshot_changes(table, snapshot) for snapshot in made}
    checks.append(snapshot_summary_check(table, before, after, content, changes))
    checks += metadata_checks(table, made, before.snapshot_ids, changes)
    checks.append(layout_check(table, layout, (facts.listed.spec_id for facts in content.files)))
    if (reference := REFERENCE.check(table)) is not None:
        checks.append(reference)
    evidence = Evidence(table, before, after, content, orphans, metrics, error, single_commit)
    outcome = (outcome_checks or operation_checks)(evidence)
    # A failed operation leads the list: it is what the other failures follow from.
    leading = [check for check in outcome if check.name == OPERATION_COMPLETED]
    ordered = leading + checks + [c for c in outcome if c.name != OPERATION_COMPLETED]
    return verdict_of(ordered, judged_by), metrics


def _visible_content_checks(
    table: Table,
    content: TableContent,
    expected: Expectation,
    verifier: Verifier | None,
    options: EngineOptions,
    equality_reader: EqualityReader | None = None,
) -> tuple[list[Check], str | None]:
    """The content checks and the reader whose rows they judged (None: no reader could)."""
    if not content.equality_delete_files:
        checks = _content_checks(table, content, expected)
        if verifier is not None:
            checks.append(_verifier_agrees(table, content, verifier, options))
        return checks, PRIMARY
    if verifier is None or not verifier.reads_equality_deletes:
        chosen = equality_reader() if equality_reader is not None else "none was offered"
        if isinstance(chosen, str):
            return [equality_deletes_unread(content.equality_delete_files, verifier, chosen)], None
        verifier, options = chosen
    try:
        theirs = verifier.read(_catalog_properties(table), ".".join(table.name()), options)
    except VerifierFailed as exc:
        unread = failed_check("table_readable", f"{verifier.name}: {exc}")
        # Its cap or time ran out, or it cannot read such a table at all: not the writer's failure.
        unread.harness_limit = exc.harness_limit or any(limit in str(exc) for limit in READER_CANNOT)
        return [unread], verifier.name
    # Its rows and checksum stand for the table's; a checksum over every column of every row,
    # with the row count, also settles what the key checks would (a wrong, missing or doubled key
    # changes it).
    return [
        Check.equal("row_count", expected.rows, theirs.rows),
        _checksum_equal(expected.checksum, theirs.hex),
    ], verifier.name


# What a reader the harness judges with cannot read, whatever the writer did: pyarrow's hash join,
# with which the equality-delete readers apply deletes, carries no struct, list or map column.
READER_CANNOT = ("is not supported in join",)


def equality_deletes_unread(files: int, verifier: Verifier | None, why_none: str) -> Check:
    """The check of a table whose visible rows no reader the harness has here can tell: a limit of
    the harness (`harness_limit`), not the writer's failure."""
    capable = [reader.name for reader in equality_delete_readers()]
    also = f"; --verify-with {verifier.name} cannot apply them either" if verifier is not None else ""
    return Check(
        name="equality_deletes_applied",
        passed=False,
        expected="a reader that applies equality deletes",
        actual={"equality_delete_files": files, "readers": [PRIMARY, *([verifier.name] if verifier else [])]},
        reason=f"the table holds {files} equality-delete files, which the oracle's pyiceberg cannot "
        f"apply (its planning refuses them), and no capable reader could run ({why_none}){also}, so "
        f"its rows are not judged: the readers that can are {', '.join(capable)}",
        upstream=EQUALITY_DELETES_UPSTREAM,
        harness_limit=True,
    )


def operation_checks(evidence: Evidence) -> list[Check]:
    """How one operation ended: a success committed (once, if promised) and left nothing
    unreachable; a failure left the table at its snapshot."""
    if evidence.error is not None:
        return [
            _operation_failed(evidence.error),
            Check.equal(
                "table_unchanged_after_failure",
                evidence.before.current_snapshot_id,
                evidence.after.current_snapshot_id,
                "a failed write moved the table to a new snapshot",
            ),
        ]
    added = evidence.metrics["snapshots_added"]
    checks = [
        no_orphans_check(evidence.orphans),
        Check.holds(
            "snapshots_added", added >= 1, "the operation committed nothing", expected=">= 1", actual=added
        ),
    ]
    if evidence.single_commit:
        commits = evidence.commits
        checks.append(
            Check.equal("single_commit", 1, commits, f"{commits} catalog commits for one operation")
        )
    return checks


def verdict_of(checks: list[Check], judged_by: str | None = PRIMARY) -> Verdict:
    return Verdict(passed=all(c.passed for c in checks), checks=checks, judged_by=judged_by)


def schema_check(table: Table, expected: pa.Schema, content: TableContent | None = None) -> Check:
    """The table's columns against the expected ones (order aside): names, Iceberg types,
    required/optional and, where the expected schema carries them (`PARQUET:field_id`), field ids;
    and with `content`, no null in a required column (readers would get a non-nullable Arrow
    column holding nulls). A struct, list or map column's type is compared whole, its nested
    fields' names, types and optionality with it (their ids are the table's own)."""
    want = {column.name: column for column in visit_pyarrow(expected, _ConvertToIcebergWithoutIDs()).fields}
    have = {column.name: column for column in table.schema().fields}
    differences = [f"extra column {name} ({have[name].field_type})" for name in have if name not in want]
    differences += [f"missing column {name} ({want[name].field_type})" for name in want if name not in have]
    for name, column in want.items():
        if name in have:
            differences += _column_differences(have[name], column, _expected_field_id(expected.field(name)))
    if content is not None:
        differences += _nulls_in_required(table.schema(), content)
    return Check.holds(
        "schema_matches",
        not differences,
        lambda: first_few(differences),
        expected=f"{len(want)} columns",
        actual=f"{len(have)} columns",
    )


def _column_differences(have: NestedField, want: NestedField, want_id: int | None) -> list[str]:
    name = have.name
    differences = []
    if type_text(have.field_type) != type_text(want.field_type):
        differences.append(
            f"column {name} is {type_text(have.field_type)}, expected {type_text(want.field_type)}"
        )
    if have.required != want.required:
        differences.append(f"column {name} is {_optionality(have)}, expected {_optionality(want)}")
    if want_id is not None and have.field_id != want_id:
        differences.append(f"column {name} has field id {have.field_id}, expected {want_id}")
    return differences


def _optionality(column: NestedField) -> str:
    return "required" if column.required else "optional"


def type_text(kind: IcebergType) -> str:
    """An Iceberg type as a reason shows it, nested fields with their optionality, without ids."""
    if isinstance(kind, StructType):
        fields = (
            f"{field.name}: {_optionality(field)} {type_text(field.field_type)}" for field in kind.fields
        )
        return f"struct<{', '.join(fields)}>"
    if isinstance(kind, ListType):
        return f"list<{_optionality(kind.element_field)} {type_text(kind.element_type)}>"
    if isinstance(kind, MapType):
        return (
            f"map<{type_text(kind.key_type)}, {_optionality(kind.value_field)} {type_text(kind.value_type)}>"
        )
    return str(kind)


def _expected_field_id(column: pa.Field) -> int | None:
    raw = (column.metadata or {}).get(b"PARQUET:field_id")
    return int(raw) if raw is not None else None


def _nulls_in_required(schema: Schema, content: TableContent) -> list[str]:
    """Nulls the read found in required columns (in the files as stored, deleted rows too)."""
    problems = []
    for column in schema.fields:
        if not column.required:
            continue
        if nulls := content.nulls[column.field_id]:
            problems.append(f"required column {column.name} holds {counted(nulls, 'null')}")
    return problems


def manifest_stats_check(content: TableContent) -> Check:
    """Each live data file's manifest entry against what the file holds: record_count, and per
    column (by field id) value, null and NaN counts, column sizes and bounds
    (harness/judge/statistics.py): a scan that prunes by lying statistics skips rows a full read
    still finds. Every file is checked as its read ends (readback.py); absent statistics prune
    nothing and pass."""
    lies = [
        f"{short_path(facts.path)}: {first_few(facts.stats_problems)}"
        for facts in content.files
        if facts.stats_problems
    ]
    return Check.holds(
        "manifest_stats_true",
        not lies,
        lambda: first_few(lies, shown=2),
        expected=f"{len(content.files)} files whose stats hold their content",
        actual=f"{len(lies)} files whose stats do not",
    )


def snapshot_summary_check(
    table: Table,
    before: TableState,
    after: TableState,
    content: TableContent,
    changes: dict[int, SnapshotChanges] | None = None,
) -> Check:
    """The current snapshot's summary totals against what the read counted, the changes the run's
    snapshots declare (added - deleted) against the change in those totals, and each field the
    spec defines that a run's snapshot wrote against its own manifest entries (`changes`)."""
    summary = after.summary
    if after.current_snapshot_id is None:
        return Check(name="snapshot_summary_true", passed=True, actual="no snapshot")
    if malformed := _malformed_counts(table, after, changes or {}):  # a writer's, not the harness's
        return Check.holds("snapshot_summary_true", False, lambda: first_few(malformed), expected="counts")
    problems = []
    counted = {"total-data-files": len(content.files), "total-records": content.rows_in_files}
    for key, value in counted.items():
        if key in summary and int(summary[key]) != value:
            problems.append(f"{key} {int(summary[key]):,} but the table has {value:,}")
    added = new_snapshots(table, before.snapshot_ids)
    for unit in ("data-files", "records"):
        total = f"total-{unit}"
        if not added or total not in summary:
            continue
        declared = sum(_summary_int(s, f"added-{unit}") - _summary_int(s, f"deleted-{unit}") for s in added)
        changed = int(summary[total]) - int(before.summary.get(total, 0))
        if declared != changed:
            problems.append(
                f"the run's {len(added)} snapshots declare {declared:+,} {unit}, "
                f"the totals moved {changed:+,}"
            )
    problems += _summary_field_problems(table, changes or {})
    return Check.holds(
        "snapshot_summary_true",
        not problems,
        lambda: first_few(problems),
        expected=counted,
        actual={key: summary.get(key) for key in counted},
    )


_TOTALS = ("total-data-files", "total-records", "total-delete-files", "total-files-size")


def _malformed_counts(table: Table, after: TableState, changes: dict[int, SnapshotChanges]) -> list[str]:
    """Count fields of the run's snapshots' summaries (and the current one's totals) that are no
    whole number: the spec's counts are."""
    keys = set(SnapshotChanges().summary_fields())
    found = [
        f"snapshot {snapshot.snapshot_id} says {key} {value!r}, not a count"
        for snapshot in table.metadata.snapshots
        if snapshot.snapshot_id in changes and snapshot.summary is not None
        for key in sorted(keys)
        if (value := snapshot.summary.get(key)) is not None and _count(value) is None
    ]
    return found + [
        f"the current snapshot says {key} {after.summary[key]!r}, not a count"
        for key in _TOTALS
        if key in after.summary and _count(after.summary[key]) is None
    ]


def _count(text: object) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def _summary_field_problems(table: Table, changes: dict[int, SnapshotChanges]) -> list[str]:
    """Each summary field a snapshot of the run wrote that its own manifest entries contradict."""
    problems = []
    for snapshot in table.metadata.snapshots:
        if snapshot.snapshot_id not in changes or snapshot.summary is None:
            continue
        for key, value in changes[snapshot.snapshot_id].summary_fields().items():
            written = snapshot.summary.get(key)
            if written is not None and int(written) != value:
                problems.append(
                    f"snapshot {snapshot.snapshot_id} says {key} {int(written):,}, its manifests {value:,}"
                )
    return problems


def replaced_files_deleted_check(evidence: Evidence) -> Check:
    """A replace that succeeded must delete every data file entry the table listed before, as its
    snapshots declare: file-name collisions show as a delete that reports fewer (the dlt PR's "only
    1-2 of 20 files deleted"). A table left with delete files masks old files instead of dropping
    them: then the content checks judge, not this one."""
    table, before, after = evidence.table, evidence.before, evidence.after
    if _count(after.summary.get("total-delete-files") or 0):
        return Check(name="replaced_files_deleted", passed=True, actual="delete files mask the old rows")
    added = new_snapshots(table, before.snapshot_ids)
    deleted = sum(_summary_int(snapshot, "deleted-data-files") for snapshot in added)
    listed = before.data_file_entries
    return Check.equal(
        "replaced_files_deleted",
        listed,
        deleted,
        f"the replace's snapshots delete {deleted:,} of the {listed:,} data files listed before",
    )


def _summary_int(snapshot: Snapshot, key: str) -> int:
    """A count of the summary; 0 where absent or no count (snapshot_summary_true fails that)."""
    return (_count(snapshot.summary.get(key) or 0) or 0) if snapshot.summary is not None else 0


def no_orphans_check(orphans: dict[str, int]) -> Check:
    """A run that succeeded must leave nothing unreachable. A stray `*.metadata.json` is told apart:
    a commit attempt that lost the catalog's compare-and-swap (pyiceberg's SqlCatalog writes the
    file before the swap and leaves it), the writer's retry then landed."""
    lost_swaps = [path for path in orphans if path.endswith(".metadata.json")]
    problems = [
        f"{short_path(path)} ({size:,} bytes) is reachable from no metadata" for path, size in orphans.items()
    ]
    if lost_swaps:
        problems.append(
            f"{len(lost_swaps)} of them metadata files of commit attempts that lost the catalog's "
            "compare-and-swap, left by the catalog"
        )
    return Check.holds(
        "no_orphans_after_success",
        not orphans,
        lambda: (
            first_few(problems[:-1], shown=2) + f"; {problems[-1]}" if lost_swaps else first_few(problems)
        ),
        expected=0,
        actual={"files": len(orphans), "lost_swap_metadata": len(lost_swaps)},
    )


def unreadable_verdict(error: str | None, problem: str) -> Verdict:
    """The table could not even be loaded or scanned afterwards: that is a verdict, not a crash."""
    checks = [_operation_failed(error)] if error else []
    return Verdict(passed=False, checks=[*checks, failed_check("table_readable", problem)], judged_by=None)


def _operation_failed(error: str) -> Check:
    return failed_check(OPERATION_COMPLETED, error)


def failed_check(name: str, reason: str) -> Check:
    """A check failed for `reason` (a library's error message, often): the upstream issue it is
    known as, found in the whole message; the reason kept to one short line."""
    known = match_known_issue(reason)
    upstream = known.upstream if known else None
    return Check(name=name, passed=False, reason=short_reason(reason), upstream=upstream)


def _content_checks(table: Table, content: TableContent, expected: Expectation) -> list[Check]:
    tally = content.tally
    duplicates, distinct = tally.surplus, tally.distinct
    expected_count = sum(hi - lo + 1 for lo, hi in expected.key_ranges)
    in_ranges = tally.count_in(expected.key_ranges)
    key_set_ok = content.null_keys == 0 and in_ranges == expected_count == distinct
    checks = [
        Check.equal("row_count", expected.rows, content.rows),
        Check.holds(
            "keys_unique",
            duplicates == 0 and content.null_keys == 0,
            lambda: (
                repeated_keys_reason(tally, partial(key_name, table, content.key_space))
                if duplicates
                else f"{content.null_keys:,} null keys"
            ),
            expected=0,
            actual=duplicates,
        ),
        Check.holds(
            "key_set",
            key_set_ok,
            lambda: _key_set_reason(table, content, expected, in_ranges, expected_count),
            expected=_key_ranges_in_brief(expected),
            actual={"distinct": distinct, "in_expected_ranges": in_ranges},
        ),
        _content_checksum_check(table, content, expected),
    ]
    if expected.gone_key_ranges:
        left = tally.count_in(expected.gone_key_ranges)
        checks.append(
            Check.equal(
                "replaced_rows_gone", 0, left, f"{left:,} rows of the replaced set are still in the table"
            )
        )
    return checks


def _content_checksum_check(table: Table, content: TableContent, expected: Expectation) -> Check:
    """The checksums; when they differ and the scenario knows its rows, the first differing key
    (a pass over the expected rows, made only now that the check has failed)."""
    check = _checksum_equal(expected.checksum, content.checksum)
    if check.passed or expected.sources is None:
        return check
    try:
        where = first_difference(table, content, expected.sources, content.key_space)
    except Exception as exc:  # the verdict stands without the detail, which says why it is missing
        where = f"the first differing key is not known ({type(exc).__name__}: {exc})"
    if where:
        ours, theirs = differing_forms(expected.checksum, content.checksum)
        check.reason = short_reason(f"{where} (checksum expected {ours}, found {theirs})")
        check.upstream = known.upstream if (known := match_known_issue(where)) else None
    return check


def _key_set_reason(
    table: Table, content: TableContent, expected: Expectation, in_ranges: int, expected_count: int
) -> str:
    """How many expected keys are missing and unexpected keys present, each with its first key
    (found only now that the check has failed)."""
    tally, ranges, space = content.tally, expected.key_ranges, content.key_space
    missing, unexpected = expected_count - in_ranges, tally.distinct - in_ranges

    def first(number: int | None) -> str:
        return f" (first {key_name(table, space, number)})" if number is not None else ""

    first_missing = first(tally.first_missing(ranges)) if missing else ""
    first_unexpected = first(tally.first_unexpected(ranges)) if unexpected else ""
    return (
        f"{counted(missing, 'expected key')} missing{first_missing}, "
        f"{counted(unexpected, 'unexpected key')}{first_unexpected}"
    )


def _key_ranges_in_brief(expected: Expectation) -> KeyRanges | str:
    """Key ranges as a check's `expected` shows them: a few as they are, many as a count and span;
    ranked keys (generators/keys.py) as a count of keys, their numbers being no values."""
    ranges = expected.key_ranges
    keys = sum(high - low + 1 for low, high in ranges)
    if expected.key_space:
        return f"{keys:,} keys of {', '.join(expected.key_columns)}"
    if len(ranges) <= 3:
        return ranges
    span = f"from {min(low for low, _ in ranges)} to {max(high for _, high in ranges)}"
    return f"{keys:,} keys in {len(ranges)} ranges {span}"


def _verifier_agrees(
    table: Table, content: TableContent, verifier: Verifier, options: EngineOptions
) -> Check:
    ours = Checksum.from_hex(content.checksum, content.rows)
    try:
        theirs = verifier.read(_catalog_properties(table), ".".join(table.name()), options)
    except VerifierFailed as exc:
        disagreed = failed_check("engines_agree", f"pyiceberg read {ours.rows} rows, but {exc}")
        disagreed.harness_limit = exc.harness_limit
        return disagreed
    return engines_agree("pyiceberg", ours, verifier.name, theirs)


def _catalog_properties(table: Table) -> dict[str, str]:
    return {key: str(value) for key, value in table.catalog.properties.items()}


def engines_agree(engine: str, read: Checksum, other_engine: str, other_read: Checksum) -> Check:
    """Two engines reading one table must see the same rows; the failure names both."""
    return Check.holds(
        "engines_agree",
        read == other_read,
        f"{engine} reads {read.rows} rows (checksum {read.short}), "
        f"{other_engine} reads {other_read.rows} rows (checksum {other_read.short})",
        expected={"engine": engine, "rows": read.rows, "checksum": read.hex},
        actual={"engine": other_engine, "rows": other_read.rows, "checksum": other_read.hex},
    )


def _repeated_files_reason(repeated: dict[str, int]) -> str:
    """e.g. `1 data file listed more than once, e.g. data/00000-0-....parquet 100 times` (the
    example: the file listed most)."""
    most = max(sorted(repeated), key=repeated.__getitem__)
    return (
        f"{counted(len(repeated), 'data file')} listed more than once, "
        f"e.g. {short_path(most)} {repeated[most]:,} times"
    )


def _file_checks(table: Table, content: TableContent) -> list[Check]:
    repeated = {path: n for path, n in Counter(content.data_files).items() if n > 1}
    missing = [path for path in set(content.data_files) if not table.io.new_input(path).exists()]
    return [
        Check.equal("data_files_listed_once", 0, len(repeated), lambda: _repeated_files_reason(repeated)),
        Check.equal(
            "data_files_exist",
            0,
            len(missing),
            lambda: f"{len(missing)} listed data files are missing, e.g. {short_path(min(missing))}",
        ),
    ]


LIVE_FILES_CHECK = "live_snapshot_files_exist"


def live_files_check(files: TableFiles) -> Check:
    """Every snapshot still in the metadata must stay readable: its manifest list, its manifests and
    the data and delete files they list as added or existing must exist. Expiring a snapshot is
    what frees its files; deleting one while a snapshot names it breaks the table (time travel,
    incremental reads, a rollback)."""
    missing = files.missing
    return Check.holds(
        LIVE_FILES_CHECK,
        not missing,
        lambda: first_few(
            [
                f"{short_path(path)}, needed by snapshot {snapshot}, is missing"
                for path, snapshot in missing.items()
            ]
        ),
        expected=0,
        actual={"missing": len(missing), "snapshots": len(set(missing.values()))},
    )


def _checksum_equal(expected: str, actual: str) -> Check:
    """content_checksum: the whole checksums compared and recorded, their short forms in the reason."""
    return Check.equal(
        "content_checksum",
        expected,
        actual,
        lambda: "expected {}, found {}".format(*differing_forms(expected, actual)),
    )
