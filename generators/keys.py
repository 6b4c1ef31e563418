"""A set's key as numbers: what the key checks count, whatever the key's columns and types.

A key of the generated sets (one integer column, `id`) is its own number. Any other key (strings,
dates, timestamps, decimals, uuids, several columns) is numbered by its rank in the set's key
space: the keys of your set in file order, then the new keys of each set derived from it (a change
set's inserts, a replacement's keys), one parquet file each. Ranges of ranks are what the
manifests and the oracle's key checks hold, as they hold ranges of integer keys.

A key is found in its space by a 64-bit fingerprint, the checksum's row hash of its key columns
(so `string` and `large_string` are one key): 16 bytes a key in memory. A key that is in no space
(a writer's invention) gets a negative number of its own fingerprint: unexpected keys stay distinct.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from generators.schema import KEY_COLUMN
from harness.model import Expectation

KEY_SPACE_FILE = "keys.parquet"  # a set's own new keys, in its folder
SCAN_SAMPLE = 10_000  # keys sampled to find a key range that holds about a fraction of the rows
Data = pa.RecordBatch | pa.Table
KeyRange = tuple[int, int]


@dataclass(frozen=True)
class KeyScan:
    """The rows whose key columns each lie in their inclusive bounds (`(column, low, high)`): a
    range of the first key column for a selective scan, one key for a point lookup."""

    bounds: tuple[tuple[str, Any, Any], ...]

    @classmethod
    def of_range(cls, column: str, low: Any, high: Any) -> KeyScan:
        return cls(((column, low, high),))

    @property
    def columns(self) -> list[str]:
        return [column for column, _, _ in self.bounds]

    def mask(self, data: Data) -> pa.Array:
        """Which rows of `data` (holding the key columns) lie in the bounds."""
        masks = []
        for name, low, high in self.bounds:
            values = plain(data.column(name))
            low, high = plain_value(low), plain_value(high)
            masks.append(pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high)))
        combined = masks[0]
        for more in masks[1:]:
            combined = pc.and_(combined, more)
        return pc.fill_null(combined, False)


@dataclass(frozen=True)
class KeySpace:
    """How the keys of a set (and of the sets beside it in one scenario) are numbered."""

    columns: tuple[str, ...] = (KEY_COLUMN,)
    files: tuple[Path, ...] = ()  # empty: one integer column, each key its own number

    @property
    def ranked(self) -> bool:
        return bool(self.files)

    def numbers(self, data: Data) -> np.ndarray:
        """Each row's key number (int64); the rows must hold every key column, none null."""
        if not self.ranked:
            return data.column(self.columns[0]).to_numpy(zero_copy_only=False).astype(np.int64)
        return self._index.numbers(fingerprints(data, self.columns))

    def __len__(self) -> int:
        return self._size if self.ranked else 0

    @cached_property
    def _size(self) -> int:
        """The keys in the space, from its files' footers: no key read, none hashed (the scan
        program and a reason's values need no fingerprint)."""
        return sum(pq.read_metadata(path).num_rows for path in self.files)

    def values(self, numbers: list[int]) -> list[dict[str, Any] | None]:
        """The key columns' values of each of `numbers` (None: a number of no key in the space)."""
        if not self.ranked:
            return [{self.columns[0]: number} for number in numbers]
        found: dict[int, dict[str, Any]] = {}
        wanted = sorted({n for n in numbers if 0 <= n < len(self)})
        start = 0
        for batch in self._batches():
            end = start + batch.num_rows
            inside = [n for n in wanted if start <= n < end]
            if inside:
                rows = batch.take(pa.array([n - start for n in inside])).to_pylist()
                found.update(zip(inside, rows, strict=True))
            start = end
        return [found.get(number) for number in numbers]

    def describe(self, number: int) -> str:
        """A key as a reason names it: its value (`order_id=ORD-7`), or its number for the sets'."""
        if not self.ranked:
            return str(number)
        (values,) = self.values([number])
        return describe_values(values) if values else f"#{number} (not in the sets' keys)"

    def lookup(self, number: int) -> KeyScan | None:
        """The scan that finds the rows of one key; None for a number of no key."""
        (values,) = self.values([number])
        if values is None:
            return None
        return KeyScan(tuple((name, values[name], values[name]) for name in self.columns))

    def selective(self, span: KeyRange, fraction: float) -> KeyScan:
        """A range of the first key column that holds about `fraction` of the keys numbered in
        `span` (at least one): for ranked keys, found by the keys sampled evenly over `span`."""
        low, high = span
        if not self.ranked:
            return KeyScan.of_range(
                self.columns[0], low, low + max(1, round((high - low + 1) * fraction)) - 1
            )
        size = max(0, min(high, len(self) - 1) - max(low, 0) + 1)
        if not size:
            return KeyScan.of_range(self.columns[0], None, None)
        picks = np.unique(
            np.linspace(max(low, 0), max(low, 0) + size - 1, min(size, SCAN_SAMPLE)).astype(np.int64)
        )
        sample = pa.array(self._first_column_at(picks))
        ordered = pc.take(sample, pc.sort_indices(plain(sample))).to_pylist()
        return KeyScan.of_range(
            self.columns[0], ordered[0], ordered[max(1, round(len(ordered) * fraction)) - 1]
        )

    def _first_column_at(self, ranks: np.ndarray) -> list[Any]:
        values: list[Any] = []
        start = 0
        for batch in self._batches([self.columns[0]]):
            end = start + batch.num_rows
            inside = ranks[(ranks >= start) & (ranks < end)] - start
            if len(inside):
                values += batch.column(0).take(pa.array(inside)).to_pylist()
            start = end
        return values

    def _batches(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        for path in self.files:
            with pq.ParquetFile(path) as parquet:
                yield from parquet.iter_batches(65_536, columns=columns or list(self.columns))

    @cached_property
    def _index(self) -> _PrintIndex:
        prints = [fingerprints(batch, self.columns) for batch in self._batches()]
        return _PrintIndex.of(np.concatenate(prints) if prints else np.empty(0, np.uint64))


@dataclass(frozen=True)
class _PrintIndex:
    prints: np.ndarray  # uint64, in rank order
    order: np.ndarray = field(repr=False)  # ranks sorted by fingerprint
    sorted_prints: np.ndarray = field(repr=False)

    @classmethod
    def of(cls, prints: np.ndarray) -> _PrintIndex:
        order = np.argsort(prints, kind="stable")
        return cls(prints, order, prints[order])

    def numbers(self, prints: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(self.sorted_prints, prints), max(len(self.sorted_prints) - 1, 0))
        known = self.sorted_prints[at] == prints if len(self.sorted_prints) else np.zeros(len(prints), bool)
        unknown = -1 - (prints >> np.uint64(1)).astype(np.int64)
        return np.where(known, self.order[at] if len(self.order) else 0, unknown).astype(np.int64)


GENERATED_KEYS = KeySpace()  # the generated sets': one integer column, id


def expected_keys(expected: Expectation) -> KeySpace:
    return KeySpace(tuple(expected.key_columns), tuple(expected.key_space))


def fingerprints(data: Data, columns: tuple[str, ...] | list[str]) -> np.ndarray:
    """Each row's 64-bit fingerprint of its key columns (uint64)."""
    # Imported here: the checksum's numba would otherwise load into every worker (via the
    # manifest), 100 MB of resident memory charged to each writer.
    from generators.checksum import row_hashes

    return row_hashes(pa.table({name: data.column(name) for name in columns}))


def plain(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """An extension array (uuid) as its storage, which Arrow's compute kernels take and which
    orders as the type does (a uuid's 16 bytes, big-endian)."""
    if not isinstance(values.type, pa.BaseExtensionType):
        return values
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([chunk.storage for chunk in values.chunks], values.type.storage_type)
    return values.storage


def plain_value(value: Any) -> Any:
    """A key value as plain() compares it: a uuid as its 16 bytes."""
    return value.bytes if isinstance(value, uuid.UUID) else value


def describe_values(values: dict[str, Any]) -> str:
    text = ", ".join(f"{name}={value}" for name, value in values.items())
    return f"({text})" if len(values) > 1 else text


def key_nulls(data: Data, columns: tuple[str, ...] | list[str]) -> np.ndarray:
    """Rows of `data` where any key column is null (a column it lacks is null)."""
    nulls = np.zeros(data.num_rows, bool)
    for name in columns:
        if name not in data.column_names:
            return np.ones(data.num_rows, bool)
        nulls |= data.column(name).is_null().to_numpy(zero_copy_only=False)
    return nulls
