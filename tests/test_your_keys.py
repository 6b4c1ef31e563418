"""Keys of any type and of several columns (generators/keys.py): your set's keys ranked in its key
space, the sets derived from it (generators/your_changes.py) numbered in the same space, and the
oracle's key checks on them firing on damaged tables with the keys' real values in their reasons."""

import datetime
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from generators.checksum import Checksum
from generators.datasets import DataSet
from generators.keys import KeySpace
from generators.your_changes import your_changes, your_replacement
from generators.your_data import your_data
from harness.base.errors import SourceError
from harness.judge.oracle import capture_state, judge
from harness.judge.readback import read_content
from harness.model import RowSource
from scenarios.base import expect_set, expect_upserted

UTC = datetime.UTC
ROWS = 400


def keyed(values: pa.Array, rows: int = ROWS) -> pa.Table:
    """`values` as the key `k`, beside a string and a nested column."""
    return pa.table(
        {
            "k": values,
            "note": pa.array([f"n{i}" if i % 3 else None for i in range(rows)]),
            "tags": pa.array(
                [[f"t{i}", None] if i % 2 else None for i in range(rows)], pa.list_(pa.string())
            ),
        }
    )


KEY_TYPES = {
    "string": pa.array([f"ORD-{i:06d}" for i in range(ROWS)][::-1]),
    "large_string": pa.array([f"ORD-{i:06d}" for i in range(ROWS)], pa.large_string()),
    "date": pa.array([datetime.date(2026, 1, 1) + datetime.timedelta(days=i) for i in range(ROWS)]),
    "timestamptz": pa.array(
        [datetime.datetime(2026, 1, 1, tzinfo=UTC) + datetime.timedelta(hours=i) for i in range(ROWS)],
        pa.timestamp("us", tz="UTC"),
    ),
    "decimal": pa.array([Decimal(i).scaleb(-9) for i in range(ROWS)], pa.decimal128(38, 9)),
    "binary": pa.array([i.to_bytes(4, "big") for i in range(ROWS)], pa.binary()),
    "uuid": pa.array([uuid.UUID(int=i * 7919).bytes for i in range(ROWS)], pa.binary(16)),
    "uuid extension": pa.ExtensionArray.from_storage(
        pa.uuid(), pa.array([uuid.UUID(int=i * 7919).bytes for i in range(ROWS)], pa.binary(16))
    ),
    "int32": pa.array(range(0, 3 * ROWS, 3), pa.int32()),  # sparse: ranked like any other key
}


