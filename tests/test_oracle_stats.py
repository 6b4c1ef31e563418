"""The oracle's structure checks on every column: each damage here leaves the rows intact for a full
read (the content checks pass) and is caught by the check named alone, while a filtered scan that
trusts the damaged statistics loses rows."""

import math
import os
import struct
import zlib
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.conversions import from_bytes, to_bytes
from pyiceberg.expressions import GreaterThan, IsNull, LessThan
from pyiceberg.io.pyarrow import parquet_file_to_data_file
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table
from pyiceberg.types import DoubleType, IntegerType, LongType, StringType
from test_oracle_checks import _append_table, _judge, locations_path

from harness.judge.oracle import capture_state
from harness.judge.readback import read_content
from harness.judge.statistics import ColumnStats, PackedMap, _decimal_bounds, _fold, bound_holds
from scenarios.base import DataSets, _place_file, register_set

# DataFile fields by position (pyiceberg 0.12's Record layout).
_NULL_VALUE_COUNTS, _LOWER_BOUNDS, _UPPER_BOUNDS = 8, 10, 11

Damage = Callable[[Table, DataFile], None]


def _only_failed(verdict, checks: dict, name: str) -> str:
    assert [check.name for check in verdict.failed] == [name], [
        f"{c.name}: {c.reason}" for c in verdict.failed
    ]
    return checks[name].reason


def _column(table: Table, suffix: str) -> tuple[str, int]:
    field = next(field for field in table.schema().fields if field.name.endswith(suffix))
    return field.name, field.field_id


def _judge_damaged_entry(
    tiny_sets: DataSets,
    tmp_path: Path,
    damage: Damage,
    alter: Callable[[Table], None] | None = None,
    damaged: slice = slice(1),
) -> tuple[Table, object, dict]:
    """The base set added with its first file's manifest entry damaged (as a writer bug would
    write it; `damaged`: those files' entries); the files themselves intact. `alter` changes the
    table before the operation."""
    table, scenario = _append_table(tmp_path, tiny_sets)
    base = tiny_sets["base"]
    data_files = []
    for entry in base.manifest.files:
        target = table.location_provider().new_data_location(f"stats-{entry.name}")
        _place_file(base.directory / entry.name, target, table)
        data_files.append(parquet_file_to_data_file(table.io, table.metadata, target))
    for data_file in data_files[damaged]:
        damage(table, data_file)
    if alter is not None:
        alter(table)
        table = table.refresh()
    before = capture_state(table)
    with table.transaction() as txn:
        if table.metadata.name_mapping() is None:  # the files carry no field ids: mapped by name
            txn.set_properties({"schema.name-mapping.default": table.schema().name_mapping.model_dump_json()})
        with txn.update_snapshot().fast_append() as append:
            for data_file in data_files:
                append.append_data_file(data_file)
    table = table.refresh()
    verdict, checks = _judge(table, scenario, tiny_sets, before)
    return table, verdict, checks


