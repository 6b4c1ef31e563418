"""Order-independent content checksum shared by the generators and the read-back oracle (version 5).

    row message = for each non-null cell, columns by name: header(name, type tag), canonical bytes
    lane j      = SipHash-2-4[R0, R1](row message + j as 8 bytes LE)     j = 0 .. LANES - 1 (32)
    checksum    = sum of the rows' lane vectors, lane by lane mod 2**64   a multiset hash

Values enter by their logical content, not their physical layout. Canonical bytes, in whole 8-byte
words: every integer width, date (days), time, timestamp and duration (microseconds) its int64
little-endian; floats their float64 bits, every NaN as the one quiet NaN 0x7ff8000000000000 (the
spec holds a NaN's payload and sign meaningless, and engines do not keep them); decimals the
16-byte two's complement unscaled value; booleans 0 or 1; strings, binary, fixed and uuid their
length as 4 bytes LE, then their bytes, zero-padded to whole words and to 3 words at least (so
short values take no branch). The header
is a keyed BLAKE2b of the column's name and type tag: integer (all widths, as Iceberg promotes int
to long), date, time, timestamp, timestamptz, duration, float, decimal (with its scale), string
(string, large_string and string_view alike), binary, boolean, fixed, uuid. Header and lengths
make the message parse one way only: no value reads like another, another column's or a missing
one.

Nested cells (struct, list and map, nested in each other; Arrow's list, large_list, fixed-size
list and list views alike, a map as its key-value entries): the header is a keyed BLAKE2b of the
column's name and its whole type (nested_header: struct fields by name, leaves by type tag), then
the type's nodes in order, each node's words for all its elements in the row before its
children's: a struct 1 (0 if null) an element, then its fields by name over the same elements; a
list or map its length << 1 | 1 (0 if null) an element, then its element's node (a map's key's,
then its value's) over the elements of the row's lists, a map's entries in the order of their
keys (a map is unordered: the order a writer stores them in is not content); a leaf 1 then its
canonical value, or 0 if null (then zeros of the value's width if fixed-width). The counts come
before what they count, so the message parses one way; what Arrow keeps under a null struct or
list is not the row's.

A null cell adds nothing, so a column added by schema evolution (null in old rows) leaves old row
hashes unchanged; column order does not matter. The row's SipHash state is finalised once per lane.

Why it cannot be forged at an affordable cost: cells enter the row's SipHash unhashed, so two rows
hash alike only if two messages reach one 256-bit state (about 2**128 work by birthday search; the
best published differential characteristic of SipHash-2-4 holds with probability 2**-236.3,
Dobraunig, Mendel and Schlaeffer 2014), and the 32 lanes make the sum a 2048-bit group where a
generalised-birthday search (Wagner's k-tree, about k * 2**(n / (1 + lg k)) for k lists) costs over
2**64 a list for any k below 2**31 (the rows of any table). Version 3 hashed each cell to 64 bits
first: a value hashing like one of a column's N values took 2**64 / N. Version 2 summed one 64-bit
lane: 8 lists of 2**16 rows forged it in seconds (tests/old_checksum_v2.py). Version 1 (a
polynomial string hash, XOR-combined decimals, no type tags) had algebraic shortcuts; manifests
record the version their checksums were computed with (CHECKSUM_VERSION); version 4 hashed NaN
payloads and a map's entries in stored order, so that a legal table could fail.
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
import pyarrow.compute as pc

from generators import siphash

Data = pa.RecordBatch | pa.Table

CHECKSUM_VERSION = 5
# Lanes of a row hash and of the checksum: 32 x 64 bits, a 2048-bit group (see above).
LANES = 32
HEX_DIGITS = 16 * LANES

_MASK64 = (1 << 64) - 1
_EMPTY = np.empty(0, np.uint8)
_NO_INDICES = (np.empty(0, np.int32), _EMPTY, 0)  # absorb_bytes of a plain array


def _key(label: bytes) -> tuple[int, int]:
    digest = hashlib.blake2b(label, digest_size=16).digest()
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")


_HEADER_KEY = b"icebench checksum v4: headers"
_ROW_KEY = _key(b"icebench checksum v4: rows")  # (R0, R1)
MAX_VALUE_BYTES = 2**32 - 1  # a string or binary value's length is fed as 4 bytes


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
    FIXED = 12
    UUID = 13
    NESTED = 14  # struct, list or map: its header names the whole type (nested_header)


@cache
def cell_header(name: str, tag: int) -> np.uint64:
    """The word a column's cells start with: names the column and its logical type. Stable across
    processes and runs, unlike hash()."""
    message = tag.to_bytes(8, "little") + name.encode()
    digest = hashlib.blake2b(message, digest_size=8, key=_HEADER_KEY).digest()
    return np.uint64(int.from_bytes(digest, "little"))


@cache
def nested_header(name: str, signature: str) -> np.uint64:
    """The word a nested column's cells start with: names the column and its whole type."""
    message = Tag.NESTED.to_bytes(8, "little") + len(signature).to_bytes(4, "little") + signature.encode()
    digest = hashlib.blake2b(message + name.encode(), digest_size=8, key=_HEADER_KEY).digest()
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
    """Each row's SipHash state (siphash.STATE_WORDS words) once its non-null cells are absorbed,
    in column-name order."""
    states = empty_row_states(data.num_rows)
    absorb_columns(states, data)
    return states