def your_set(tmp_path: Path, rows: pa.Table, key: list[str], name: str = "yours") -> DataSet:
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(rows.slice(0, ROWS // 2), folder / "a.parquet", row_group_size=50)
    pq.write_table(rows.slice(ROWS // 2), folder / "b.parquet")
    return your_data(str(folder), key, tmp_path / "cache")


@pytest.mark.parametrize("kind", KEY_TYPES)
def test_keys_of_every_type_are_numbered_and_named_by_their_values(tmp_path: Path, kind: str):
    data = your_set(tmp_path, keyed(KEY_TYPES[kind]), ["k"])
    space = data.manifest.keys
    assert space.ranked and data.manifest.key_ranges == [(0, ROWS - 1)]
    rows = pq.read_table(data.manifest.file_paths(data.directory)[1])
    assert space.numbers(rows).tolist() == list(range(ROWS // 2, ROWS))
    assert space.values([3])[0] == {"k": KEY_TYPES[kind][3].as_py()}
    # The same keys in a wider or narrower Arrow layout are the same keys (one Iceberg type).
    if kind == "string":
        assert space.numbers(
            rows.cast(rows.schema.set(0, pa.field("k", pa.large_string())))
        ).tolist() == list(range(ROWS // 2, ROWS))


@pytest.mark.parametrize("kind", KEY_TYPES)
def test_derived_sets_make_new_keys_of_the_keys_type(tmp_path: Path, kind: str):
    data = your_set(tmp_path, keyed(KEY_TYPES[kind]), ["k"])
    changes = your_changes(data, seed=7, update_ratio=0.2, insert_ratio=0.1)
    after = changes.manifest.expected_after_upsert
    assert after is not None and changes.manifest.kind == "changes"
    assert changes.manifest.updates == round(0.2 * ROWS) and changes.manifest.inserts == round(0.1 * ROWS)
    assert after.rows == ROWS + changes.manifest.inserts and after.key_ranges == [(0, ROWS + 40 - 1)]
    assert changes.manifest.key_space[0] == data.manifest.key_space[0]  # the base's keys, then the new
    inserted = pq.read_table(changes.manifest.key_space[1]).column("k")
    assert inserted.type == KEY_TYPES[kind].type
    assert not set(inserted.to_pylist()) & set(KEY_TYPES[kind].to_pylist())
    again = your_changes(data, seed=7, update_ratio=0.2, insert_ratio=0.1)
    assert again.manifest == changes.manifest  # made once, the same for the same seed
    other = your_changes(data, seed=8, update_ratio=0.2, insert_ratio=0.1)
    assert other.manifest.checksum != changes.manifest.checksum
    replacement = your_replacement(data)
    assert replacement.manifest.key_ranges == [(ROWS, 2 * ROWS - 1)]  # disjoint from yours


def test_a_composite_key_is_one_key_of_several_columns(tmp_path: Path):
    """(region, n) is unique though neither column is: numbered, named and derived as one key."""
    rows = keyed(pa.array([i % 40 for i in range(ROWS)], pa.int64())).append_column(
        "region", pa.array(["eu", "us"] * (ROWS // 2))
    )
    rows = rows.set_column(0, "n", pa.array([i // 2 for i in range(ROWS)], pa.int64()))
    data = your_set(tmp_path, rows, ["region", "n"])
    assert data.manifest.keys.describe(5) == "(region=us, n=2)"
    changes = your_changes(data, seed=1, update_ratio=0.1, insert_ratio=0.1)
    after = changes.manifest.expected_after_upsert
    assert after is not None and after.rows == ROWS + changes.manifest.inserts
    with pytest.raises(SourceError, match=r"key n is not unique: 200 keys repeat \(one is n="):
        your_set(tmp_path, rows, ["n"], name="by-n")


def test_a_key_type_with_no_new_values_is_refused_in_one_line(tmp_path: Path):
    rows = keyed(pa.array([datetime.time(0, 0, i % 60, i) for i in range(ROWS)], pa.time64("us")))
    data = your_set(tmp_path, rows, ["k"])
    with pytest.raises(SourceError, match=r"key column k is time64\[us\]: icebench cannot make new keys"):
        your_changes(data, seed=1, update_ratio=0.1, insert_ratio=0.1)
    assert your_changes(data, seed=1, update_ratio=0.1, insert_ratio=0.0).manifest.inserts == 0


def test_your_own_change_set_is_numbered_in_your_sets_key_space(tmp_path: Path):
    base = your_set(tmp_path, keyed(KEY_TYPES["string"]), ["k"])
    folder = tmp_path / "mine"
    folder.mkdir()
    mine = keyed(pa.array(["ORD-000005", "ORD-000399", "NEW-1"]), rows=3)
    pq.write_table(mine, folder / "c.parquet")
    changes = your_data(str(folder), ["k"], tmp_path / "cache", base=base, kind="changes")
    assert changes.manifest.updates == 2 and changes.manifest.inserts == 1
    assert changes.manifest.key_ranges == [(0, 0), (394, 394), (ROWS, ROWS)]  # your files list keys reversed
    replaced = all_rows(base).take([0, 394])  # ORD-000399 and ORD-000005
    after = changes.manifest.expected_after_upsert
    assert after is not None and after.rows == ROWS + 1
    expected = Checksum.from_hex(base.manifest.checksum, ROWS) + Checksum.of(mine) - Checksum.of(replaced)
    assert after.checksum == expected.hex


# The oracle on damaged tables keyed by strings: each check fires, naming real key values.


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    catalog = SqlCatalog("icebench", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/w")
    catalog.create_namespace("yours")
    return catalog


def judged(catalog: SqlCatalog, tmp_path: Path, rows: pa.Table, expected, name: str = "t"):
    table = catalog.create_table(f"yours.{name}", schema=rows.schema)
    before = capture_state(table)
    pq.write_table(rows, tmp_path / f"{name}.parquet")
    table.add_files([str(tmp_path / f"{name}.parquet")])
    verdict, _ = judge(table, expected=expected, error=None, before=before, single_commit=True)
    return {check.name: check for check in verdict.checks}


def all_rows(data: DataSet) -> pa.Table:
    return pa.concat_tables(pq.read_table(path) for path in data.manifest.file_paths(data.directory))


def test_a_sound_table_keyed_by_strings_passes(catalog: SqlCatalog, tmp_path: Path):
    data = your_set(tmp_path, keyed(KEY_TYPES["string"]), ["k"])
    checks = judged(catalog, tmp_path, all_rows(data), expect_set(data))
    assert all(check.passed for check in checks.values()), [c for c in checks.values() if not c.passed]


def test_a_key_changed_by_a_writer_fails_the_key_set_naming_both_values(catalog: SqlCatalog, tmp_path: Path):
    data = your_set(tmp_path, keyed(KEY_TYPES["string"]), ["k"])
    rows = all_rows(data)
    keys = rows.column("k").to_pylist()
    keys[10] = "ORD-999999"
    damaged = rows.set_column(0, "k", pa.array(keys))
    checks = judged(catalog, tmp_path, damaged, expect_set(data))
    assert not checks["key_set"].passed
    assert (
        checks["key_set"].reason
        == "1 expected key missing (first k=ORD-000389), 1 unexpected key (first k=ORD-999999)"
    )
    assert not checks["content_checksum"].passed


def test_a_repeated_string_key_fails_keys_unique_by_its_value(catalog: SqlCatalog, tmp_path: Path):
    data = your_set(tmp_path, keyed(KEY_TYPES["string"]), ["k"])
    rows = all_rows(data)
    damaged = pa.concat_tables([rows, rows.slice(7, 1)])
    checks = judged(catalog, tmp_path, damaged, expect_set(data))
    assert not checks["keys_unique"].passed
    assert checks["keys_unique"].reason == "1 key repeated (1 surplus row), the smallest k=ORD-000392"


def test_a_replace_that_leaves_a_row_behind_fails_by_your_keys(catalog: SqlCatalog, tmp_path: Path):
    data = your_set(tmp_path, keyed(KEY_TYPES["string"]), ["k"])
    replacement = your_replacement(data)
    expected = expect_set(replacement)
    expected.gone_key_ranges = list(data.manifest.key_ranges)
    damaged = pa.concat_tables([all_rows(replacement), all_rows(data).slice(0, 1)])
    checks = judged(catalog, tmp_path, damaged, expected)
    assert not checks["replaced_rows_gone"].passed and checks["replaced_rows_gone"].actual == 1
    assert "first k=ORD-000399" in checks["key_set"].reason


def test_an_upsert_that_kept_an_old_value_fails_the_checksum_naming_the_key(
    catalog: SqlCatalog, tmp_path: Path
):
    data = your_set(tmp_path, keyed(KEY_TYPES["string"]), ["k"])
    changes = your_changes(data, seed=3, update_ratio=0.2, insert_ratio=0.1)
    expected = expect_upserted(data, changes)
    assert expected.sources == [RowSource(directory=data.directory), RowSource(directory=changes.directory)]
    updated = all_rows(changes)
    kept = pc.invert(pc.is_in(all_rows(data).column("k"), value_set=updated.column("k").combine_chunks()))
    sound = pa.concat_tables([all_rows(data).filter(kept), updated])
    checks = judged(catalog, tmp_path, sound, expected, name="sound")
    assert all(check.passed for check in checks.values()), [c for c in checks.values() if not c.passed]
    # The first updated row keeps its old values: the checksum fails at that key.
    first = updated.column("k")[0].as_py()
    old = all_rows(data).filter(pc.equal(all_rows(data).column("k"), first))
    stale = pa.concat_tables([sound.filter(pc.not_equal(sound.column("k"), first)), old])
    checks = judged(catalog, tmp_path, stale, expected, name="stale")
    assert not checks["content_checksum"].passed
    assert checks["content_checksum"].reason.startswith(f"key k={first}: ")


def test_the_key_space_tells_an_unknown_key_from_every_known_one():
    space = KeySpace(("k",))
    assert not space.ranked and space.numbers(pa.table({"k": [5, -3]})).tolist() == [5, -3]


@pytest.mark.parametrize("ranked", [False, True])
def test_a_table_whose_files_lack_the_key_holds_null_keys(catalog: SqlCatalog, tmp_path: Path, ranked: bool):
    """Rows without their key column are counted as null keys, whatever the key's numbering."""
    rows = keyed(KEY_TYPES["string"]).drop_columns(["k"])
    table = catalog.create_table("yours.keyless", schema=rows.schema)
    pq.write_table(rows, tmp_path / "keyless.parquet")
    table.add_files([str(tmp_path / "keyless.parquet")])
    space = (
        your_set(tmp_path, keyed(KEY_TYPES["string"]), ["k"]).manifest.keys if ranked else KeySpace(("k",))
    )
    content = read_content(table, keys=space)
    assert content.null_keys == ROWS and content.tally.rows == 0 and content.rows == ROWS
