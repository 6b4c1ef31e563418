"""Deletion vectors and row lineage after an update (Iceberg v3): Spark's merge-on-read upsert into a
v3 table writes vectors as Puffin blobs and keeps each updated row's `_row_id` in its new file; the
oracle applies the vectors through pyiceberg's reader, and Iceberg Java reads every live blob
(`loads_in_reference`). The same table with one vector damaged fails: a deleted row moved to
another row (a valid vector, the wrong rows: the content says so, and the old row's `_row_id` is
live twice), a position past its data file's rows, a blob whose checksum no longer holds (Java
refuses both, naming why). Updated rows stored with their old `_last_updated_sequence_number`, or
with one from the future, fail `row_lineage`."""

import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kept_v3_run import kept_v3_run
from pyiceberg.manifest import MANIFEST_ENTRY_SCHEMAS, MANIFEST_LIST_FILE_SCHEMAS
from pyiceberg.table import StaticTable, Table
from pyroaring import BitMap

from harness.engines.spark import missing_jars
from harness.judge.lineage import LINEAGE_CHECK, read_avro
from harness.judge.oracle import capture_state, judge
from harness.judge.reference import REFERENCE_CHECK
from scenarios import get_scenario

pytestmark = pytest.mark.skipif(bool(missing_jars()), reason="Spark jars missing: run make spark-jars")

DV_MAGIC = bytes.fromhex("D1D33964")  # the spec's deletion-vector-v1 blob
DELETES = 1  # a manifest's content: deletes


@pytest.fixture(scope="module")
def mor_v3(settings, tiny_sets) -> tuple[object, Table]:
    """spark-mor's upsert of tiny's changes into a v3 table, kept for the damage."""
    return kept_v3_run(settings, tiny_sets, "upsert", "spark-mor")


def test_sparks_deletion_vectors_are_applied_by_the_oracle_and_read_by_java(mor_v3):
    record, table = mor_v3
    assert record.status == "ok" and record.verdict.passed, [c.reason for c in record.verdict.failed]
    vectors = _vectors(table)
    assert vectors and all(vector["file_format"] == "PUFFIN" for vector in vectors)
    assert record.full_scan_delete_files >= 1  # pyiceberg's reader applied them
    reference = next(check for check in record.verdict.checks if check.name == REFERENCE_CHECK)
    assert reference.actual["deletion_vectors"] == len(vectors)
    assert reference.actual["deleted_positions"] == sum(vector["record_count"] for vector in vectors)


@pytest.mark.parametrize(
    ("damage", "failing", "reason"),
    [
        ("moved", "content_checksum", "checksum"),
        ("past-the-end", REFERENCE_CHECK, "marks position"),
        ("checksum", REFERENCE_CHECK, "CRC"),
    ],
)
def test_a_damaged_deletion_vector_fails(mor_v3, tiny_sets, damage, failing, reason):
    _, table = mor_v3
    with _damaged_vector(table, damage):
        verdict = _judged(table, tiny_sets)
    failed = {check.name: check for check in verdict.failed}
    assert failing in failed, [check.reason for check in verdict.checks]
    assert reason in failed[failing].reason
    if damage == "moved":  # a valid vector: Java reads it, only the rows tell
        assert REFERENCE_CHECK not in failed and "row_count" not in failed
        assert failed[LINEAGE_CHECK].reason.startswith("_row_id repeats: 1 live rows share an id")


def test_the_updated_rows_carry_the_upserts_sequence_number(mor_v3):
    record, table = mor_v3
    check = next(check for check in record.verdict.checks if check.name == LINEAGE_CHECK)
    changes = table.current_snapshot().summary  # the change set: its rows all written anew
    assert check.actual["updated_by_run"] == int(changes["added-records"]) == 3_000
    assert check.actual["live_rows"] == int(changes["total-records"]) - int(changes["total-position-deletes"])


