"""The version 1 content checksum (generators/checksum.py before version 2), kept for tests only:
they show its cheap collisions, which version 2 does not have. Unchanged but for the names
(old_row_hashes, OldChecksum), the sum SumChecksum (version 2's too: tests/old_checksum_v2.py) and
old_hash_string_collision at the end.

    cell_hash  = mix64(column_seed(name) ^ value_hash(value))      non-null cells only
    row_hash   = mix64(sum of the row's cell hashes)                wrapping uint64
    checksum   = sum of row hashes mod 2**64                        a multiset hash

Values hash by their logical content, not their physical layout: every integer width,
date and timestamp becomes its int64 value, floats their float64 bit pattern, decimals
their unscaled 128-bit integer, strings a polynomial over their UTF-8 bytes. Columns
are identified by name, so column order does not matter, and nulls add nothing, so a
column added by schema evolution (null in old rows) leaves old row hashes unchanged.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import ClassVar, Self

import numpy as np
import pyarrow as pa

Data = pa.RecordBatch | pa.Table

_MASK64 = (1 << 64) - 1
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_STRING_BASE = 0x100000001B3  # odd, hence invertible mod 2**64
_STRING_BASE_INVERSE = pow(_STRING_BASE, -1, 1 << 64)
_BYTES_BLOCK = 1 << 16
_LENGTH_SALT = np.uint64(0x9E3779B97F4A7C15)
_DECIMAL_HIGH_SALT = np.uint64(0xD6E8FEB86659FD93)


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer, applied in place to a uint64 array (array ops wrap silently)."""
    values ^= values >> np.uint64(30)
    values *= _MIX1
    values ^= values >> np.uint64(27)
    values *= _MIX2
    values ^= values >> np.uint64(31)
    return values


