"""The content checksum (generators/checksum.py, version 5): its exact definition, the blind spots
of version 1 (tests/old_checksum.py), version 2 (tests/old_checksum_v2.py) and version 3 (a 64-bit
hash per cell) it closes, and the layouts it must not tell apart."""

import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from old_checksum import OldChecksum, column_seed, old_hash_string_collision, old_row_hashes
from old_checksum_v2 import V2Checksum, forge_version_2

from generators.changes import generate_changes
from generators.checksum import (
    _ROW_KEY,
    CHECKSUM_VERSION,
    HEX_DIGITS,
    LANES,
    Checksum,
    Tag,
    cell_header,
    hash_rows,
    row_hashes,
)
from generators.datasets import DataCache, data_set
from generators.manifest import MANIFEST_FILE, DatasetManifest, ManifestError
from generators.presets import get_preset
from generators.wide import _string_pool
from harness.base.errors import SourceError

REPO = Path(__file__).resolve().parents[1]
MASK = (1 << 64) - 1


def siphash(key: tuple[int, int], message: bytes, c_rounds: int = 2, d_rounds: int = 4) -> int:
    """SipHash-c-d as the paper specifies it, in plain Python: the reference for the kernels."""

    def rotl(x: int, bits: int) -> int:
        return ((x << bits) | (x >> (64 - bits))) & MASK

    def rounds(v: list[int], count: int) -> None:
        for _ in range(count):
            v[0] = (v[0] + v[1]) & MASK
            v[1] = rotl(v[1], 13) ^ v[0]
            v[0] = rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & MASK
            v[3] = rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & MASK
            v[3] = rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & MASK
            v[1] = rotl(v[1], 17) ^ v[2]
            v[2] = rotl(v[2], 32)

    k0, k1 = key
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]
    whole = len(message) // 8 * 8
    blocks = [int.from_bytes(message[i : i + 8], "little") for i in range(0, whole, 8)]
    blocks.append(int.from_bytes(message[whole:], "little") | (len(message) & 0xFF) << 56)
    for block in blocks:
        v[3] ^= block
        rounds(v, c_rounds)
        v[0] ^= block
    v[2] ^= 0xFF
    rounds(v, d_rounds)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def reference_row_lanes(cells: dict[str, tuple[int, bytes]]) -> list[int]:
    """The documented definition: column name -> (type tag, canonical bytes) of a non-null cell."""
    message = b"".join(
        int(cell_header(name, tag)).to_bytes(8, "little") + value
        for name, (tag, value) in sorted(cells.items())
    )
    return [siphash(_ROW_KEY, message + lane.to_bytes(8, "little")) for lane in range(LANES)]


def length_prefixed(value: bytes) -> bytes:
    """Strings and binary: 4 bytes of length, the bytes, zeros to a whole word and to 24 bytes."""
    encoded = len(value).to_bytes(4, "little") + value
    encoded += bytes(-len(encoded) % 8)
    return encoded + bytes(max(0, 24 - len(encoded)))


def one_row(value: object, kind: pa.DataType, name: str = "c") -> int:
    return int(row_hashes(pa.table({name: pa.array([value], kind)}))[0])


def old_one_row(value: object, kind: pa.DataType, name: str = "c") -> int:
    return int(old_row_hashes(pa.table({name: pa.array([value], kind)}))[0])


def int64_le(value: int) -> bytes:
    return (value & MASK).to_bytes(8, "little")


# --- the definition -------------------------------------------------------------------------


def test_reference_siphash_matches_the_paper():
    key = (int.from_bytes(bytes(range(8)), "little"), int.from_bytes(bytes(range(8, 16)), "little"))
    assert siphash(key, bytes(range(15))) == 0xA129CA6149BE45E5  # SipHash-2-4 paper, appendix A


