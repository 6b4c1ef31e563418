import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from generators.changes import change_rows, generate_changes
from generators.checksum import Checksum, row_hashes
from generators.manifest import DatasetManifest, ManifestError
from generators.presets import get_preset
from generators.schema import EVOLVED_COLUMN, KEY_COLUMN, wide_schema
from generators.wide import generate_base

REPO = Path(__file__).resolve().parents[1]


def read_set(directory: Path) -> pa.Table:
    manifest = DatasetManifest.load(directory)
    return pa.concat_tables([pq.read_table(path) for path in manifest.file_paths(directory)])


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("base")
    generate_base(out, rows=5_000, columns=12, files=2, seed=7)
    return out


@pytest.fixture(scope="module")
def sample(base_dir: Path) -> pa.Table:
    """Every generated type, with nulls."""
    return read_set(base_dir).slice(0, 400)


# --- schema and presets -------------------------------------------------------------------


def test_wide_schema_layout():
    schema = wide_schema(12, evolved=True)
    assert schema.names[:4] == ["id", "c001_int32", "c002_int64", "c003_float64"]
    assert schema.names[-1] == EVOLVED_COLUMN
    assert schema.field("c011_int32").type == pa.int32()  # the type mix cycles every 10 columns
    assert schema.field("c005_dec10").type == pa.decimal128(10, 3)
    assert all(field.nullable for field in schema)
    assert len(wide_schema(1001)) == 1001 and wide_schema(1001).names[-1] == "c1000_text"
    with pytest.raises(ValueError):
        wide_schema(1)


def test_presets():
    assert get_preset("wide").columns == 400
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        get_preset("huge")


# --- base sets ----------------------------------------------------------------------------


def test_base_set_matches_its_manifest(base_dir: Path):
    manifest = DatasetManifest.load(base_dir)
    table = read_set(base_dir)
    assert table.schema.equals(wide_schema(12))
    assert table.num_rows == manifest.rows == sum(entry.rows for entry in manifest.files)
    assert pc.all(pc.equal(table[KEY_COLUMN], pa.array(np.arange(5_000)))).as_py()
    assert manifest.key_ranges == [(0, 4_999)]
    assert Checksum.of(table).hex == manifest.checksum
    assert 0 < table["c004_str"].null_count < 1_000
    decimals = pq.ParquetFile(manifest.file_paths(base_dir)[0]).schema.column(5)
    assert decimals.physical_type == "INT64"  # store_decimal_as_integer


def test_same_seed_same_bytes_whatever_the_worker_count(tmp_path: Path):
    progress: list[int] = []
    one = generate_base(tmp_path / "one", rows=3_000, columns=15, files=3, seed=11, workers=1)
    two = generate_base(
        tmp_path / "two", rows=3_000, columns=15, files=3, seed=11, workers=2, progress=progress.append
    )
    other = generate_base(tmp_path / "other", rows=3_000, columns=15, files=3, seed=12, workers=1)
    assert one == two
    for entry in one.files:
        assert (tmp_path / "one" / entry.name).read_bytes() == (tmp_path / "two" / entry.name).read_bytes()
    assert sum(progress) == 3_000
    assert other.checksum != one.checksum


