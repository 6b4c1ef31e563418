"""Every key a table holds, tallied in memory that does not grow with its rows: the key numbers
(generators/keys.py) in roaring bitmaps (pyroaring, which pyiceberg reads deletion vectors with),
one per 2^32 numbers, with a second bitmap of the keys seen more than once. 10 million dense keys
take ~1.2 MiB where the sorted arrays they replaced took 16-48 bytes a row (the oracle's peak grew
by ~290 MiB from 1M to 3M rows of `wide`); the key checks (unique, the expected set, the first
missing and the first unexpected key) read the bitmaps.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

import numpy as np
from pyroaring import BitMap

from harness.model import KeyRanges

# Key numbers are int64; the bitmaps hold them as uint64 shifted by 2^63 (order kept), each bitmap
# the low 32 bits of the numbers that share the high 32.
_SHIFT = 1 << 63
_LOW_BITS = 32
_LOW_MASK = (1 << _LOW_BITS) - 1


def _unsigned(number: int) -> int:
    return number + _SHIFT


def _number(unsigned: int) -> int:
    return unsigned - _SHIFT


def _bitmap(lows: np.ndarray) -> BitMap:
    return BitMap(array("I", lows.astype(np.uint32, copy=False).tobytes()))  # the fast path: a buffer


class KeyTally:
    """The keys seen, how many rows carried them, and those seen more than once."""

    def __init__(self) -> None:
        self.rows = 0  # rows with a key
        self._seen: dict[int, BitMap] = {}
        self._repeated: dict[int, BitMap] = {}

    def add(self, numbers: np.ndarray) -> None:
        """The keys of some rows (int64 key numbers, any order, repeats counted)."""
        if not len(numbers):
            return
        self.rows += len(numbers)
        unsigned = numbers.astype(np.int64, copy=False).view(np.uint64) ^ np.uint64(_SHIFT)
        highs = unsigned >> np.uint64(_LOW_BITS)
        if highs[0] == highs[-1] and bool((highs == highs[0]).all()):
            groups: Iterator[tuple[int, np.ndarray]] = iter([(int(highs[0]), unsigned)])
        else:
            groups = ((int(high), unsigned[highs == high]) for high in np.unique(highs))
        for high, part in groups:
            lows = part & np.uint64(_LOW_MASK)
            batch = _bitmap(lows)
            seen = self._seen.setdefault(high, BitMap())
            again = seen & batch
            if len(batch) < len(lows):  # keys repeated inside these rows too
                values, counts = np.unique(lows, return_counts=True)
                again |= _bitmap(values[counts > 1])
            if again:
                self._repeated.setdefault(high, BitMap()).update(again)
            seen.update(batch)

    @property
    def distinct(self) -> int:
        return sum(len(bitmap) for bitmap in self._seen.values())

    @property
    def surplus(self) -> int:
        """Rows beyond one per distinct key."""
        return self.rows - self.distinct

    @property
    def repeated(self) -> int:
        """Distinct keys seen more than once."""
        return sum(len(bitmap) for bitmap in self._repeated.values())

    def smallest_repeated(self) -> int | None:
        return _first_at_or_after(self._repeated, 0)

    def count_in(self, ranges: KeyRanges) -> int:
        """Distinct keys inside the inclusive `ranges` (which do not overlap)."""
        return sum(self._count_between(low, high) for low, high in ranges)

    def first_missing(self, ranges: KeyRanges) -> int | None:
        """The smallest key of the inclusive `ranges` not seen."""
        candidates = []
        for low, high in ranges:
            if self._count_between(low, high) == high - low + 1:
                continue
            # The first gap: the smallest x whose prefix [low, x] is not complete, by bisection.
            first, last = low, high
            while first < last:
                middle = (first + last) // 2
                if self._count_between(low, middle) < middle - low + 1:
                    last = middle
                else:
                    first = middle + 1
            candidates.append(first)
        return min(candidates, default=None)

    def first_unexpected(self, ranges: KeyRanges) -> int | None:
        """The smallest key seen in none of the inclusive `ranges`."""
        start = 0  # in unsigned numbers: the smallest a gap between ranges can begin at
        for low, high in sorted(ranges):
            found = _first_at_or_after(self._seen, start)
            if found is not None and _unsigned(found) < _unsigned(low):
                return found
            start = max(start, _unsigned(high) + 1)
        return _first_at_or_after(self._seen, start)

    def numbers(self) -> np.ndarray:
        """The distinct keys, ascending (for tests and small tables: it is the whole set)."""
        shift = np.uint64(_SHIFT)
        parts = [
            (np.asarray(bitmap.to_array(), dtype=np.uint64) + np.uint64(high << _LOW_BITS)) ^ shift
            for high, bitmap in sorted(self._seen.items())
        ]
        return np.concatenate(parts).view(np.int64) if parts else np.empty(0, np.int64)

    def _count_between(self, low: int, high: int) -> int:
        """Distinct keys from `low` to `high`, inclusive."""
        if high < low:
            return 0
        first, last = _unsigned(low), _unsigned(high)
        count = 0
        for bitmap_high, bitmap in self._seen.items():
            start = bitmap_high << _LOW_BITS
            stop = start + _LOW_MASK
            if stop < first or start > last:
                continue
            count += bitmap.range_cardinality(max(first, start) - start, min(last, stop) - start + 1)
        return count


def _first_at_or_after(bitmaps: dict[int, BitMap], unsigned: int) -> int | None:
    """The smallest key number whose unsigned form is `unsigned` or more, in `bitmaps`."""
    for high in sorted(bitmaps):
        if high < unsigned >> _LOW_BITS:
            continue
        floor = unsigned & _LOW_MASK if high == unsigned >> _LOW_BITS else 0
        for low in bitmaps[high].iter_equal_or_larger(floor):
            return _number((high << _LOW_BITS) | low)
    return None