def test_row_hash_is_the_documented_definition():
    table = pa.table(
        {
            "z_int": pa.array([-5, None], pa.int32()),
            "a_text": pa.array(["grüße, a string longer than eight bytes", ""]),
            "m_dec": pa.array([Decimal("-12.345"), None], pa.decimal128(10, 3)),
            "b_flag": pa.array([True, False]),
            "f_float": pa.array([1.5, None], pa.float32()),
            "d_day": pa.array([19_000, None], pa.date32()),
            "t_ts": pa.array([1_700_000_000_000_000, None], pa.timestamp("us", tz="UTC")),
            "r_raw": pa.array([b"\x00\x01", None], pa.binary()),
        }
    )
    decimal_tag = Tag.DECIMAL | 3 << 32
    first = {
        "z_int": (Tag.INTEGER, int64_le(-5)),
        "a_text": (Tag.STRING, length_prefixed("grüße, a string longer than eight bytes".encode())),
        "m_dec": (decimal_tag, (-12_345 & (1 << 128) - 1).to_bytes(16, "little")),
        "b_flag": (Tag.BOOLEAN, int64_le(1)),
        "f_float": (Tag.FLOAT, np.float64(1.5).tobytes()),
        "d_day": (Tag.DATE, int64_le(19_000)),
        "t_ts": (Tag.TIMESTAMPTZ, int64_le(1_700_000_000_000_000)),
        "r_raw": (Tag.BINARY, length_prefixed(b"\x00\x01")),
    }
    second = {
        "a_text": (Tag.STRING, length_prefixed(b"")),
        "b_flag": (Tag.BOOLEAN, int64_le(0)),
    }  # nulls: nothing
    lanes = [reference_row_lanes(first), reference_row_lanes(second)]
    assert row_hashes(table).tolist() == [lanes[0][0], lanes[1][0]]
    checksum = Checksum.of(table)
    assert checksum.lanes == tuple((one + other) & MASK for one, other in zip(*lanes, strict=True))
    assert checksum.hex == "".join(f"{lane:016x}" for lane in checksum.lanes)
    assert len(set(lanes[0])) == LANES  # no two lanes alike


def test_every_nan_hashes_as_the_one_quiet_nan_at_every_depth():
    """A NaN's payload and sign are not content (engines rewrite them): legal encodings agree."""
    payloads = np.array([0x7FF8_0000_0000_0000, 0xFFF8_0000_0000_0000, 0x7FF0_0000_0000_0001], np.uint64)
    nans = payloads.view(np.float64)
    assert np.isnan(nans).all()
    top = pa.table({"f": pa.array(nans)})
    assert len(set(row_hashes(top).tolist())) == 1
    assert row_hashes(pa.table({"f": pa.array(nans[:1], pa.float32())}))[0] == row_hashes(top)[0]
    nested = pa.table({"l": pa.array([[1.0, nan] for nan in nans], pa.list_(pa.float64()))})
    assert len(set(row_hashes(nested).tolist())) == 1
    assert row_hashes(pa.table({"f": [0.0]}))[0] != row_hashes(pa.table({"f": [-0.0]}))[0]  # not NaN


def test_a_maps_entries_in_another_order_are_the_same_map():
    kind = pa.map_(pa.string(), pa.list_(pa.float64()))
    stored = pa.array([[("a", [1.0]), ("b", [2.0]), ("c", None)], None, []], kind)
    reordered = pa.array([[("c", None), ("a", [1.0]), ("b", [2.0])], None, []], kind)
    assert row_hashes(pa.table({"m": stored})).tolist() == row_hashes(pa.table({"m": reordered})).tolist()
    in_a_struct = pa.StructArray.from_arrays([stored], ["m"]), pa.StructArray.from_arrays([reordered], ["m"])
    assert Checksum.of(pa.table({"s": in_a_struct[0]})) == Checksum.of(pa.table({"s": in_a_struct[1]}))
    swapped = pa.array([[("a", [2.0]), ("b", [1.0]), ("c", None)], None, []], kind)  # values moved
    assert row_hashes(pa.table({"m": swapped}))[0] != row_hashes(pa.table({"m": stored}))[0]
    sliced = pa.table({"m": stored.slice(1)})  # a slice's entries sorted within their own maps
    assert row_hashes(sliced).tolist() == row_hashes(pa.table({"m": reordered.slice(1)})).tolist()


# --- version 1's blind spots ----------------------------------------------------------------


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_old_string_hash_collides_cheaply_the_new_one_does_not(index: int):
    text = _string_pool(20, 200)[index].as_py()  # the generator's long strings
    twin = old_hash_string_collision(text)
    assert twin != text and len(twin) == len(text) and twin.isascii() and twin.isprintable()
    pair = pa.table({"c010_text": [text, twin]})
    old, new = old_row_hashes(pair), row_hashes(pair)
    assert old[0] == old[1]
    assert new[0] != new[1]