def test_a_halved_upper_bound_of_a_value_column_fails_manifest_stats_true_alone(tiny_sets, tmp_path):
    halved = {}

    def halve(table: Table, data_file: DataFile) -> None:
        name, field_id = _column(table, "_int64")
        high = from_bytes(LongType(), data_file.upper_bounds[field_id])
        assert high > 0  # random over the whole int64 range: halving makes it tighter
        halved.update(name=name, high=high, bound=high // 2)
        data_file._data[_UPPER_BOUNDS] = {**data_file.upper_bounds, field_id: to_bytes(LongType(), high // 2)}

    table, verdict, checks = _judge_damaged_entry(tiny_sets, tmp_path, halve)
    reason = _only_failed(verdict, checks, "manifest_stats_true")
    assert reason.startswith("data/stats-part-00000.parquet: ")
    assert f"column {halved['name']} upper bound {halved['bound']} but max {halved['high']}" in reason
    # A scan pruned by it loses the file's rows above the false bound.
    above = GreaterThan(halved["name"], halved["bound"])
    full = table.scan().to_arrow()
    assert (
        len(table.scan(row_filter=above).to_arrow())
        < pc.sum(pc.greater(full[halved["name"]], halved["bound"])).as_py()
    )


def test_every_file_is_held_to_its_entry_as_its_read_ends_then_its_claims_are_let_go(tiny_sets, tmp_path):
    """Each file's statistics are checked once its read ends, the last file's too, and its entry's
    column statistics are then let go (~290 KiB a file at 400 columns, which the oracle held until
    the end of the read); an unpartitioned table keeps no column's bounds."""

    def tighten(table: Table, data_file: DataFile) -> None:
        _, field_id = _column(table, "_int64")
        high = from_bytes(LongType(), data_file.upper_bounds[field_id])
        data_file._data[_UPPER_BOUNDS] = {**data_file.upper_bounds, field_id: to_bytes(LongType(), high // 2)}

    table, verdict, checks = _judge_damaged_entry(tiny_sets, tmp_path, tighten, damaged=slice(None))
    _only_failed(verdict, checks, "manifest_stats_true")
    assert checks["manifest_stats_true"].actual == "2 files whose stats do not"
    content = read_content(table)
    assert len(content.files) == 2 and all(facts.stats_problems for facts in content.files)
    assert all(facts.listed.upper_bounds is None and not facts.stats.columns for facts in content.files)


@pytest.mark.parametrize(
    "claims",
    [{3: 10, 1: 0, 400: 2**40}, {2: b"", 7: b"\x00\x01", 5: "é".encode() * 20}],
    ids=["counts", "bounds"],
)
def test_packed_claims_read_as_the_entrys_own(claims):
    """An entry's claims are packed before the read (its dicts let go): the same map, looked up."""
    packed = PackedMap(claims)
    assert dict(packed) == claims and len(packed) == len(claims) and 4 not in packed
    with pytest.raises(KeyError):
        packed[99]


def test_looser_bounds_are_legal_and_pass(tiny_sets, tmp_path):
    """The spec asks only lower <= min and upper >= max: bounds widened to the type's range (a
    writer that does not track them tightly) pass the oracle."""

    def widen(table: Table, data_file: DataFile) -> None:
        _, field_id = _column(table, "_int64")
        data_file._data[_LOWER_BOUNDS] = {**data_file.lower_bounds, field_id: to_bytes(LongType(), -(2**63))}
        data_file._data[_UPPER_BOUNDS] = {**data_file.upper_bounds, field_id: to_bytes(LongType(), 2**63 - 1)}

    _, verdict, checks = _judge_damaged_entry(tiny_sets, tmp_path, widen)
    assert verdict.passed, [f"{c.name}: {c.reason}" for c in verdict.failed]
    assert checks["manifest_stats_true"].passed


def test_a_string_null_count_set_to_zero_fails(tiny_sets, tmp_path):
    damaged = {}

    def no_nulls(table: Table, data_file: DataFile) -> None:
        name, field_id = _column(table, "_str")
        damaged.update(name=name, nulls=data_file.null_value_counts[field_id])
        data_file._data[_NULL_VALUE_COUNTS] = {**data_file.null_value_counts, field_id: 0}

    table, verdict, checks = _judge_damaged_entry(tiny_sets, tmp_path, no_nulls)
    reason = _only_failed(verdict, checks, "manifest_stats_true")
    assert damaged["nulls"] > 0
    assert f"column {damaged['name']} null_value_counts 0 but {damaged['nulls']:,}" in reason
    full = table.scan().to_arrow()
    found = len(table.scan(row_filter=IsNull(damaged["name"])).to_arrow())
    assert found < full[damaged["name"]].null_count  # the file's nulls pruned away


def test_a_raised_float_lower_bound_fails(tiny_sets, tmp_path):
    raised = {}

    def raise_lower(table: Table, data_file: DataFile) -> None:
        name, field_id = _column(table, "_float64")
        low = from_bytes(DoubleType(), data_file.lower_bounds[field_id])
        raised.update(name=name, low=low, bound=low / 2)  # random normal x 1e6: the min is negative
        data_file._data[_LOWER_BOUNDS] = {**data_file.lower_bounds, field_id: to_bytes(DoubleType(), low / 2)}

    table, verdict, checks = _judge_damaged_entry(tiny_sets, tmp_path, raise_lower)
    reason = _only_failed(verdict, checks, "manifest_stats_true")
    assert raised["low"] < 0
    assert f"column {raised['name']} lower bound {raised['bound']} but min {raised['low']}" in reason
    below = LessThan(raised["name"], raised["bound"])
    full = table.scan().to_arrow()
    assert (
        len(table.scan(row_filter=below).to_arrow())
        < pc.sum(pc.less(full[raised["name"]], raised["bound"])).as_py()
    )


def test_a_truncated_string_bound_passes_a_tighter_one_fails(tiny_sets, tmp_path):
    """pyiceberg truncates string bounds to 16 characters (the text columns hold 20-200): valid.
    A lower bound one character past the min's prefix is tighter: caught."""
    damaged = {}

    def tighter(table: Table, data_file: DataFile) -> None:
        name, field_id = _column(table, "_text")
        lower = from_bytes(StringType(), data_file.lower_bounds[field_id])
        upper = from_bytes(StringType(), data_file.upper_bounds[field_id])
        assert len(lower) == len(upper) == 16  # truncated, the upper one incremented
        bound = lower[:-1] + chr(ord(lower[-1]) + 1)
        damaged.update(name=name, bound=bound)
        data_file._data[_LOWER_BOUNDS] = {**data_file.lower_bounds, field_id: to_bytes(StringType(), bound)}

    _, verdict, checks = _judge_damaged_entry(tiny_sets, tmp_path, tighter)
    reason = _only_failed(verdict, checks, "manifest_stats_true")
    assert f"column {damaged['name']} lower bound {damaged['bound']!r}"[:40] in reason


def test_the_bound_rules():
    # Strings: equal, or a truncation (a lower prefix; an upper prefix with its last code point raised).
    assert bound_holds(StringType(), "lower", "abc", "abcdef")
    assert not bound_holds(StringType(), "lower", "abd", "abcdef")
    assert not bound_holds(StringType(), "lower", "abcdefg", "abcdef")
    assert bound_holds(StringType(), "upper", "abd", "abcdef")
    assert not bound_holds(StringType(), "upper", "abc", "abcdef")  # a prefix of the max is below it
    assert not bound_holds(StringType(), "upper", "abb", "abcdef")
    # Looser than the extreme holds (the spec asks lower <= min, upper >= max); tighter does not.
    assert bound_holds(LongType(), "lower", 1, 2) and not bound_holds(LongType(), "lower", 3, 2)
    assert bound_holds(LongType(), "upper", 3, 2) and not bound_holds(LongType(), "upper", 1, 2)
    assert bound_holds(StringType(), "lower", "", "abc") and bound_holds(StringType(), "upper", "b", "abc")
    assert bound_holds(StringType(), "upper", "\U0001f600", "\uffff")  # code point order, not UTF-16's
    assert not bound_holds(DoubleType(), "upper", float("nan"), 1.0)
    # Zeros: Java orders -0.0 before 0.0; Parquet's zero min -0.0 and max 0.0 are looser, so they hold.
    assert bound_holds(DoubleType(), "lower", -0.0, 0.0) and bound_holds(DoubleType(), "upper", 0.0, -0.0)
    assert not bound_holds(DoubleType(), "lower", 0.0, -0.0) and not bound_holds(
        DoubleType(), "upper", -0.0, 0.0
    )


def test_float_statistics_count_nan_and_tell_zeros_apart():
    stats = ColumnStats()
    _fold(stats, DoubleType(), pa.array([1.0, math.nan, 0.0, -0.0, None]))
    _fold(stats, DoubleType(), pa.array([math.nan, None], pa.float64()))
    assert (stats.values, stats.nulls, stats.nans) == (7, 2, 2)
    assert math.copysign(1, stats.low) == -1 and stats.low == 0 and stats.high == 1.0
    zeros = ColumnStats()
    _fold(zeros, DoubleType(), pa.array([0.0, 0.0]))
    assert math.copysign(1, zeros.low) == 1 and math.copysign(1, zeros.high) == 1


def test_a_required_column_holding_nulls_fails_schema_matches(tiny_sets, tmp_path):
    """The column made required before the operation appends files whose nulls it holds (a writer
    that declares its columns required and never looks; pyiceberg's add_files would refuse)."""
    name = "c004_str"

    def make_required(table: Table) -> None:
        with table.update_schema(allow_incompatible_changes=True) as update:
            update.update_column(name, required=True)

    _, verdict, checks = _judge_damaged_entry(tiny_sets, tmp_path, lambda *_: None, make_required)
    reason = _only_failed(verdict, checks, "schema_matches")
    assert f"column {name} is required, expected optional" in reason
    assert f"required column {name} holds " in reason and " nulls" in reason


def test_nulls_in_a_column_the_expectation_also_makes_required_still_fail(tiny_sets, tmp_path):
    from harness.judge.oracle import schema_check
    from harness.judge.readback import read_content

    table, scenario = _append_table(tmp_path, tiny_sets)
    register_set(table, tiny_sets["base"])
    name, _ = _column(table, "_int32")
    with table.update_schema(allow_incompatible_changes=True) as update:
        update.update_column(name, required=True)
    table = table.refresh()
    expected = scenario.expected_schema(tiny_sets)
    index = expected.get_field_index(name)
    expected = expected.set(index, expected.field(index).with_nullable(False))
    check = schema_check(table, expected, read_content(table))
    assert not check.passed and check.reason.startswith(f"required column {name} holds ")
    assert schema_check(table, expected).passed  # without the read: names, types, optionality agree


def test_a_field_id_differing_from_the_expected_one_is_named(tiny_sets, tmp_path):
    from harness.judge.oracle import schema_check

    table, scenario = _append_table(tmp_path, tiny_sets)
    expected = scenario.expected_schema(tiny_sets)
    name, field_id = _column(table, "_date")
    index = expected.get_field_index(name)
    expected = expected.set(
        index, expected.field(index).with_metadata({"PARQUET:field_id": str(field_id + 1)})
    )
    check = schema_check(table, expected)
    assert check.reason == f"column {name} has field id {field_id}, expected {field_id + 1}"


def _hadoop_crc(data: bytes, chunk: int = 512) -> bytes:
    """Hadoop ChecksumFileSystem's `.NAME.crc` of `data`."""
    sums = [zlib.crc32(data[start : start + chunk]) for start in range(0, len(data), chunk)]
    return b"crc\x00" + struct.pack(">i", chunk) + b"".join(struct.pack(">I", crc) for crc in sums)


@pytest.mark.parametrize("genuine", [True, False])
def test_a_checksum_file_is_exempt_only_if_it_is_one(tiny_sets, tmp_path, genuine):
    table, scenario = _append_table(tmp_path, tiny_sets)
    before = capture_state(table)
    register_set(table, tiny_sets["base"])
    folder = locations_path(table)
    live = next(path for path in sorted(folder.iterdir()) if path.suffix == ".parquet")
    sidecar = folder / f".{live.name}.crc"
    sidecar.write_bytes(_hadoop_crc(live.read_bytes()) if genuine else os.urandom(4 << 20))
    verdict, checks = _judge(table, scenario, tiny_sets, before)
    if genuine:
        assert verdict.passed, [f"{c.name}: {c.reason}" for c in verdict.failed]
        return
    reason = _only_failed(verdict, checks, "no_orphans_after_success")
    assert f".{live.name}.crc (4,194,304 bytes) is reachable from no metadata" in reason


def test_a_checksum_file_of_the_right_size_but_wrong_content_is_an_orphan(tiny_sets, tmp_path):
    table, scenario = _append_table(tmp_path, tiny_sets)
    before = capture_state(table)
    register_set(table, tiny_sets["base"])
    folder = locations_path(table)
    live = next(path for path in sorted(folder.iterdir()) if path.suffix == ".parquet")
    forged = bytearray(_hadoop_crc(live.read_bytes()))
    forged[8:12] = bytes(4)  # the first chunk's CRC wrong
    (folder / f".{live.name}.crc").write_bytes(bytes(forged))
    verdict, checks = _judge(table, scenario, tiny_sets, before)
    assert _only_failed(verdict, checks, "no_orphans_after_success")


def test_statistics_follow_field_ids_across_a_rename(tiny_sets, tmp_path):
    """Files written before a rename carry the old name: matched by field id, their statistics hold
    (and a damaged one is named by the column's current name)."""
    damaged = {}

    def halve(table: Table, data_file: DataFile) -> None:
        _, field_id = _column(table, "_int32")
        high = from_bytes(IntegerType(), data_file.upper_bounds[field_id])
        damaged.update(bound=high // 2, high=high)
        data_file._data[_UPPER_BOUNDS] = {
            **data_file.upper_bounds,
            field_id: to_bytes(IntegerType(), high // 2),
        }

    def rename(table: Table) -> None:
        """The name mapping first: the rename then keeps the files' old name beside the new one."""
        with table.transaction() as txn:
            txn.set_properties({"schema.name-mapping.default": table.schema().name_mapping.model_dump_json()})
        with table.refresh().update_schema() as update:
            update.rename_column(_column(table, "_int32")[0], "renamed")

    _, _, checks = _judge_damaged_entry(tiny_sets, tmp_path, halve, rename)
    reason = checks["manifest_stats_true"].reason
    assert f"column renamed upper bound {damaged['bound']} but max {damaged['high']}" in reason
    assert reason.count("data/") == 1  # the intact file's statistics hold under the new name


def test_decimal_bounds_agree_with_arrow():
    """The one-pass decimal bounds against Arrow's min_max: signs, values past 64 bits, nulls
    and slices."""
    rng = np.random.default_rng(7)
    unscaled = [
        int(value) * 2**70 + int(low)
        for value, low in zip(rng.integers(-5, 5, 500), rng.integers(0, 2**62, 500), strict=True)
    ]
    values = [None if index % 7 == 0 else Decimal(number).scaleb(-9) for index, number in enumerate(unscaled)]
    array = pa.array(values, pa.decimal128(38, 9))
    for part in (array, array.slice(3, 200), array.slice(101, 1)):
        if part.null_count == len(part):
            continue
        expected = pc.min_max(part)
        assert _decimal_bounds(part) == (expected["min"].as_py(), expected["max"].as_py())
