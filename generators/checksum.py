"""Order-independent content checksum shared by the generators and the read-back oracle (version 3).

    cell_hash = SipHash-1-3[k0 = P0 ^ column_seed(name), k1 = P1 ^ type_tag](canonical bytes)
    chain     = cell_hash of each non-null cell, 8 bytes LE each, columns by name
    lane j    = SipHash-1-3[R0, R1](chain + j as 8 bytes LE)           j = 0 .. LANES - 1 (32)
    checksum  = sum of the rows' lane vectors, lane by lane mod 2**64    a multiset hash

Values hash by their logical content, not their physical layout. Canonical bytes: every integer
width, date (days), time, timestamp and duration (microseconds) its int64 little-endian; floats
their float64 bits; decimals the 16-byte two's complement unscaled value; strings and binary
their bytes; booleans one byte. The type tag keeps logical types apart where the bytes agree:
integer (all widths, as Iceberg promotes int to long), date, time, timestamp, timestamptz,
duration, float, decimal (with its scale), string (string, large_string and string_view
alike), binary, boolean. Cell hashes are a keyed PRF: no algebra makes a value hash like another
value, another column's value or a missing one, only a search (its cost below).

A row's cells are chained through one SipHash in column-name order, so column order does not
matter and the combination is not linear. A null cell adds nothing to the chain, so a column
added by schema evolution (null in old rows) leaves old row hashes unchanged. The chain's state is
finalised once per lane (5 SipHash rounds a lane), far less than absorbing a wide row's cells.

The table checksum is a sum so that partial checksums combine: the generators subtract the rows an
upsert replaces, a table's checksum is its files' sum. The keys are public, so a forgery is rows
whose hashes sum alike: a generalised-birthday search (Wagner's k-tree) in an n-bit group with k
lists costs about k * 2**(n / (1 + lg k)). Version 2 summed one 64-bit lane: 8 lists of 2**16 rows
forged it in seconds (tests/old_checksum_v2.py). Version 3 sums 32 lanes, n = 2048: with k below
2**31 (the rows of any table) a list costs over 2**64, with any k at least 2**(2 sqrt n) ~ 2**90.
Left is the 64-bit cell hash: a value hashing like any of a column's N distinct values (a cell
changed, its row's lanes kept) takes 2**64 / N SipHash calls, 2**44 for an int64 column at wide.
Version 1 (a polynomial string hash, XOR-combined decimals, no type tags) had algebraic
shortcuts; manifests record the version their checksums were computed with (CHECKSUM_VERSION).
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import Self

import numpy as np
import pyarrow as pa

from generators import siphash

Data = pa.RecordBatch | pa.Table

CHECKSUM_VERSION = 3
# Lanes of a row hash and of the checksum: 32 x 64 bits, a 2048-bit group (see above).
LANES = 32
HEX_DIGITS = 16 * LANES

_MASK64 = (1 << 64) - 1
_EMPTY = np.empty(0, np.uint8)


def _key(label: bytes) -> tuple[int, int]:
    digest = hashlib.blake2b(label, digest_size=16).digest()
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")


# Version 2's keys: version 3 hashes cells and chains them as it did, only the lanes are new.
_CELL_KEY = _key(b"icebench checksum v2: cells")  # (P0, P1)
_ROW_KEY = _key(b"icebench checksum v2: rows")  # (R0, R1)


class Tag(IntEnum):
    """Logical type of a value: the low byte of the type tag (a decimal's scale sits above it)."""

    INTEGER = 1
    DATE = 2
    TIME = 3
    TIMESTAMP = 4
    TIMESTAMPTZ = 5
    DURATION = 6
    FLOAT = 7
    DECIMAL = 8
    STRING = 9
    BINARY = 10
    BOOLEAN = 11


@cache
def column_seed(name: str) -> np.uint64:
    """Stable across processes and runs, unlike hash()."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


@dataclass(frozen=True)
class RowHashes:
    """A batch hashed: what the checksum adds, and each row's lane 0 to trace a differing row."""

    first_lanes: np.ndarray  # uint64 per row
    sums: np.ndarray  # uint64 per lane: the batch's lane sums

    def __len__(self) -> int:
        return len(self.first_lanes)


def hash_rows(data: Data) -> RowHashes:
    """The lane sums of `data`'s rows and each row's lane 0; rows x lanes is never held."""
    return finish_rows(row_states(data))


def row_hashes(data: Data) -> np.ndarray:
    """One uint64 hash per row of `data`: its lane 0 (rows that differ differ in it, but for a
    2**-64 chance or a search made on purpose)."""
    return hash_rows(data).first_lanes


def row_states(data: Data) -> np.ndarray:
    """Each row's SipHash state (siphash.STATE_WORDS words) once its non-null cells' hashes are
    absorbed, in column-name order."""
    states = empty_row_states(data.num_rows)
    absorb_columns(states, data)
    return states


def empty_row_states(rows: int) -> np.ndarray:
    """The states of `rows` rows before any cell: fed by absorb_columns, ended by finish_rows. A
    reader may absorb a row group's columns a few at a time, in name order across the calls."""
    states = np.empty((rows, siphash.STATE_WORDS), dtype=np.uint64)
    states[:, :4] = siphash.keyed(*_ROW_KEY)
    states[:, 4] = 0  # message bytes absorbed
    return states


def absorb_columns(states: np.ndarray, data: Data) -> None:
    """Each column of `data` into its rows' `states`, in name order: the chain of cell hashes must
    not depend on the column order. Columns absorbed by an earlier call must sort before these."""
    for name, column in sorted(zip(data.column_names, data.columns, strict=True), key=lambda item: item[0]):
        seed = column_seed(name)
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        start = 0
        for chunk in chunks:
            _absorb_column(states[start : start + len(chunk)], chunk, seed)
            start += len(chunk)


def finish_rows(states: np.ndarray) -> RowHashes:
    """The rows' lane sums and lane 0 from their absorbed `states`."""
    first_lanes = np.empty(len(states), dtype=np.uint64)
    sums = np.zeros(LANES, dtype=np.uint64)
    siphash.finish_lanes(states, first_lanes, sums)
    return RowHashes(first_lanes, sums)


def _absorb_column(states: np.ndarray, array: pa.Array, seed: np.uint64) -> None:
    if array.null_count == len(array):
        return
    if pa.types.is_dictionary(array.type):
        # Hash each distinct value once and gather: same result as decoding first, much cheaper.
        indices, entries = array.indices, array.dictionary
        entries_bitmap, entries_offset = _validity(entries)
        bitmap, offset = _validity(indices)
        siphash.absorb_dictionary_cells(
            states,
            _value_hashes(entries, seed),
            entries_bitmap,
            entries_offset,
            _values(indices),
            bitmap,
            offset,
        )
    else:
        bitmap, offset = _validity(array)
        siphash.absorb_cells(states, _value_hashes(array, seed), bitmap, offset)


def _validity(array: pa.Array) -> tuple[np.ndarray, int]:
    """The validity bitmap (empty: no nulls) and the array's first bit in it."""
    bitmap = array.buffers()[0]
    if array.null_count == 0 or bitmap is None:
        return _EMPTY, 0
    return np.frombuffer(bitmap, dtype=np.uint8), array.offset


def _value_hashes(array: pa.Array, seed: np.uint64) -> np.ndarray:
    """A uint64 hash per slot of a plain (not dictionary) array; null slots hash to anything."""
    array = _canonical(array)
    tag = _type_tag(array.type)
    key = siphash.keyed(_CELL_KEY[0] ^ int(seed), _CELL_KEY[1] ^ tag)
    out = np.empty(len(array), dtype=np.uint64)
    match Tag(tag & 0xFF):
        case Tag.BOOLEAN:
            siphash.hash_bits(np.frombuffer(array.buffers()[1], dtype=np.uint8), array.offset, key, out)
        case Tag.FLOAT:
            siphash.hash_words(_values(array).astype(np.float64, copy=False).view(np.uint64), key, out)
        case Tag.DECIMAL:
            siphash.hash_word_pairs(_values(array), key, out)
        case Tag.STRING | Tag.BINARY:
            siphash.hash_bytes(*_offsets_and_data(array), key, out)
        case _:  # integers, and the dates and times stored as them
            siphash.hash_words(_values(array), key, out)
    return out


def _canonical(array: pa.Array) -> pa.Array:
    """Recast the layouts that hash as another one: units to microseconds (days for dates),
    narrower and wider decimals to decimal128, views to their plain layout."""
    kind = array.type
    if pa.types.is_timestamp(kind) and kind.unit != "us":
        return array.cast(pa.timestamp("us", tz=kind.tz))
    if pa.types.is_time(kind) and kind.unit != "us":
        return array.cast(pa.time64("us"))
    if pa.types.is_duration(kind) and kind.unit != "us":
        return array.cast(pa.duration("us"))
    if pa.types.is_date64(kind):
        return array.cast(pa.date32())
    if pa.types.is_decimal(kind) and kind.bit_width != 128 and kind.precision <= 38:
        return array.cast(pa.decimal128(kind.precision, kind.scale))
    if pa.types.is_string_view(kind):
        return array.cast(pa.large_string())
    if pa.types.is_binary_view(kind):
        return array.cast(pa.large_binary())
    return array


def _type_tag(kind: pa.DataType) -> int:
    """The tag of a canonical type (see _canonical): Tag in the low byte, a decimal's scale above."""
    if pa.types.is_decimal(kind) and kind.bit_width == 128:
        return Tag.DECIMAL | (kind.scale & 0xFFFF_FFFF) << 32
    for tag, matches in _TAGS:
        if matches(kind):
            return tag
    raise TypeError(f"checksum does not support column type {kind}")


_TAGS: tuple[tuple[Tag, Callable[[pa.DataType], bool]], ...] = (
    (Tag.INTEGER, pa.types.is_integer),
    (Tag.DATE, pa.types.is_date32),
    (Tag.TIME, pa.types.is_time64),
    (Tag.TIMESTAMP, lambda kind: pa.types.is_timestamp(kind) and kind.tz is None),
    (Tag.TIMESTAMPTZ, lambda kind: pa.types.is_timestamp(kind) and kind.tz is not None),
    (Tag.DURATION, pa.types.is_duration),
    (Tag.FLOAT, pa.types.is_floating),
    (Tag.STRING, lambda kind: pa.types.is_string(kind) or pa.types.is_large_string(kind)),
    (Tag.BINARY, lambda kind: pa.types.is_binary(kind) or pa.types.is_large_binary(kind)),
    (Tag.BOOLEAN, pa.types.is_boolean),
)


def _values(array: pa.Array) -> np.ndarray:
    """The values buffer of a fixed-width array as numpy, zero-copy, from its slice offset.
    Decimals come as (low, high) uint64 word pairs; float16, which numba lacks, as float32."""
    kind = array.type
    if pa.types.is_decimal(kind):
        words = np.frombuffer(array.buffers()[1], dtype="<u8", count=2 * (array.offset + len(array)))
        return words.reshape(-1, 2)[array.offset :]
    letter = "f" if pa.types.is_floating(kind) else "u" if pa.types.is_unsigned_integer(kind) else "i"
    values = np.frombuffer(
        array.buffers()[1], dtype=f"<{letter}{kind.bit_width // 8}", count=array.offset + len(array)
    )[array.offset :]
    return values.astype(np.float32) if values.dtype == np.float16 else values


def _offsets_and_data(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets of the array's slice (offset + 1 entries, into the whole data buffer) and that buffer."""
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(
        offsets_buffer, dtype="<i8" if large else "<i4", count=array.offset + len(array) + 1
    )[array.offset :]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else _EMPTY
    if offsets[-1] > data.size:  # the kernel reads unchecked
        raise ValueError(f"corrupt {array.type} array: offsets run past its data")
    return offsets, data


def short_form(hex_value: str) -> str:
    """A checksum in a reason: its lane 0, enough to tell checksums apart by eye."""
    return hex_value[:16]


_ZERO_LANES = (0,) * LANES


def _lanes_of(sums: np.ndarray) -> tuple[int, ...]:
    return tuple(int(lane) for lane in sums)


def _plus(one: tuple[int, ...], other: tuple[int, ...], sign: int = 1) -> tuple[int, ...]:
    return tuple((a + sign * b) & _MASK64 for a, b in zip(one, other, strict=True))


@dataclass
class Checksum:
    """Running multiset checksum; partial checksums combine with + and -."""

    rows: int = 0
    lanes: tuple[int, ...] = _ZERO_LANES
    hash_rows = staticmethod(hash_rows)

    @classmethod
    def from_hex(cls, hex_value: str, rows: int) -> Self:
        """The checksum `hex` wrote; a ValueError for any other text (another version's too)."""
        if len(hex_value) != HEX_DIGITS or not all(digit in string.hexdigits for digit in hex_value):
            raise ValueError(
                f"checksum {short_form(hex_value)!r}... is not {HEX_DIGITS} hex digits "
                f"(checksum version {CHECKSUM_VERSION})"
            )
        return cls(rows, tuple(int(hex_value[at : at + 16], 16) for at in range(0, HEX_DIGITS, 16)))

    @classmethod
    def of(cls, data: Data) -> Self:
        checksum = cls()
        checksum.update(data)
        return checksum

    @property
    def hex(self) -> str:
        """Every lane's 16 hex digits, lane 0 first."""
        return "".join(f"{lane:016x}" for lane in self.lanes)

    @property
    def short(self) -> str:
        return short_form(self.hex)

    def update(self, data: Data) -> None:
        self.add_rows(hash_rows(data))

    def add_rows(self, hashes: RowHashes) -> None:
        self.rows += len(hashes)
        self.lanes = _plus(self.lanes, _lanes_of(hashes.sums))

    def subtract_rows(self, hashes: RowHashes) -> None:
        self.rows -= len(hashes)
        self.lanes = _plus(self.lanes, _lanes_of(hashes.sums), -1)

    def __add__(self, other: Self) -> Self:
        return type(self)(self.rows + other.rows, _plus(self.lanes, other.lanes))

    def __sub__(self, other: Self) -> Self:
        return type(self)(self.rows - other.rows, _plus(self.lanes, other.lanes, -1))

    merge = __add__