def empty_row_states(rows: int) -> np.ndarray:
    """The states of `rows` rows before any cell: fed by absorb_columns, ended by finish_rows. A
    reader may absorb a row group's columns a few at a time, in name order across the calls."""
    states = np.empty((siphash.STATE_WORDS, rows), dtype=np.uint64)
    states[:4] = siphash.keyed(*_ROW_KEY)[:, None]
    states[4] = 0  # message bytes absorbed
    return states


def absorb_columns(states: np.ndarray, data: Data) -> None:
    """Each column of `data` into its rows' `states`, in name order: the chain of cell hashes must
    not depend on the column order. Columns absorbed by an earlier call must sort before these."""
    for name, column in sorted(zip(data.column_names, data.columns, strict=True), key=lambda item: item[0]):
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        start = 0
        for chunk in chunks:
            _absorb_column(tuple(states[:, start : start + len(chunk)]), chunk, name)
            start += len(chunk)


def finish_rows(states: np.ndarray) -> RowHashes:
    """The rows' lane sums and lane 0 from their absorbed `states`."""
    first_lanes = np.empty(states.shape[1], dtype=np.uint64)
    sums = np.zeros(LANES, dtype=np.uint64)
    siphash.finish_lanes(tuple(states), first_lanes, sums)
    return RowHashes(first_lanes, sums)


def _absorb_column(states: siphash.States, array: pa.Array, name: str) -> None:
    if array.null_count == len(array):
        return
    if _is_nested(array.type):
        _absorb_nested(states, array, name)
        return
    if pa.types.is_dictionary(array.type):
        if _holds_bytes(array.dictionary.type):
            _absorb_dictionary_bytes(states, array, name)
            return
        array = array.dictionary_decode()  # fixed-width entries: decoding is as cheap as gathering
    values = _canonical(array)
    tag = _type_tag(values.type)
    header = cell_header(name, tag)
    kind = Tag(tag & 0xFF)
    if kind in _BYTES_TAGS:
        bitmap, offset = _validity(values)
        siphash.absorb_bytes(states, header, *_offsets_and_data(values), bitmap, offset, *_NO_INDICES)
    elif kind == Tag.DECIMAL:
        siphash.absorb_word_pairs(states, header, *decimal_words(values), _valid_bytes(values))
    else:
        siphash.absorb_words(states, header, _fixed_width_values(values, kind), _valid_bytes(values))