def test_a_value_equal_to_the_column_seed_no_longer_hashes_like_null():
    name = "c002_int64"
    seed = int(np.uint64(column_seed(name)).astype(np.int64))
    pair = pa.table({name: pa.array([seed, None], pa.int64())})
    assert old_row_hashes(pair)[0] == old_row_hashes(pair)[1]
    assert row_hashes(pair)[0] != row_hashes(pair)[1]


def test_decimals_no_longer_combine_by_xor():
    # Version 1 hashed a decimal as low ^ high * salt: raise the high word by one and fix the low
    # word up, and the hash stays.
    salt = 0xD6E8FEB86659FD93
    low, high = 5, 0
    twin_high = high + 1
    twin_low = low ^ (high * salt & MASK) ^ (twin_high * salt & MASK)
    kind = pa.decimal128(38, 9)
    values = pa.array([Decimal(low).scaleb(-9), Decimal(twin_high << 64 | twin_low).scaleb(-9)], kind)
    pair = pa.table({"c006_dec38": values})
    assert values[0] != values[1]
    assert old_row_hashes(pair)[0] == old_row_hashes(pair)[1]
    assert row_hashes(pair)[0] != row_hashes(pair)[1]


def test_logical_types_with_the_same_bits_differ():
    bits = 5
    same_bits = {
        "integer": one_row(bits, pa.int64()),
        "date": one_row(bits, pa.date32()),
        "time": one_row(bits, pa.time64("us")),
        "timestamp": one_row(bits, pa.timestamp("us")),
        "timestamptz": one_row(bits, pa.timestamp("us", tz="UTC")),
        "duration": one_row(bits, pa.duration("us")),
        "float": one_row(float(np.array([bits]).view(np.float64)[0]), pa.float64()),
        "decimal": one_row(Decimal(bits), pa.decimal128(10, 0)),
        "boolean": one_row(True, pa.bool_()),
        "integer 1": one_row(1, pa.int64()),
    }
    assert len(set(same_bits.values())) == len(same_bits), same_bits
    assert old_one_row(bits, pa.int64()) == old_one_row(bits, pa.date32())  # version 1 could not tell
    assert one_row("abc", pa.string()) != one_row(b"abc", pa.binary())
    assert one_row(Decimal("1.00"), pa.decimal128(10, 2)) != one_row(Decimal("0.100"), pa.decimal128(10, 3))


def test_layouts_of_one_logical_type_agree():
    def agree(value: object, *kinds: pa.DataType) -> None:
        hashes = {kind: one_row(value, kind) for kind in kinds}
        assert len(set(hashes.values())) == 1, hashes

    agree(-7, pa.int8(), pa.int16(), pa.int32(), pa.int64())  # Iceberg promotes int to long
    agree(200, pa.uint8(), pa.int16(), pa.uint64())
    agree("žluťoučký kůň", pa.string(), pa.large_string(), pa.string_view())
    agree(b"\x00\xff", pa.binary(), pa.large_binary(), pa.binary_view())
    agree(1.5, pa.float16(), pa.float32(), pa.float64())
    agree(Decimal("-1.250"), pa.decimal128(10, 3), pa.decimal128(38, 3), pa.decimal256(20, 3))
    agree(Decimal("1.5"), pa.decimal32(5, 1), pa.decimal64(12, 1), pa.decimal128(5, 1))
    moment = 1_700_000_000
    assert one_row(moment, pa.timestamp("s")) == one_row(moment * 10**6, pa.timestamp("us"))
    assert one_row(moment * 10**9, pa.timestamp("ns", tz="UTC")) == one_row(
        moment * 10**6, pa.timestamp("us", tz="+01:00")
    )  # instants, whatever the zone
    assert one_row(3 * 86_400_000, pa.date64()) == one_row(3, pa.date32())
    assert one_row(5, pa.time32("ms")) == one_row(5_000, pa.time64("us"))


# --- version 2's blind spot -----------------------------------------------------------------


