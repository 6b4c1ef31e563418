"""A failed check's reason is one short line that names what differs: the column of a schema
mismatch, the first differing key (and column) of a damaged table, never whole schemas or URIs."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from old_checksum_v2 import V2Checksum, forge_version_2
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table
from test_oracle_checks import _append_table, _judge, locations_path

from generators.manifest import repeated_keys
from generators.schema import EVOLVED_COLUMN, KEY_COLUMN
from generators.source import ParquetSource
from harness.base.reasons import REASON_CHARS, short_path, short_reason
from harness.judge.difference import repeated_keys_reason
from harness.judge.key_tally import KeyTally
from harness.judge.oracle import capture_state, failed_check, judge
from scenarios import get_scenario
from scenarios.base import DataSets, _place_file, expect_upserted

Damage = Callable[[pa.Table], pa.Table]


def _schema_mismatch_error(table_names: list[str], batch_names: list[str]) -> str:
    """pyarrow's own message when a batch's field names are not a schema's (what pyiceberg's
    upsert raised after add_column, apache/iceberg-python#2467)."""
    batch = pa.record_batch([pa.array([1])] * len(batch_names), names=batch_names)
    target = pa.schema([pa.field(name, pa.int64()) for name in table_names])
    with pytest.raises(ValueError) as raised:
        batch.cast(target)
    return f"ValueError: {raised.value}"


def test_a_schema_mismatch_names_the_column_not_the_hundred_others():
    names = ["id", *(f"c{index:03d}_int64" for index in range(1, 100))]
    error = _schema_mismatch_error(names, [*names, EVOLVED_COLUMN])
    assert len(error) > 2_000  # the whole schema, twice
    check = failed_check("operation_completed", error)
    assert check.reason == (
        "ValueError: Target schema's field names are not matching the record batch's field names: "
        f"[101 names] vs [100 names], only in the first: {EVOLVED_COLUMN}"
    )
    assert check.upstream == "apache/iceberg-python#2467"  # recognised in the whole message


def test_a_reordered_or_long_list_is_told_briefly():
    names = [f"column_{index}" for index in range(50)]
    swapped = [names[1], names[0], *names[2:]]
    assert short_reason(f"{names!r}, {swapped!r}") == (
        "[50 names] vs [50 names], the same names in another order (at 0: column_0 vs column_1)"
    )
    assert short_reason(f"columns {names!r} cannot be cast") == (
        "columns [50 names: column_0, column_1, column_2 +47 more] cannot be cast"
    )


def test_any_reason_is_one_line_of_bounded_length():
    reason = short_reason("Traceback\n  " + "word " * 1_000)
    assert "\n" not in reason and len(reason) <= REASON_CHARS
    assert reason.endswith("word…")


def test_a_file_is_named_inside_its_table():
    path = "file:///work/results/run/work/007-append/warehouse/bench/append/data/00000-0-uuid.parquet"
    assert short_path(path) == "data/00000-0-uuid.parquet"


def _judge_damaged_first_file(tiny_sets: DataSets, tmp_path: Path, damage: Damage) -> dict:
    """The base set's first file damaged, the others intact, all added to an append table."""
    table, scenario = _append_table(tmp_path, tiny_sets)
    before = capture_state(table)
    base = tiny_sets["base"]
    damaged = locations_path(table) / "damaged-part-00000.parquet"
    pq.write_table(damage(pq.read_table(base.directory / base.manifest.files[0].name)), damaged)
    paths = [f"file://{damaged}"]
    for entry in base.manifest.files[1:]:
        paths.append(table.location_provider().new_data_location(f"intact-{entry.name}"))
        _place_file(base.directory / entry.name, paths[-1], table)
    table.add_files(paths)
    _, checks = _judge(table, scenario, tiny_sets, before)
    return checks


def _key_at(data: pa.Table, row: int) -> int:
    return data.column(KEY_COLUMN)[row].as_py()


