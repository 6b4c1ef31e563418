"""Row lineage of v3 tables (harness/judge/lineage.py): Spark's v3 table passes; the same table
damaged (row ids handed out twice by its files or its snapshots, a next-row-id below them) fails,
naming what repeats."""

import json
import uuid
from pathlib import Path

import pytest
from kept_v3_run import kept_v3_run
from pyiceberg.avro.file import AvroFile, AvroOutputFile
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DATA_FILE_TYPE,
    MANIFEST_ENTRY_SCHEMAS,
    MANIFEST_LIST_FILE_SCHEMAS,
    ManifestEntryStatus,
)
from pyiceberg.table import StaticTable, Table
from pyiceberg.typedef import Record

from harness.engines.spark import missing_jars
from harness.judge.lineage import LINEAGE_CHECK, lineage_check

FIRST_ROW_ID = [field.name for field in DATA_FILE_TYPE[3].fields].index("first_row_id")

pytestmark = pytest.mark.skipif(bool(missing_jars()), reason="Spark jars missing: run make spark-jars")


@pytest.fixture(scope="module")
def spark_v3(settings, tiny_sets) -> tuple[object, Table]:
    """Spark's append of tiny into a v3 table, two files (5,000 rows each), kept for the damage."""
    return kept_v3_run(settings, tiny_sets, "append", "spark")


def test_sparks_v3_table_hands_out_each_row_id_once(spark_v3):
    record, table = spark_v3
    check = next(c for c in record.verdict.checks if c.name == LINEAGE_CHECK)
    assert check.passed, check.reason
    assert check.actual == {
        "files": 2, "row_ids": 10_000, "next_row_id": 10_000, "live_rows": 10_000, "updated_by_run": 10_000,
    }  # fmt: skip
    assert lineage_check(table).passed


def test_a_next_row_id_below_the_ids_handed_out_fails(spark_v3, tmp_path):
    _, table = spark_v3
    damaged = _with_metadata(table, tmp_path, lambda metadata: metadata | {"next-row-id": 5_000})
    check = lineage_check(damaged)
    assert not check.passed
    assert "next-row-id 5000 is not above the last row id handed out, 9999" in check.reason


def test_snapshots_that_hand_out_the_same_ids_fail(spark_v3, tmp_path):
    _, table = spark_v3

    def second_snapshot(metadata: dict) -> dict:
        (first,) = metadata["snapshots"]
        again = first | {"snapshot-id": first["snapshot-id"] + 1, "sequence-number": 2, "first-row-id": 5_000}
        return metadata | {"snapshots": [first, again], "next-row-id": 15_000}

    check = lineage_check(_with_metadata(table, tmp_path, second_snapshot))
    assert not check.passed and "row ids repeat: 1 pairs of snapshots share ids" in check.reason


def test_data_files_that_hold_the_same_row_ids_fail(spark_v3, tmp_path):
    """The second file says its first row id is 0: its rows' ids are the first file's."""
    _, table = spark_v3

    def repeated(entries: list[Record]) -> list[Record]:
        entries[1][4][FIRST_ROW_ID] = 0  # entry: status, snapshot, sequence, file sequence, data_file
        return entries

    check = lineage_check(_with_entries(table, tmp_path, repeated))
    assert not check.passed and "row ids repeat: 1 pairs of files share ids" in check.reason
    assert "[0, 5000)" in check.reason


def test_a_deleted_entry_inherits_no_row_ids(spark_v3, tmp_path):
    """Legal: a manifest that lists a deleted file before the live ones (as a replace's manifest
    does). Java's ManifestReader hands the manifest's ids to live entries only, so the live files
    still hold [0, 5000) and [5000, 10000), below next-row-id 10000."""
    _, table = spark_v3

    def deleted_first(entries: list[Record]) -> list[Record]:
        gone = Record(*entries[0])
        gone[0] = ManifestEntryStatus.DELETED.value
        return [gone, *entries]

    check = lineage_check(_with_entries(table, tmp_path, deleted_first))
    assert check.passed, check.reason
    assert check.actual["row_ids"] == 10_000


def _with_entries(table: Table, folder: Path, change) -> Table:
    """The table read with its one manifest's entries changed (a copy of manifest, list, metadata)."""
    (manifest,) = _records(table, table.current_snapshot().manifest_list, MANIFEST_LIST_FILE_SCHEMAS[3])
    entries = change(_records(table, manifest[0], MANIFEST_ENTRY_SCHEMAS[3]))
    new_manifest = _write(folder / "manifest.avro", entries, MANIFEST_ENTRY_SCHEMAS[3], "manifest_entry")
    manifest[0], manifest[1] = new_manifest, Path(new_manifest.removeprefix("file://")).stat().st_size
    new_list = _write(folder / "snap.avro", [manifest], MANIFEST_LIST_FILE_SCHEMAS[3], "manifest_file")

    def pointed(metadata: dict) -> dict:
        (only,) = metadata["snapshots"]
        return metadata | {"snapshots": [only | {"manifest-list": new_list}]}

    return _with_metadata(table, folder, pointed)


def _with_metadata(table: Table, folder: Path, change) -> Table:
    """The table read from a copy of its metadata, changed."""
    metadata = json.loads(Path(table.metadata_location.removeprefix("file:")).read_text())
    path = folder / f"{uuid.uuid4()}.metadata.json"
    path.write_text(json.dumps(change(metadata)))
    return StaticTable.from_metadata(f"file://{path}")


def _records(table: Table, path: str, schema) -> list[Record]:
    with AvroFile[Record](table.io.new_input(path), schema) as reader:
        return list(reader)


def _write(path: Path, records: list[Record], schema, name: str) -> str:
    location = f"file://{path}"
    with AvroOutputFile[Record](PyArrowFileIO().new_output(location), schema, name) as out:
        out.write_block(records)
    return location