def test_a_k_tree_forgery_of_the_version_2_sum_fails_the_current_version(tiny_cache: DataCache):
    """8 int64 cells of tiny's first file changed so that version 2's 64-bit sum stays (Wagner's
    k-tree, tests/old_checksum_v2.py): the 32 lanes tell, the untouched set still matches."""
    base = tiny_cache.ensure(get_preset("tiny"), ["base"])["base"]
    paths = base.manifest.file_paths(base.directory)
    first = pq.read_table(paths[0])
    column = next(name for name in first.column_names if name.endswith("_int64"))
    rows = np.flatnonzero(first.column(column).is_valid().to_numpy(zero_copy_only=False))[::601][:8]
    forged = forge_version_2(first, column, rows.tolist())
    pairs = enumerate(zip(forged.column(column).to_pylist(), first.column(column).to_pylist(), strict=True))
    assert [row for row, (new, old) in pairs if new != old] == rows.tolist()
    assert forged.drop_columns([column]) == first.drop_columns([column])
    assert V2Checksum.of(forged).hex == V2Checksum.of(first).hex  # version 2 is fooled
    assert Checksum.of(forged).rows == first.num_rows
    assert Checksum.of(forged) != Checksum.of(first)
    assert sum((Checksum.of(pq.read_table(path)) for path in paths), Checksum()).hex == base.manifest.checksum


# --- version 3's blind spot: a 64-bit digest per cell -----------------------------------------


def test_cells_enter_the_row_unhashed_and_parse_one_way():
    """Version 3 fed each cell's 64-bit SipHash into the row: a value hashing like one of a
    column's N values (2**64 / N tries) kept the row. Version 4 feeds the value itself, so rows
    differ wherever their messages do, and these encodings of the same bytes never meet."""
    header = int(cell_header("b", Tag.INTEGER)).to_bytes(8, "little")
    smuggled = b"x" + bytes(3) + header + int64_le(5)  # b's cell spelled inside a's string
    rows = {
        "split ab|c": {"a": "ab", "b": "c"},
        "split a|bc": {"a": "a", "b": "bc"},
        "a then b": {"a": "x", "b": 5},
        "b inside a": {"a": smuggled.decode("latin-1"), "b": None},
        "empty": {"a": "", "b": None},
        "four zeros": {"a": "\x00" * 4, "b": None},
        "absent": {"a": None, "b": None},
    }
    hashes = {}
    for label, cells in rows.items():
        kind = pa.int64() if isinstance(cells["b"], int) else pa.string()
        table = pa.table({"a": pa.array([cells["a"]], pa.string()), "b": pa.array([cells["b"]], kind)})
        hashes[label] = int(row_hashes(table)[0])
    assert len(set(hashes.values())) == len(hashes), hashes


# --- what must not change a row's hash ------------------------------------------------------


@pytest.fixture
def mixed() -> pa.Table:
    """Every supported kind of column, 50 rows, nulls in every column but the key."""
    rows = 50
    rng = np.random.default_rng(1)
    null = rng.random((9, rows)) < 0.2

    def nullable(values: list, kind: pa.DataType, column: int) -> pa.Array:
        return pa.array(values, kind, mask=null[column])

    words = ["", "a", "eight by", "nine byte", "a string of some length, to cross a block or two"]
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "i32": nullable(rng.integers(-1000, 1000, rows).tolist(), pa.int32(), 0),
            "f64": nullable(rng.standard_normal(rows).tolist(), pa.float64(), 1),
            "s": nullable(
                [words[i % len(words)] + str(i % 7) * (i % 3) for i in range(rows)], pa.string(), 2
            ),
            "dec": nullable(
                [Decimal(int(x)).scaleb(-3) for x in rng.integers(-(10**9), 10**9, rows)],
                pa.decimal128(12, 3),
                3,
            ),
            "ts": nullable(rng.integers(0, 10**15, rows).tolist(), pa.timestamp("us", tz="UTC"), 4),
            "day": nullable(rng.integers(0, 20_000, rows).tolist(), pa.date32(), 5),
            "flag": nullable((rng.random(rows) < 0.5).tolist(), pa.bool_(), 6),
            "raw": nullable([bytes([i % 256]) * (i % 11) for i in range(rows)], pa.binary(), 7),
            "empty": pa.nulls(rows, pa.string()),
        }
    )


def test_rows_hash_apart(mixed: pa.Table):
    assert len(set(row_hashes(mixed).tolist())) == mixed.num_rows


def test_column_order_does_not_matter(mixed: pa.Table):
    assert np.array_equal(row_hashes(mixed.select(mixed.column_names[::-1])), row_hashes(mixed))