def test_a_changed_value_names_its_key_and_column(tiny_sets, tmp_path):
    first_file = tiny_sets["base"].directory / tiny_sets["base"].manifest.files[0].name
    original = pq.read_table(first_file)
    column = next(name for name in original.column_names if name.endswith("_int64"))
    row = 1_234
    old = original.column(column)[row].as_py()

    def change_one_value(data: pa.Table) -> pa.Table:
        values = data.column(column).to_pylist()
        values[row] = (old or 0) + 1
        return data.set_column(data.column_names.index(column), column, pa.array(values, pa.int64()))

    checks = _judge_damaged_first_file(tiny_sets, tmp_path, change_one_value)
    for name in ("row_count", "keys_unique", "key_set"):
        assert checks[name].passed, checks[name]
    reason = checks["content_checksum"].reason
    assert reason.startswith(
        f"key {_key_at(original, row)}: column {column} is {(old or 0) + 1}, expected {old}"
    )
    assert len(reason) < 200


def test_a_k_tree_forgery_of_the_version_2_sum_fails_only_content_checksum(tiny_sets, tmp_path):
    """8 int64 cells of the first file changed so that version 2's 64-bit sum of row hashes stays
    (Wagner's k-tree, tests/old_checksum_v2.py): the 32 lanes fail the table, naming the first."""
    original = pq.read_table(tiny_sets["base"].directory / tiny_sets["base"].manifest.files[0].name)
    column = next(name for name in original.column_names if name.endswith("_int64"))
    rows = np.flatnonzero(original.column(column).is_valid().to_numpy(zero_copy_only=False))[::601][:8]
    forged = forge_version_2(original, column, rows.tolist())
    assert V2Checksum.of(forged).hex == V2Checksum.of(original).hex  # what version 2 would have passed

    checks = _judge_damaged_first_file(tiny_sets, tmp_path, lambda _: forged)
    assert [name for name, check in checks.items() if not check.passed] == ["content_checksum"]
    first = int(rows[0])
    assert checks["content_checksum"].reason.startswith(
        f"key {_key_at(original, first)}: column {column} is {forged.column(column)[first].as_py()}, "
        f"expected {original.column(column)[first].as_py()}"
    )


def test_a_lost_row_and_a_doubled_row_name_their_keys(tiny_sets, tmp_path):
    original = pq.read_table(tiny_sets["base"].directory / tiny_sets["base"].manifest.files[0].name)
    lost, doubled = 10, 20

    def lose_one_double_another(data: pa.Table) -> pa.Table:
        kept = pa.concat_tables([data.slice(0, lost), data.slice(lost + 1)])
        return pa.concat_tables([kept, data.slice(doubled, 1)])

    checks = _judge_damaged_first_file(tiny_sets, tmp_path, lose_one_double_another)
    assert checks["content_checksum"].reason.startswith(f"key {_key_at(original, lost)} is missing")
    # The missing key comes first in key order; the doubled one is what keys_unique counts.
    assert (
        checks["keys_unique"].reason
        == f"1 key repeated (1 surplus row), the smallest {_key_at(original, doubled)}"
    )
    assert (
        checks["key_set"].reason
        == f"1 expected key missing (first {_key_at(original, lost)}), 0 unexpected keys"
    )