@pytest.mark.parametrize(
    ("stored", "reason"),
    [
        ("old", "the run wrote 3,000 rows, but only 0 live rows carry a sequence number of it"),
        ("future", "files store a _last_updated_sequence_number above their own data sequence number"),
    ],
)
def test_updated_rows_with_a_wrong_sequence_number_fail(mor_v3, tiny_sets, stored, reason):
    """The upsert's new file rewritten with every row's sequence number stored: the set-up's (the
    updated rows then claim they were never updated) or one no commit has made yet."""
    _, table = mor_v3
    since = table.metadata.last_sequence_number
    value = {"old": since - 1, "future": since + 5}[stored]
    (written,) = [
        f["file_path"] for f in _data_files(table, deletes=False) if "initial-" not in f["file_path"]
    ]
    path = Path(written.removeprefix("file://").removeprefix("file:"))
    original = path.read_bytes()
    rows = pq.read_table(path)
    column = pa.array([value] * rows.num_rows, pa.int64())
    field = pa.field(
        "_last_updated_sequence_number", pa.int64(), metadata={b"PARQUET:field_id": b"2147483539"}
    )
    if field.name in rows.column_names:
        rows = rows.drop_columns([field.name])
    pq.write_table(rows.append_column(field, column), path)
    try:
        verdict = _judged(table, tiny_sets)
    finally:
        path.write_bytes(original)
    failed = {check.name: check for check in verdict.failed}
    assert LINEAGE_CHECK in failed and reason in failed[LINEAGE_CHECK].reason, failed


def test_the_undamaged_table_passes_again(mor_v3, tiny_sets):
    """The damage is undone after each test: the legal table is judged as it was."""
    _, table = mor_v3
    verdict = _judged(table, tiny_sets)
    assert verdict.passed, [check.reason for check in verdict.failed]


def _judged(table: Table, tiny_sets):
    scenario = get_scenario("upsert")()
    before = StaticTable.from_metadata(table.metadata.metadata_log[-1].metadata_file)
    before.refresh = lambda: before  # a StaticTable is as it was: nothing to refresh
    verdict, _ = judge(
        table, expected=scenario.expected_after(tiny_sets), error=None, before=capture_state(before),
        single_commit=True,
    )  # fmt: skip
    return verdict


def _data_files(table: Table, deletes: bool) -> list[dict]:
    """The current snapshot's data or delete files (with the v3 fields pyiceberg's reader drops)."""
    manifests = read_avro(table, table.current_snapshot().manifest_list, MANIFEST_LIST_FILE_SCHEMAS[3])
    return [
        entry["data_file"]
        for manifest in manifests
        if (manifest["content"] == DELETES) is deletes
        for entry in read_avro(table, manifest["manifest_path"], MANIFEST_ENTRY_SCHEMAS[3])
    ]


def _vectors(table: Table) -> list[dict]:
    return _data_files(table, deletes=True)


@contextmanager
def _damaged_vector(table: Table, damage: str) -> Iterator[None]:
    """The first vector's blob rewritten in place, its length kept (the manifest and the Puffin
    footer still point at it); the file restored afterwards."""
    vector = _vectors(table)[0]
    path = Path(vector["file_path"].removeprefix("file://").removeprefix("file:"))
    original = path.read_bytes()
    start, size = vector["content_offset"], vector["content_size_in_bytes"]
    blob = original[start : start + size]
    target = vector["referenced_data_file"]
    rows = next(
        file["record_count"] for file in _data_files(table, deletes=False) if file["file_path"] == target
    )
    path.write_bytes(original[:start] + _damage(blob, damage, rows) + original[start + size :])
    try:
        yield
    finally:
        path.write_bytes(original)


def _damage(blob: bytes, damage: str, rows: int) -> bytes:
    """A deletion-vector-v1 blob: length (big-endian), magic, a 64-bit portable roaring bitmap (the
    count of 32-bit bitmaps, then each one's key and bitmap), CRC-32 of magic and bitmap."""
    (length,) = struct.unpack(">I", blob[:4])
    body = blob[4 : 4 + length]
    assert body[:4] == DV_MAGIC and struct.unpack("<Q", body[4:12]) == (1,)  # positions below 2**32
    header, bitmap = body[:16], BitMap.deserialize(body[16:])
    assert bitmap.serialize() == body[16:]  # pyroaring writes what Java wrote
    if damage == "checksum":
        return blob[:-4] + struct.pack(">I", (zlib.crc32(body) + 1) & 0xFFFFFFFF)
    kept = [row for row in range(rows) if row not in bitmap]
    moves = [(gone, rows + 7) for gone in bitmap] if damage == "past-the-end" else []
    moves += [(gone, row) for gone in bitmap for row in kept[:50]] if damage == "moved" else []
    for gone, row in moves:  # the first move that keeps the bitmap's size (no container changes)
        moved = BitMap(bitmap)
        moved.remove(gone)
        moved.add(row)
        if len(serialized := moved.serialize()) == len(body) - 16:
            new_body = header + serialized
            return blob[:4] + new_body + struct.pack(">I", zlib.crc32(new_body))
    raise AssertionError(f"no {damage} move keeps the vector's size")