def test_a_null_cell_hashes_like_an_absent_column(mixed: pa.Table):
    reference = row_hashes(mixed)
    assert np.array_equal(row_hashes(mixed.drop_columns(["empty"])), reference)  # all null
    assert np.array_equal(row_hashes(mixed.append_column("evolved", pa.nulls(mixed.num_rows))), reference)
    partly = pa.table({"a": [1, 2], "b": [None, "x"]})
    assert row_hashes(partly)[0] == row_hashes(pa.table({"a": [1]}))[0]
    assert row_hashes(partly)[1] != row_hashes(pa.table({"a": [2]}))[0]


def test_a_cell_moved_to_another_column_changes_the_row():
    assert one_row(1, pa.int64(), "a") != one_row(1, pa.int64(), "b")
    swapped = pa.table({"a": [1, 2], "b": [2, 1]})
    assert row_hashes(swapped)[0] != row_hashes(swapped)[1]


def test_slices_and_chunks_hash_as_the_whole(mixed: pa.Table):
    reference = row_hashes(mixed)
    for start, length in ((3, 40), (9, 1), (17, 33), (50, 0)):  # odd starts: unaligned bitmaps
        assert np.array_equal(row_hashes(mixed.slice(start, length)), reference[start : start + length])
    batches = mixed.to_batches(max_chunksize=7)
    assert np.array_equal(np.concatenate([row_hashes(batch) for batch in batches]), reference)
    # Every column chunked differently.
    chunked = pa.table(
        {
            name: pa.chunked_array([column.slice(0, cut), column.slice(cut)])
            for cut, (name, column) in enumerate(zip(mixed.column_names, mixed.columns, strict=True), start=3)
        }
    )
    assert np.array_equal(row_hashes(chunked), reference)


def test_dictionary_arrays_hash_as_their_values(mixed: pa.Table):
    encoded = pa.table(
        {
            name: column.dictionary_encode() if name in ("s", "i32", "dec", "raw") else column
            for name, column in zip(mixed.column_names, mixed.columns, strict=True)
        }
    )
    assert pa.types.is_dictionary(encoded.schema.field("s").type)
    assert np.array_equal(row_hashes(encoded), row_hashes(mixed))
    assert np.array_equal(row_hashes(encoded.slice(5, 20)), row_hashes(mixed)[5:25])
    # A null dictionary entry is a null value, like a null index.
    entries = pa.array(["x", None, "y"])
    indices = pa.array([0, 1, None, 2], pa.int8())
    decoded = pa.table({"s": pa.array(["x", None, None, "y"])})
    assert np.array_equal(
        row_hashes(pa.table({"s": pa.DictionaryArray.from_arrays(indices, entries)})), row_hashes(decoded)
    )


def test_empty_values_and_empty_batches():
    strings = row_hashes(pa.table({"s": ["", None, "", "a"]}))
    assert strings[0] == strings[2] != strings[1]
    assert row_hashes(pa.table({"s": pa.array([], pa.string())})).shape == (0,)
    empty = Checksum.of(pa.table({"a": pa.array([], pa.int64())}))
    assert (empty.rows, empty.hex) == (0, "0" * HEX_DIGITS)
    only_empty = pa.table({"s": pa.array(["", ""], pa.large_binary())})  # no data buffer bytes at all
    assert len(set(row_hashes(only_empty).tolist())) == 1


def test_checksum_arithmetic(mixed: pa.Table):
    whole = Checksum.of(mixed)
    head, tail = Checksum.of(mixed.slice(0, 20)), Checksum.of(mixed.slice(20))
    assert head + tail == whole == head.merge(tail)
    assert whole - tail == head
    running = Checksum.of(mixed)
    running.subtract_rows(hash_rows(mixed.slice(20)))
    assert running == head
    running.add_rows(hash_rows(mixed.slice(20)))
    assert running == whole
    assert Checksum.from_hex(whole.hex, whole.rows) == whole
    assert Checksum.of(mixed.take(np.random.default_rng(0).permutation(mixed.num_rows))) == whole
    # Not by accident: other algorithms.
    assert Checksum.of(mixed).short not in {OldChecksum.of(mixed).hex, V2Checksum.of(mixed).hex}


def test_from_hex_takes_only_a_whole_checksum():
    for text in ("0123456789abcdef", "0" * (HEX_DIGITS - 1), "g" * HEX_DIGITS, ""):
        with pytest.raises(ValueError, match=f"is not {HEX_DIGITS} hex digits"):
            Checksum.from_hex(text, 1)