_BYTES_TAGS = (Tag.STRING, Tag.BINARY, Tag.FIXED, Tag.UUID)  # fed as length and bytes


def _fixed_width_values(values: pa.Array, kind: Tag) -> np.ndarray:
    """One number a value (nulls hold whatever their slot held), as absorb_words takes them:
    booleans 0 or 1 a byte, floats their float64 bits, integers (dates, times) as stored, which
    the kernel sign-extends."""
    if kind == Tag.BOOLEAN:
        bits = np.frombuffer(values.buffers()[1], dtype=np.uint8)
        return np.unpackbits(bits, count=values.offset + len(values), bitorder="little")[values.offset :]
    if kind == Tag.FLOAT:
        floats = _values(values).astype(np.float64, copy=False)
        bits = floats.view(np.uint64)
        nans = np.isnan(floats)
        if nans.any():
            bits = bits.copy()
            bits[nans] = CANONICAL_NAN_BITS
        return bits
    return _values(values)


CANONICAL_NAN_BITS = np.uint64(0x7FF8_0000_0000_0000)


# --- nested values: struct, list and map -------------------------------------------------------


def _is_nested(kind: pa.DataType) -> bool:
    return pa.types.is_struct(kind) or pa.types.is_map(kind) or _is_list(kind)


_LIST_LAYOUTS = (
    pa.types.is_list,
    pa.types.is_large_list,
    pa.types.is_fixed_size_list,
    pa.types.is_list_view,
    pa.types.is_large_list_view,
)
_BYTES_LAYOUTS = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_string_view,
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_binary_view,
)


def _is_list(kind: pa.DataType) -> bool:
    return any(check(kind) for check in _LIST_LAYOUTS)


def _absorb_nested(states: siphash.States, array: pa.Array, name: str) -> None:
    """A nested column's non-null cells: the header (the column's name and whole type), the root's
    word, then each node of the type below it in order (_absorb_node)."""
    valid = _valid_bytes(array)
    node = _Node.of(array)
    siphash.absorb_words(states, nested_header(name, _signature(array.type)), node.words, valid)
    rows = np.arange(len(array), dtype=np.int64)
    node.absorb_children(states, rows, rows + valid)  # a null cell: no elements


def _absorb_node(states: siphash.States, array: pa.Array, starts: np.ndarray, ends: np.ndarray) -> None:
    """Elements starts[i] .. ends[i] - 1 of one node of the type into row i: a struct's or a list's
    own words, then its children's in order; a leaf's values, each a validity word then the value."""
    if _is_nested(array.type):
        node = _Node.of(array)
        siphash.absorb_word_ranges(states, node.words, 1, starts, ends)
        node.absorb_children(states, starts, ends)
        return
    values = _canonical(array.dictionary_decode() if pa.types.is_dictionary(array.type) else array)
    kind = Tag(_type_tag(values.type) & 0xFF)
    if kind in _BYTES_TAGS:
        bitmap, offset = _validity(values)
        siphash.absorb_byte_ranges(states, *_offsets_and_data(values), bitmap, offset, starts, ends)
        return
    valid = _valid_bytes(values).astype(np.uint64)
    if kind == Tag.DECIMAL:
        payload = list(decimal_words(values))
    else:  # as a uint64 word, integers sign-extended as the kernel does at the top level
        payload = [_fixed_width_values(values, kind).astype(np.int64).view(np.uint64)]
    words = np.column_stack([valid, *(word * valid for word in payload)])  # a null: zeros after its 0
    siphash.absorb_word_ranges(states, words.ravel(), words.shape[1], starts, ends)