def test_generation_memory_does_not_grow_with_rows(tmp_path: Path):
    script = textwrap.dedent(
        """
        import resource, sys
        from pathlib import Path
        from generators.wide import generate_base
        generate_base(Path(sys.argv[1]), rows=int(sys.argv[2]), columns=160, files=1, seed=1, workers=1)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )

    def peak_rss(rows: int) -> int:
        command = [sys.executable, "-c", script, str(tmp_path / str(rows)), str(rows)]
        return int(subprocess.run(command, cwd=REPO, capture_output=True, check=True, text=True).stdout)

    # 160 columns -> ~39k-row row groups: 2 of them against 9.
    assert peak_rss(320_000) / peak_rss(40_000) < 1.3


# --- checksum -----------------------------------------------------------------------------


def test_checksum_ignores_row_order_and_batching(sample: pa.Table):
    expected = Checksum.of(sample)
    shuffled = sample.take(np.random.default_rng(0).permutation(sample.num_rows))
    assert Checksum.of(shuffled) == expected
    batched = Checksum()
    for batch in sample.to_batches(max_chunksize=37):  # sliced batches: non-zero offsets
        batched.update(batch)
    assert batched == expected
    halves = Checksum.of(sample.slice(0, 150)) + Checksum.of(sample.slice(150))
    assert halves == expected
    assert Checksum.of(pa.concat_tables([sample.slice(0, 99), sample.slice(99)])) == expected


def test_checksum_ignores_column_order_and_string_layout(sample: pa.Table):
    expected = Checksum.of(sample)
    assert Checksum.of(sample.select(sample.column_names[::-1])) == expected
    for string_type in (pa.large_string(), pa.string_view(), pa.dictionary(pa.int32(), pa.string())):
        recast = pa.schema(
            [field.with_type(string_type) if field.type == pa.string() else field for field in sample.schema]
        )
        assert Checksum.of(sample.cast(recast)) == expected, string_type


def test_checksum_treats_timestamp_zones_alike():
    values = pa.array([0, 1_700_000_000_000_000, None], pa.int64())
    as_utc = pa.table({"ts": values.cast(pa.timestamp("us", tz="UTC"))})
    as_offset = pa.table({"ts": values.cast(pa.timestamp("us", tz="+00:00"))})
    assert Checksum.of(as_utc) == Checksum.of(as_offset)


@pytest.mark.parametrize("as_integer", [True, False])
def test_checksum_survives_decimal_storage(sample: pa.Table, tmp_path: Path, as_integer: bool):
    path = tmp_path / "decimals.parquet"
    pq.write_table(sample, path, store_decimal_as_integer=as_integer)
    assert Checksum.of(pq.read_table(path)) == Checksum.of(sample)


def test_string_hash_is_layout_independent():
    values = ["", None, "a", "ab", "ba", "a\x00", "žluťoučký kůň", "x" * 100_000, "", "tail"]
    plain = pa.array(values)
    reference = row_hashes(pa.table({"s": plain}))
    assert len(set(reference.tolist())) == len(values) - 1  # only the two "" coincide
    chunked = pa.chunked_array([plain.slice(0, 3), plain.slice(3, 4), plain.slice(7)])
    assert np.array_equal(row_hashes(pa.table({"s": chunked})), reference)
    assert np.array_equal(row_hashes(pa.table({"s": plain.dictionary_encode()})), reference)
    assert np.array_equal(row_hashes(pa.table({"s": plain.cast(pa.large_string())})), reference)


def test_checksum_detects_content_changes(sample: pa.Table):
    expected = Checksum.of(sample)
    values = sample["c001_int32"].to_pylist()
    values[5] = (values[5] or 0) + 1
    changed = sample.set_column(1, "c001_int32", pa.array(values, pa.int32()))
    assert Checksum.of(changed) != expected
    duplicated = pa.concat_tables([sample, sample.slice(3, 1)])
    assert Checksum.of(duplicated).lanes != expected.lanes
    renamed = sample.rename_columns([KEY_COLUMN, "renamed", *sample.column_names[2:]])
    assert Checksum.of(renamed) != expected


def test_checksum_ignores_all_null_columns(sample: pa.Table):
    expected = Checksum.of(sample)
    for null_column in (pa.nulls(sample.num_rows), pa.nulls(sample.num_rows, pa.string())):
        assert Checksum.of(sample.append_column(EVOLVED_COLUMN, null_column)) == expected


# --- change sets --------------------------------------------------------------------------


def upsert_in_memory(base: pa.Table, changes: pa.Table) -> pa.Table:
    untouched = base.filter(pc.invert(pc.is_in(base[KEY_COLUMN], changes[KEY_COLUMN])))
    return pa.concat_tables([untouched, changes], promote_options="default")


@pytest.mark.parametrize("evolved", [False, True])
def test_change_set_predicts_the_upserted_table(base_dir: Path, tmp_path: Path, evolved: bool):
    manifest = generate_changes(base_dir, tmp_path, seed=3, evolved=evolved)
    base, changes = read_set(base_dir), read_set(tmp_path)
    after = upsert_in_memory(base, changes)
    expected = manifest.expected_after_upsert
    assert Checksum.of(after).hex == expected.checksum
    assert after.num_rows == expected.rows == 5_500
    assert expected.key_ranges == [(0, 5_499)]
    assert Checksum.of(changes).hex == manifest.checksum
    updated = pc.less(changes[KEY_COLUMN], 5_000)
    assert manifest.updates == pc.sum(updated).as_py() == 1_000
    assert manifest.inserts == changes.num_rows - manifest.updates == 500
    assert pc.count_distinct(changes[KEY_COLUMN]).as_py() == changes.num_rows
    assert (EVOLVED_COLUMN in changes.column_names) is evolved
    if evolved:
        assert changes[EVOLVED_COLUMN].null_count == 0


def test_change_set_is_deterministic(base_dir: Path, tmp_path: Path):
    first = generate_changes(base_dir, tmp_path / "a", seed=9, update_ratio=0.05, insert_ratio=0.5)
    again = generate_changes(base_dir, tmp_path / "b", seed=9, update_ratio=0.05, insert_ratio=0.5)
    assert first == again
    assert (first.updates, first.inserts) == (250, 2_500)


@pytest.mark.parametrize("update_ratio", [0.2, 0.333])
def test_change_rows_foretells_the_set_exactly(base_dir: Path, tmp_path: Path, update_ratio: float):
    """The generation bar's total: updates are rounded per row group, so it is exact where
    ratio x rows is not (wide's change set has 300,020 rows, not 300,000)."""
    foretold = change_rows(base_dir, update_ratio=update_ratio, insert_ratio=0.1)
    fed: list[int] = []
    manifest = generate_changes(
        base_dir,
        tmp_path,
        seed=4,
        update_ratio=update_ratio,
        insert_ratio=0.1,
        workers=1,
        progress=fed.append,
    )
    assert foretold == manifest.rows == sum(fed)


def test_missing_base_is_reported_with_its_path(tmp_path: Path):
    missing = tmp_path / "nowhere"
    with pytest.raises(ManifestError, match=re.escape(str(missing))):
        generate_changes(missing, tmp_path / "out", seed=1)
    missing.mkdir()
    with pytest.raises(ManifestError, match="no manifest"):
        generate_changes(missing, tmp_path / "out", seed=1)


def test_corrupt_manifest_is_one_clear_line(base_dir: Path, tmp_path: Path):
    document = json.loads((base_dir / "manifest.json").read_text())
    del document["checksum"]
    (tmp_path / "manifest.json").write_text(json.dumps(document))
    with pytest.raises(ManifestError, match=r"corrupt manifest .*checksum") as error:
        DatasetManifest.load(tmp_path)
    assert "\n" not in str(error.value)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="corrupt manifest"):
        DatasetManifest.load(tmp_path)


def test_iceberg_round_trip_matches_the_manifests(base_dir: Path, tmp_path: Path):
    """add_files accepts the base files; scanning and a real pyiceberg upsert give the promised checksums."""
    changes_dir = tmp_path / "changes"
    changes = generate_changes(base_dir, changes_dir, seed=5)
    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("bench")
    table = catalog.create_table("bench.wide", schema=wide_schema(12))
    table.add_files([str(path) for path in DatasetManifest.load(base_dir).file_paths(base_dir)])
    assert Checksum.of(table.scan().to_arrow()).hex == DatasetManifest.load(base_dir).checksum
    table.upsert(read_set(changes_dir), join_cols=[KEY_COLUMN])
    after = table.scan().to_arrow()
    assert (after.num_rows, Checksum.of(after).hex) == (
        changes.expected_after_upsert.rows,
        changes.expected_after_upsert.checksum,
    )
