"""Where a table's content differs from what it must hold: the first differing key, and for a row
the table holds changed, the columns whose values differ.

Only asked once `content_checksum` has failed, so a table that passes costs nothing. The read-back
kept each visible row's hash beside its key (harness/judge/readback.py); here the expected rows'
hashes are computed the same way, streaming the sources of the expectation (one bounded batch at
a time), and the two are compared key by key: 16 bytes a row on each side, never the rows
themselves. Only the one differing row is then read in full, from the table (row groups pruned
by their key statistics) and from its source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyiceberg.table import Table

from generators.checksum import row_hashes
from generators.keys import GENERATED_KEYS, KeyScan, KeySpace, describe_values, key_nulls
from generators.source import ParquetSource
from harness.base.reasons import counted, some_names
from harness.judge.key_tally import KeyTally
from harness.judge.readback import READ_BATCH_ROWS, TableContent, read_content, rows_with_key
from harness.model import RowSource

# A value as a reason quotes it: enough to tell two apart, short enough for one line.
VALUE_CHARS = 24


@dataclass(frozen=True)
class KeyedHashes:
    """Row hashes by key, sorted by key; per key the rows' count and the sum of their hashes."""

    keys: np.ndarray  # distinct keys, ascending
    counts: np.ndarray
    sums: np.ndarray  # uint64, wrapping

    @classmethod
    def of(cls, keys: np.ndarray, hashes: np.ndarray) -> KeyedHashes:
        order = np.argsort(keys, kind="stable")
        keys, hashes = keys[order], hashes[order]
        distinct, starts, counts = np.unique(keys, return_index=True, return_counts=True)
        sums = np.add.reduceat(hashes, starts) if len(hashes) else np.empty(0, np.uint64)
        return cls(distinct, counts, sums.astype(np.uint64, copy=False))

    def at(self, key: int) -> tuple[int, int]:
        """(rows, hash sum) of `key`; (0, 0) when absent."""
        index = int(np.searchsorted(self.keys, key))
        if index < len(self.keys) and self.keys[index] == key:
            return int(self.counts[index]), int(self.sums[index])
        return 0, 0


def first_difference(
    table: Table, content: TableContent, sources: list[RowSource], space: KeySpace = GENERATED_KEYS
) -> str | None:
    """The first key (in key order) whose rows in the table are not the expected ones, said in a
    few words; None when the rows agree key by key (then the checksum differs elsewhere, e.g. in
    rows without a key)."""
    expected, layers = _expected_hashes(sources, space)
    if not content.keys_kept:  # the oracle's pass tallied the keys: a second read keeps them
        content = read_content(table, keys=space, keep_keys=True)
    found = KeyedHashes.of(content.keys, content.row_hashes)
    key = _first_differing_key(expected, found)
    if key is None:
        return None
    named = f"key {key_name(table, space, key)}"
    (want_rows, _), (have_rows, _) = expected.at(key), found.at(key)
    if have_rows == 0:
        return f"{named} is missing"
    if want_rows == 0:
        return f"{named} is not expected ({counted(have_rows, 'row')})"
    if have_rows != want_rows:
        return f"{named} has {have_rows} rows, expected {want_rows}"
    source = sources[int(layers[np.searchsorted(expected.keys, key)])]
    lookup = space.lookup(key)
    assert lookup is not None, "an expected key is in its space"
    return f"{named}: {_row_difference(_source_row(source, lookup), rows_with_key(table, lookup))}"


def key_name(table: Table, space: KeySpace, number: int) -> str:
    """A key number as a reason names it: the key's values (`order_id=ORD-7`). A ranked number of
    no expected key (a key the table holds that no set has) is looked for in the table's keys."""
    if not space.ranked or 0 <= number < len(space):
        return space.describe(number)
    try:
        fields = list(space.columns)
        for batch in table.scan(selected_fields=tuple(fields)).to_arrow_batch_reader():
            batch = batch.filter(pa.array(~key_nulls(batch, fields)))
            found = np.flatnonzero(space.numbers(batch) == number)
            if len(found):
                return describe_values(batch.slice(int(found[0]), 1).to_pylist()[0])
    except Exception as exc:  # the reason stands without the value, and says why
        return f"(a key of no set; its value unread: {type(exc).__name__})"
    return "(a key of no set)"


