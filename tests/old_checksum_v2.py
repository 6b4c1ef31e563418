"""The version 2 content checksum (generators/checksum.py before version 3), kept for tests only,
and a forgery of it that the 32 lanes of version 3 and later reject.

    row_hash = SipHash[R0, R1](chain)        lane j of version 3 and later hashes chain + j instead
    checksum = sum of row hashes mod 2**64        one 64-bit lane

Cells and their chain are today's (generators.checksum.row_states); only the finalisation and
the sum differ. forge_version_2 is Wagner's k-tree ("A Generalized Birthday Problem", 2002) with 8
lists: 8 cells changed, the version 2 checksum kept, in about a second.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from old_checksum import Data, SumChecksum

from generators import siphash
from generators.checksum import row_states


@siphash.kernel
def _finish_states(states: np.ndarray, out: np.ndarray) -> None:
    """Each row's SipHash over the cell hashes it absorbed: version 2's row hash."""
    for i in range(states.shape[1]):
        out[i] = siphash._finish(
            states[0, i], states[1, i], states[2, i], states[3, i], np.uint64(0), states[4, i]
        )


def v2_row_hashes(data: Data) -> np.ndarray:
    """One uint64 hash per row of `data`, as version 2 hashed it."""
    hashes = np.empty(data.num_rows, dtype=np.uint64)
    _finish_states(row_states(data), hashes)
    return hashes


class V2Checksum(SumChecksum):
    """The running multiset checksum of version 2."""

    hash_rows = staticmethod(v2_row_hashes)


# --- Wagner's k-tree: 8 lists, 64 bits --------------------------------------------------------

LISTS = 8
CANDIDATES = 1 << 16  # per list
# Bits zeroed at each level of the tree. 15 + 15 + 34 = 64: the levels hold 2**17 and 2**19 sums
# and the last yields about 2**(2 * 19 - 34) = 16 forgeries, so one exists with near certainty.
_LEVEL_BITS = (15, 15, 34)


def forge_version_2(table: pa.Table, column: str, rows: Sequence[int]) -> pa.Table:
    """`table` with the int64 `column` changed in each of 8 `rows` (non-null there) and the same
    version 2 checksum. List i holds how row i's hash moves when its cell v becomes v -+ 1 .. 2**16
    (towards 0, so it stays in range); the k-tree finds one move per list that sum to 0 mod 2**64,
    a few bits at a time."""
    if len(rows) != LISTS:
        raise ValueError(f"the k-tree takes {LISTS} rows, not {len(rows)}")
    index = table.column_names.index(column)
    candidates, lists = [], []
    for row in rows:
        original = table.slice(row, 1)
        value = original.column(column)[0].as_py()
        steps = np.arange(1, CANDIDATES + 1, dtype=np.int64)
        candidates.append(value - steps if value > 0 else value + steps)
        moved = original.take(np.zeros(CANDIDATES, np.int64))
        moved = moved.set_column(index, column, pa.array(candidates[-1], pa.int64()))
        lists.append(v2_row_hashes(moved) - v2_row_hashes(original)[0])  # wraps mod 2**64
    picks = _k_tree(lists)
    values = table.column(column).to_pylist()
    for row, values_of_row, pick in zip(rows, candidates, picks, strict=True):
        values[row] = int(values_of_row[pick])
    return table.set_column(index, column, pa.array(values, table.schema.field(column).type))


def _k_tree(lists: list[np.ndarray]) -> list[int]:
    """One index into each list whose values sum to 0 mod 2**64."""
    # Each level: the sums kept, and for each the index into each list (a row of `picks`).
    level = [(values, np.arange(len(values))[:, None]) for values in lists]
    zeroed = 0
    for bits in _LEVEL_BITS:
        zeroed += bits
        mask = np.uint64((1 << zeroed) - 1) if zeroed < 64 else np.uint64((1 << 64) - 1)
        merged = []
        for (left, left_picks), (right, right_picks) in zip(level[::2], level[1::2], strict=True):
            at_left, at_right = _pairs_summing_to_zero(left, right, mask)
            picks = np.hstack([left_picks[at_left], right_picks[at_right]])
            merged.append((left[at_left] + right[at_right], picks))
        level = merged
    ((_, picks),) = level
    if not len(picks):
        raise RuntimeError("the k-tree found no forgery: give it more candidates")
    return picks[0].tolist()


def _pairs_summing_to_zero(
    left: np.ndarray, right: np.ndarray, mask: np.uint64
) -> tuple[np.ndarray, np.ndarray]:
    """Every (i, j) with (left[i] + right[j]) & mask == 0, as two index arrays."""
    wanted = (np.uint64(0) - left) & mask
    order = np.argsort(right & mask, kind="stable")
    keys = (right & mask)[order]
    first, last = np.searchsorted(keys, wanted, "left"), np.searchsorted(keys, wanted, "right")
    counts = last - first
    at_left = np.repeat(np.arange(len(left)), counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return at_left, order[np.repeat(first, counts) + within]