@dataclass(frozen=True)
class _Node:
    """A struct, list or map array opened once: its word per element, its child arrays in order,
    and (lists, maps) where each element's children start in them."""

    words: np.ndarray
    children: list[pa.Array]
    offsets: np.ndarray | None  # None: a struct, whose children are its elements

    @classmethod
    def of(cls, array: pa.Array) -> _Node:
        """A struct 1 (0 if null) an element, its fields by name with its nulls applied; a list or
        map its length shifted left once, plus 1 (0 if null), its element (a map's key, then its
        value) over the elements of its lists, nulls holding none."""
        valid = _valid_bytes(array).astype(np.uint64)
        kind = array.type
        if pa.types.is_struct(kind):
            names = [kind.field(index).name for index in range(kind.num_fields)]
            children = [
                child
                for _, child in sorted(zip(names, array.flatten(), strict=True), key=lambda item: item[0])
            ]
            return cls(valid, children, None)
        as_list = _as_list(array)
        lengths = pc.list_value_length(as_list).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        elements = pc.list_flatten(as_list)  # a null list's slot emits nothing
        children = _entries_by_key(elements.flatten(), lengths) if pa.types.is_map(kind) else [elements]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        return cls(lengths.astype(np.uint64) << np.uint64(1) | valid, children, offsets)

    def absorb_children(self, states: siphash.States, starts: np.ndarray, ends: np.ndarray) -> None:
        """Each child over the elements of this node's elements starts[i] .. ends[i] - 1."""
        if self.offsets is not None:
            starts, ends = self.offsets[starts], self.offsets[ends]
        for child in self.children:
            _absorb_node(states, child, starts, ends)


def _entries_by_key(children: list[pa.Array], lengths: np.ndarray) -> list[pa.Array]:
    """A map's keys and values, each map's entries put in the order of their keys (within its own
    range: the offsets hold). Keys a sort cannot order (nested ones) stay as stored."""
    keys, values = children
    rows = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    try:
        by_key = [("row", "ascending"), ("key", "ascending")]
        order = pc.sort_indices(pa.table({"row": rows, "key": keys}), sort_keys=by_key)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return children
    return [keys.take(order), values.take(order)]


def _as_list(array: pa.Array) -> pa.Array:
    """A list-like array as a large_list (a map as a list of its key-value entries)."""
    kind = array.type
    if pa.types.is_map(kind):
        return array.cast(pa.large_list(pa.struct([kind.key_field, kind.item_field])))
    if pa.types.is_large_list(kind):
        return array
    return array.cast(pa.large_list(kind.value_field))


def _signature(kind: pa.DataType) -> str:
    """A type as the nested header names it: Arrow's layout variants alike, struct fields by name."""
    if pa.types.is_dictionary(kind):
        return _signature(kind.value_type)
    if pa.types.is_struct(kind):
        fields = sorted((kind.field(index) for index in range(kind.num_fields)), key=lambda field: field.name)
        return "struct<" + ",".join(f"{len(f.name)}:{f.name}:{_signature(f.type)}" for f in fields) + ">"
    if pa.types.is_map(kind):
        return f"map<{_signature(kind.key_type)},{_signature(kind.item_type)}>"
    if _is_list(kind):
        return f"list<{_signature(kind.value_type)}>"
    return str(_type_tag(_canonical_type(kind)))


def _absorb_dictionary_bytes(states: siphash.States, array: pa.DictionaryArray, name: str) -> None:
    """A dictionary of strings or binary, fed row by row from its entries without decoding."""
    entries = _canonical(array.dictionary)
    entries_bitmap, entries_offset = _validity(entries)
    siphash.absorb_bytes(
        states,
        cell_header(name, _type_tag(entries.type)),
        *_offsets_and_data(entries),
        entries_bitmap,
        entries_offset,
        _values(array.indices),
        *_validity(array.indices),
    )