def repeated_keys_reason(tally: KeyTally, name: Callable[[int], str] = str) -> str | None:
    """e.g. `10,000 keys repeated (990,000 surplus rows), the smallest 990000`; None: none is."""
    distinct, surplus, smallest = tally.repeated, tally.surplus, tally.smallest_repeated()
    if not distinct or smallest is None:
        return None
    surplus_rows = counted(surplus, "surplus row")
    return f"{counted(distinct, 'key')} repeated ({surplus_rows}), the smallest {name(smallest)}"


def _expected_hashes(sources: list[RowSource], space: KeySpace) -> tuple[KeyedHashes, np.ndarray]:
    """The expected rows' hashes by key, a later source's row replacing an earlier one's of the
    same key (an upsert's change set over its base); and, beside each key, the source its row
    comes from."""
    keys, hashes, layers = [], [], []
    for layer, source in enumerate(sources):
        for batch in _source_batches(source):
            keys.append(space.numbers(batch))
            hashes.append(row_hashes(batch))
            layers.append(np.full(batch.num_rows, layer, np.int32))
    if not keys:
        return KeyedHashes.of(np.empty(0, np.int64), np.empty(0, np.uint64)), np.empty(0, np.int32)
    all_keys, all_hashes, all_layers = np.concatenate(keys), np.concatenate(hashes), np.concatenate(layers)
    # The last row of a key wins: unique's first index, taken over the rows reversed.
    distinct, first_in_reversed = np.unique(all_keys[::-1], return_index=True)
    winners = len(all_keys) - 1 - first_in_reversed
    return KeyedHashes(distinct, np.ones(len(distinct), np.int64), all_hashes[winners]), all_layers[winners]


def _first_differing_key(expected: KeyedHashes, found: KeyedHashes) -> int | None:
    keys = np.union1d(expected.keys, found.keys)
    differs = _aligned(expected, keys) != _aligned(found, keys)
    index = np.flatnonzero(differs.any(axis=0))
    return int(keys[index[0]]) if len(index) else None


def _aligned(side: KeyedHashes, keys: np.ndarray) -> np.ndarray:
    """Rows 0 and 1: count and hash sum of each of `keys` (0 where the side lacks the key)."""
    out = np.zeros((2, len(keys)), np.uint64)
    where = np.searchsorted(keys, side.keys)
    out[0, where] = side.counts
    out[1, where] = side.sums
    return out


def _source_batches(source: RowSource) -> Iterator[pa.RecordBatch]:
    return ParquetSource.open(source.directory, READ_BATCH_ROWS, source.rows).batches()


def _source_row(source: RowSource, key: KeyScan) -> pa.Table:
    for batch in _source_batches(source):
        row = batch.filter(key.mask(batch))
        if row.num_rows:
            return pa.Table.from_batches([row])
    return pa.table({key.columns[0]: pa.array([], pa.int64())})


def _row_difference(expected: pa.Table, found: pa.Table) -> str:
    """The columns whose values differ between two one-row tables, with both values when one
    column does; a column one side lacks counts as null there (as the checksum counts it)."""
    names = list(dict.fromkeys([*expected.column_names, *found.column_names]))
    differing = [name for name in names if _cell_hash(expected, name) != _cell_hash(found, name)]
    if not differing:
        return "the rows hash alike cell by cell, yet not as rows"
    if len(differing) == 1:
        name = differing[0]
        return f"column {name} is {_value(found, name)}, expected {_value(expected, name)}"
    return f"columns {some_names(differing)} differ"


def _cell_hash(row: pa.Table, name: str) -> int:
    if name not in row.column_names:
        return _NULL_CELL
    return int(row_hashes(row.select([name]))[0])


_NULL_CELL = int(row_hashes(pa.table({"absent": pa.nulls(1, pa.int64())}))[0])


def _value(row: pa.Table, name: str) -> str:
    if name not in row.column_names:
        return "absent"
    text = repr(row.column(name)[0].as_py())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"