def test_an_upserted_row_is_expected_from_the_change_set(tiny_sets, tmp_path):
    """The expected row of an updated key is the change set's, not the base's: only the damaged
    key (the last updated one) differs, every earlier updated key agrees."""
    catalog = SqlCatalog("check", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    scenario = get_scenario("upsert")()
    table: Table = scenario.prepare(catalog, "bench", tiny_sets)
    before = capture_state(table)
    base, changes = tiny_sets["base"], tiny_sets["changes"]
    change_rows = ParquetSource.open(changes.directory, 65_536).read_all()
    base_keys = pc.is_in(
        change_rows.column(KEY_COLUMN), ParquetSource.open(base.directory, 65_536).read_all()[KEY_COLUMN]
    )
    updated = change_rows.filter(base_keys)
    last_updated = max(updated.column(KEY_COLUMN).to_pylist())
    text = next(name for name in change_rows.column_names if name.endswith("_str"))
    damaged = change_rows.set_column(
        change_rows.column_names.index(text),
        text,
        pc.if_else(
            pc.equal(change_rows.column(KEY_COLUMN), last_updated),
            pa.scalar("damaged", change_rows.schema.field(text).type),
            change_rows.column(text),
        ),
    )
    table.upsert(damaged, join_cols=[KEY_COLUMN])
    verdict, _ = judge(
        table.refresh(),
        expected=expect_upserted(base, changes),
        error=None,
        before=before,
        single_commit=False,
    )
    checks = {check.name: check for check in verdict.checks}
    assert checks["key_set"].passed and checks["row_count"].passed
    expected_value = (
        updated.filter(pc.equal(updated.column(KEY_COLUMN), last_updated)).column(text)[0].as_py()
    )
    assert checks["content_checksum"].reason.startswith(
        f"key {last_updated}: column {text} is 'damaged', expected {expected_value!r}"[:60]
    )


def _tally(*batches: list[int] | np.ndarray) -> KeyTally:
    tally = KeyTally()
    for batch in batches:
        tally.add(np.asarray(batch, np.int64))
    return tally


def test_the_first_missing_unexpected_and_doubled_keys():
    unique = _tally([1, 2, 4], [5, 9])
    assert unique.first_missing([(1, 5), (7, 8)]) == 3
    assert unique.first_missing([(7, 8), (0, 2)]) == 0  # ranges in any order
    assert unique.first_missing([(1, 2), (4, 5)]) is None
    assert unique.first_unexpected([(1, 5)]) == 9
    assert unique.first_unexpected([(2, 9)]) == 1
    assert repeated_keys(np.array([7, 3, 9, 3, 7, 3])) == (2, 3, 3)
    assert repeated_keys_reason(unique) is None
    assert (
        repeated_keys_reason(_tally([7, 3, 9], [3, 7, 3]))
        == "2 keys repeated (3 surplus rows), the smallest 3"
    )
    assert repeated_keys_reason(_tally(*[np.arange(990_000, 1_000_000)] * 100)) == (
        "10,000 keys repeated (990,000 surplus rows), the smallest 990000"
    )  # the naive trap at wide: the last batch's file listed 100 times


@pytest.mark.parametrize("base", [0, -5_000, 2**32 - 1_000, -(2**40), 2**62])
def test_the_key_tally_answers_as_the_sorted_keys_do(base):
    """Random keys with repeats, in several batches, near zero, negative and across a 2^32 border
    (where one bitmap ends and the next begins): every count and first key as np.unique's."""
    rng = np.random.default_rng(base & 0xFFFF)
    for _ in range(60):
        keys = base + rng.integers(0, 4_000, int(rng.integers(0, 3_000)))
        tally = _tally(*np.array_split(keys, int(rng.integers(1, 7))))
        unique = np.unique(keys)
        low, ranges = base + int(rng.integers(-100, 500)), []
        for _ in range(int(rng.integers(1, 4))):
            high = low + int(rng.integers(0, 1_500))
            ranges.append((low, high))
            low = high + 1 + int(rng.integers(0, 300))
        inside = [key for key in unique.tolist() if any(lo <= key <= hi for lo, hi in ranges)]
        missing = [key for lo, hi in ranges for key in range(lo, hi + 1) if key not in set(inside)]
        outside = [key for key in unique.tolist() if key not in set(inside)]
        assert tally.distinct == len(unique) and (tally.numbers() == unique).all()
        assert tally.count_in(ranges) == len(inside)
        assert tally.first_missing(ranges) == min(missing, default=None)
        assert tally.first_unexpected(ranges) == min(outside, default=None)
        assert (tally.repeated, tally.surplus, tally.smallest_repeated()) == repeated_keys(keys)