def test_unsupported_types_say_so():
    with pytest.raises(TypeError, match="does not support column type month_day_nano_interval"):
        row_hashes(pa.table({"l": pa.array([(1, 2, 3)], pa.month_day_nano_interval())}))


def test_kernels_work_without_a_writable_cache(mixed: pa.Table, tmp_path: Path):
    """No cache folder can be made: numba compiles in memory, the hashes are the same."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    script = (
        "import sys, pyarrow.parquet as pq; from generators.checksum import Checksum;"
        "print(Checksum.of(pq.read_table(sys.argv[1])).hex)"
    )
    path = tmp_path / "mixed.parquet"
    pq.write_table(mixed, path)
    env = {
        **os.environ,
        "NUMBA_CACHE_LOCATOR_CLASSES": "UserProvidedCacheLocator",  # no fallback to other folders
        "NUMBA_CACHE_DIR": str(blocked / "numba"),
    }
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == Checksum.of(pq.read_table(path)).hex
    assert "compiling them in memory" in done.stderr


# --- manifests record the version -----------------------------------------------------------


def as_version_1(directory: Path) -> None:
    """Rewrite a set's manifest as a version 1 generator wrote it: no version, other checksums."""
    path = directory / MANIFEST_FILE
    document = json.loads(path.read_text())
    del document["checksum_version"]
    document["checksum"] = "0123456789abcdef"
    path.write_text(json.dumps(document))


@pytest.fixture(scope="module")
def tiny_cache(tmp_path_factory: pytest.TempPathFactory) -> DataCache:
    return DataCache(tmp_path_factory.mktemp("data"), seed=3, update_ratio=0.2, insert_ratio=0.1)


def test_generated_sets_record_the_checksum_version(tiny_cache: DataCache):
    sets = tiny_cache.ensure(get_preset("tiny"), ["changes"])
    for name in ("base", "changes"):
        assert sets[name].manifest.checksum_version == CHECKSUM_VERSION == 5
    assert f'"checksum_version": {CHECKSUM_VERSION}' in (sets["base"].directory / MANIFEST_FILE).read_text()


def test_a_manifest_without_a_version_is_version_1(tiny_cache: DataCache, tmp_path: Path):
    base = tiny_cache.ensure(get_preset("tiny"), ["base"])["base"]
    (tmp_path / MANIFEST_FILE).write_text((base.directory / MANIFEST_FILE).read_text())
    as_version_1(tmp_path)
    assert DatasetManifest.load(tmp_path).checksum_version == 1


def test_the_cache_regenerates_sets_of_an_older_version(tiny_cache: DataCache):
    preset = get_preset("tiny")
    fresh = tiny_cache.ensure(preset, ["base", "base-empty-file"])
    for name in ("base", "base-empty-file"):
        as_version_1(fresh[name].directory)
    again = tiny_cache.ensure(preset, ["base", "base-empty-file"])
    for name in ("base", "base-empty-file"):
        assert again[name].manifest == fresh[name].manifest  # made again: same rows, same checksum
        assert not list(again[name].directory.parent.glob(".*.partial"))


def test_a_given_set_of_an_older_version_is_refused(tiny_cache: DataCache, tmp_path: Path):
    base = tiny_cache.ensure(get_preset("tiny"), ["base"])["base"]
    old = tmp_path / "old-set"
    old.mkdir()
    (old / MANIFEST_FILE).write_text((base.directory / MANIFEST_FILE).read_text())
    as_version_1(old)
    message = rf"{re.escape(str(old))}.*version 1.*version {CHECKSUM_VERSION}.*regenerate"
    with pytest.raises(SourceError, match=message) as error:
        data_set(old)
    assert "\n" not in str(error.value)
    with pytest.raises(ManifestError, match="regenerate"):
        generate_changes(old, tmp_path / "changes", seed=1)


def test_a_reason_shows_checksums_that_share_lane_0_apart():
    """A forgery that matches the first 64-bit lane fails; its reason must not print two equal sides."""
    from generators.checksum import differing_forms

    ours, forged = "8a2be3db371ff7bc" + "0" * 16 + "1" * 32, "8a2be3db371ff7bc" + "0" * 16 + "2" * 32
    assert differing_forms(ours, forged) == (
        "8a2be3db371ff7bc...1111111111111111 (lane 2)",
        "8a2be3db371ff7bc...2222222222222222 (lane 2)",
    )
    assert differing_forms(ours, "f" + ours[1:]) == (ours[:16], "f" + ours[1:16])