@cache
def column_seed(name: str) -> np.uint64:
    """Stable across processes and runs, unlike hash()."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


def old_row_hashes(data: Data) -> np.ndarray:
    """One uint64 hash per row of `data`."""
    sums = np.zeros(data.num_rows, dtype=np.uint64)
    for name, column in zip(data.column_names, data.columns, strict=True):
        seed = column_seed(name)
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        start = 0
        for chunk in chunks:
            _add_cell_hashes(sums[start : start + len(chunk)], chunk, seed)
            start += len(chunk)
    return mix64(sums)


def _add_cell_hashes(sums: np.ndarray, array: pa.Array, seed: np.uint64) -> None:
    if array.null_count == len(array):
        return
    hashes, valid = _value_hashes(array)
    hashes ^= seed
    np.add(sums, mix64(hashes), out=sums, where=valid if valid is not None else True)


def _value_hashes(array: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """A fresh, writable uint64 array of value hashes plus the validity mask (None: no nulls)."""
    if pa.types.is_dictionary(array.type):
        return _dictionary_hashes(array)
    return _plain_hashes(_canonical(array)), _validity(array)


def _dictionary_hashes(array: pa.DictionaryArray) -> tuple[np.ndarray, np.ndarray | None]:
    # Hash each distinct value once and gather: same result as decoding first, much cheaper.
    dictionary_hashes, dictionary_valid = _value_hashes(array.dictionary)
    indices = _fixed_width(array.indices.fill_null(0), np.int64)
    valid = _validity(array.indices)
    if dictionary_valid is not None:
        valid = dictionary_valid[indices] if valid is None else valid & dictionary_valid[indices]
    return dictionary_hashes[indices], valid


def _canonical(array: pa.Array) -> pa.Array:
    """Recast the layouts that hash as another type."""
    kind = array.type
    if pa.types.is_timestamp(kind) and kind.unit != "us":
        return array.cast(pa.timestamp("us", tz=kind.tz))
    if pa.types.is_decimal256(kind) and kind.precision <= 38:
        return array.cast(pa.decimal128(kind.precision, kind.scale))
    if pa.types.is_string_view(kind) or pa.types.is_binary_view(kind):
        return array.cast(pa.large_binary())
    return array


def _plain_hashes(array: pa.Array) -> np.ndarray:
    kind = array.type
    if pa.types.is_boolean(kind):
        return _bits(array.buffers()[1], array.offset, len(array)).astype(np.uint64)
    if pa.types.is_floating(kind):
        return _fixed_width(array, np.float64).view(np.uint64)
    if _is_integer_like(kind):
        return _fixed_width(array, np.int64).view(np.uint64)
    if pa.types.is_decimal128(kind):
        return _decimal_hashes(array)
    if _is_bytes_like(kind):
        return _bytes_hashes(array)
    raise TypeError(f"checksum does not support column type {kind}")


def _is_integer_like(kind: pa.DataType) -> bool:
    return (
        pa.types.is_integer(kind)
        or pa.types.is_date(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_time(kind)
        or pa.types.is_duration(kind)
    )


def _is_bytes_like(kind: pa.DataType) -> bool:
    return (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    )


def _fixed_width(array: pa.Array, widen_to: type[np.generic]) -> np.ndarray:
    """The values buffer (honouring the slice offset), converted to a fresh `widen_to` array."""
    kind = array.type
    letter = "f" if pa.types.is_floating(kind) else "u" if pa.types.is_unsigned_integer(kind) else "i"
    dtype = np.dtype(f"<{letter}{kind.bit_width // 8}")
    raw = np.frombuffer(array.buffers()[1], dtype=dtype, count=array.offset + len(array))
    return raw[array.offset :].astype(widen_to)


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    raw = np.frombuffer(buffer, dtype=np.uint8, count=(offset + length + 7) // 8)
    return np.unpackbits(raw, count=offset + length, bitorder="little")[offset:].view(bool)


def _validity(array: pa.Array) -> np.ndarray | None:
    if array.null_count == 0:
        return None
    return _bits(array.buffers()[0], array.offset, len(array))


def _decimal_hashes(array: pa.Array) -> np.ndarray:
    # 16-byte little-endian two's complement: (low, high) uint64 words per value.
    words = np.frombuffer(array.buffers()[1], dtype=np.uint64, count=2 * (array.offset + len(array)))
    words = words.reshape(-1, 2)[array.offset :]
    return words[:, 0] ^ (words[:, 1] * _DECIMAL_HIGH_SALT)


@cache
def _powers(base: int, size: int) -> np.ndarray:
    """base ** k mod 2**64 for k < size."""
    powers = np.full(size, base, dtype=np.uint64)
    powers[0] = 1
    return np.cumprod(powers, out=powers)


def _bytes_hashes(array: pa.Array) -> np.ndarray:
    """sum(byte_i * BASE**i) over each value's bytes, plus its length times a salt.

    Bytes are weighted by their position in the whole block (one contiguous multiply), then
    each value's sum is rescaled by BASE**-start so it no longer depends on where it sits.
    Blocks of ~64 KiB keep the uint64 temporaries in cache.
    """
    offsets, data = _offsets_and_data(array)
    block_starts = np.searchsorted(offsets, np.arange(0, offsets[-1], _BYTES_BLOCK))
    bounds = np.union1d(block_starts, [0, len(offsets) - 1])
    size = 1 << int(np.diff(offsets[bounds]).max(initial=_BYTES_BLOCK)).bit_length()
    powers, inverse_powers = _powers(_STRING_BASE, size), _powers(_STRING_BASE_INVERSE, size)
    lengths = np.diff(offsets)
    hashes = np.zeros(len(lengths), dtype=np.uint64)
    for first, last in itertools.pairwise(bounds.tolist()):
        starts = offsets[first:last] - offsets[first]
        chunk = data[offsets[first] : offsets[last]]
        terms = np.multiply(chunk, powers[: len(chunk)], dtype=np.uint64)
        nonempty = lengths[first:last] > 0
        if nonempty.any():
            # Segments of non-empty values are contiguous: empty ones own no bytes in between.
            sums = np.zeros(last - first, dtype=np.uint64)
            sums[nonempty] = np.add.reduceat(terms, starts[nonempty])
            hashes[first:last] = sums * inverse_powers[starts]
    hashes += lengths.astype(np.uint64) * _LENGTH_SALT
    return hashes


def _offsets_and_data(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """int64 offsets rebased to start at 0 and the matching slice of the UTF-8 data buffer."""
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(
        offsets_buffer, dtype=np.int64 if large else np.int32, count=array.offset + len(array) + 1
    )
    offsets = offsets[array.offset :].astype(np.int64)
    start, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(data_buffer, dtype=np.uint8, count=end)[start:] if end else np.empty(0, np.uint8)
    return offsets - start, data


@dataclass
class SumChecksum:
    """The table checksum of versions 1 and 2: the sum of one 64-bit hash per row, mod 2**64.
    Subclasses set the row hash."""

    rows: int = 0
    value: int = 0
    hash_rows: ClassVar[Callable[[Data], np.ndarray]]

    @classmethod
    def of(cls, data: Data) -> Self:
        checksum = cls()
        checksum.add_rows(cls.hash_rows(data))
        return checksum

    @property
    def hex(self) -> str:
        return f"{self.value:016x}"

    def add_rows(self, hashes: np.ndarray) -> None:
        self.rows += len(hashes)
        self.value = (self.value + int(hashes.sum(dtype=np.uint64))) & _MASK64


class OldChecksum(SumChecksum):
    """The running multiset checksum of version 1."""

    hash_rows = staticmethod(old_row_hashes)


# --- a cheap collision of the old string hash -------------------------------------------------

_MODULUS = 1 << 64
_PRINTABLE = (ord(" "), ord("~"))
_POSITIONS = 36  # more positions: shorter differences, slower reduction
_MAX_STEP = 8  # the largest change of one byte


def old_hash_string_collision(s: str) -> str:
    """A different printable-ASCII string of the same length with the same old string hash.

    The old hash is sum(byte_i * BASE**i) + length * salt (mod 2**64): a byte difference vector d
    with sum(d_i * BASE**i) == 0 mod 2**64 keeps it. Such vectors form a lattice; LLL reduction
    of its basis gives short ones (entries of a few units at ~36 positions), and one that keeps
    every changed byte printable is applied.
    """
    data = bytearray(s.encode("ascii"))
    low, high = _PRINTABLE
    positions = [i for i, byte in enumerate(data) if low + _MAX_STEP <= byte <= high - _MAX_STEP][:_POSITIONS]
    if len(positions) < 16:
        raise ValueError(f"too few changeable characters in {s!r} (need 16 in {low + _MAX_STEP}..)")
    for difference in _short_kernel_vectors([pow(_STRING_BASE, i, _MODULUS) for i in positions]):
        if max(map(abs, difference)) <= _MAX_STEP:
            for position, step in zip(positions, difference, strict=True):
                data[position] += step
            return data.decode("ascii")
    raise ValueError(f"no short enough difference found for {s!r}")


def _short_kernel_vectors(weights: list[int]) -> list[list[int]]:
    """An LLL-reduced basis of {d : sum(d_i * weights_i) == 0 mod 2**64}, shortest first; weights[0] odd."""
    # Scaled so the first weight is 1: d_0 is then fixed by the others, d_0 = -sum(d_j * w_j).
    inverse = pow(weights[0], -1, _MODULUS)
    scaled = [weight * inverse % _MODULUS for weight in weights]
    size = len(weights)
    basis = [[_MODULUS] + [0] * (size - 1)]
    basis += [[-scaled[j]] + [int(i == j) for i in range(1, size)] for j in range(1, size)]
    reduced = _lll(basis)
    return sorted(reduced, key=lambda vector: sum(x * x for x in vector))


def _lll(basis: list[list[int]], delta: tuple[int, int] = (99, 100)) -> list[list[int]]:
    """Integral LLL (Cohen, A Course in Computational Algebraic Number Theory, algorithm 2.6.7):
    exact integer arithmetic throughout, d[i] the Gram determinants, lam the scaled mu."""
    b = [row[:] for row in basis]
    n = len(b)

    def dot(u: list[int], v: list[int]) -> int:
        return sum(x * y for x, y in zip(u, v, strict=True))

    d = [1] + [0] * n  # d[i + 1] belongs to vector i
    lam = [[0] * n for _ in range(n)]
    d[1] = dot(b[0], b[0])

    def reduce(k: int, j: int) -> None:
        if 2 * abs(lam[k][j]) > d[j + 1]:
            q = (2 * lam[k][j] + d[j + 1]) // (2 * d[j + 1])
            b[k] = [x - q * y for x, y in zip(b[k], b[j], strict=True)]
            lam[k][j] -= q * d[j + 1]
            for i in range(j):
                lam[k][i] -= q * lam[j][i]

    def swap(k: int, k_max: int) -> None:
        b[k], b[k - 1] = b[k - 1], b[k]
        for j in range(k - 1):
            lam[k][j], lam[k - 1][j] = lam[k - 1][j], lam[k][j]
        mu = lam[k][k - 1]
        new = (d[k - 1] * d[k + 1] + mu * mu) // d[k]
        for i in range(k + 1, k_max + 1):
            t = lam[i][k]
            lam[i][k] = (d[k + 1] * lam[i][k - 1] - mu * t) // d[k]
            lam[i][k - 1] = (new * t + mu * lam[i][k]) // d[k + 1]
        d[k] = new

    k, k_max = 1, 0
    while k < n:
        if k > k_max:  # Gram-Schmidt of the new vector, in integers
            k_max = k
            for j in range(k + 1):
                u = dot(b[k], b[j])
                for i in range(j):
                    u = (d[i + 1] * u - lam[k][i] * lam[j][i]) // d[i]
                if j < k:
                    lam[k][j] = u
                else:
                    d[k + 1] = u
        reduce(k, k - 1)
        numerator, denominator = delta
        if denominator * d[k + 1] * d[k - 1] < numerator * d[k] ** 2 - denominator * lam[k][k - 1] ** 2:
            swap(k, k_max)
            k = max(1, k - 1)
        else:
            for j in range(k - 2, -1, -1):
                reduce(k, j)
            k += 1
    return b