def decimal_words(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A decimal128 array's low and high uint64 words, each contiguous: the kernels' loops over
    them run in vector registers, over the interleaved words a row at a time."""
    words = _values(array)
    return np.ascontiguousarray(words[:, 0]), np.ascontiguousarray(words[:, 1])


def _holds_bytes(kind: pa.DataType) -> bool:
    return any(check(kind) for check in _BYTES_LAYOUTS)


def _valid_bytes(array: pa.Array) -> np.ndarray:
    """One byte a row, 1 where the value is valid: the fixed-width kernels mask with it."""
    bitmap, offset = _validity(array)
    if not bitmap.size:
        return np.ones(len(array), dtype=np.uint8)
    return np.unpackbits(bitmap, count=offset + len(array), bitorder="little")[offset:]


def _validity(array: pa.Array) -> tuple[np.ndarray, int]:
    """The validity bitmap (empty: no nulls) and the array's first bit in it."""
    bitmap = array.buffers()[0]
    if array.null_count == 0 or bitmap is None:
        return _EMPTY, 0
    return np.frombuffer(bitmap, dtype=np.uint8), array.offset


def _canonical(array: pa.Array) -> pa.Array:
    """Recast the layouts that hash as another one (_canonical_type)."""
    kind = _canonical_type(array.type)
    return array if kind == array.type else array.cast(kind)


def _canonical_type(kind: pa.DataType) -> pa.DataType:
    """The layout a type hashes as: units to microseconds (days for dates), narrower and wider
    decimals to decimal128, views to their plain layout."""
    if pa.types.is_timestamp(kind) and kind.unit != "us":
        return pa.timestamp("us", tz=kind.tz)
    if pa.types.is_time(kind) and kind.unit != "us":
        return pa.time64("us")
    if pa.types.is_duration(kind) and kind.unit != "us":
        return pa.duration("us")
    if pa.types.is_date64(kind):
        return pa.date32()
    if pa.types.is_decimal(kind) and kind.bit_width != 128 and kind.precision <= 38:
        return pa.decimal128(kind.precision, kind.scale)
    if pa.types.is_string_view(kind):
        return pa.large_string()
    if pa.types.is_binary_view(kind):
        return pa.large_binary()
    return kind


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
    (Tag.UUID, lambda kind: isinstance(kind, pa.UuidType)),
    (Tag.FIXED, pa.types.is_fixed_size_binary),
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
    """The offsets of the array's slice (offset + 1 entries, into the whole data buffer) and that
    buffer; a fixed-size binary's (a UUID's) values at whole multiples of its width."""
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if pa.types.is_fixed_size_binary(array.type):
        width = array.type.byte_width
        offsets = np.arange(array.offset, array.offset + len(array) + 1, dtype=np.int64) * width
        return offsets, np.frombuffer(array.buffers()[1], dtype=np.uint8)
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(
        offsets_buffer, dtype="<i8" if large else "<i4", count=array.offset + len(array) + 1
    )[array.offset :]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else _EMPTY
    if offsets[-1] > data.size:  # the kernel reads unchecked
        raise ValueError(f"corrupt {array.type} array: offsets run past its data")
    if large and offsets[-1] - offsets[0] > MAX_VALUE_BYTES and np.diff(offsets).max() > MAX_VALUE_BYTES:
        raise ValueError(
            f"a {array.type} value over {MAX_VALUE_BYTES} bytes: the checksum feeds lengths as 4 bytes"
        )
    return offsets, data


def short_form(hex_value: str) -> str:
    """A checksum in a reason: its lane 0, enough to tell checksums apart by eye."""
    return hex_value[:16]


def differing_forms(first: str, second: str) -> tuple[str, str]:
    """Two checksums in a reason, each as short as still tells them apart: lane 0, and where that
    is the same (a forgery that matches it), the first lane that differs too."""
    if first[:16] != second[:16] or first == second:
        return short_form(first), short_form(second)
    pairs = enumerate(zip(first, second, strict=False))
    lane = next((index for index, (a, b) in pairs if a != b), min(len(first), len(second))) // 16

    def form(value: str) -> str:
        return f"{value[:16]}...{value[lane * 16 : lane * 16 + 16]} (lane {lane})"

    return form(first), form(second)


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
