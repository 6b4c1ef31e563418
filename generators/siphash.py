"""SipHash-2-4 kernels for the content checksum (generators/checksum.py), compiled by numba.

SipHash as specified by Aumasson and Bernstein (64-bit output, 128-bit key), with C_ROUNDS
compression and D_ROUNDS finalisation rounds. Each kernel loops over the buffers of one Arrow
column, taken zero-copy, so no Python runs per row.

numba caches the compiled kernels on disk (cache=True: next to this file, else in the user's
cache folder, or NUMBA_CACHE_DIR), so only the first process after a change compiles them (a few
seconds); where no cache folder is writable they are compiled in memory, in every process.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

if sys.byteorder != "little":  # _load_word reads words in the machine's order
    raise ImportError("the checksum kernels need a little-endian machine")

C_ROUNDS = 2
D_ROUNDS = 4

_U64 = np.uint64
# "somepseudorandomlygeneratedbytes", SipHash's initial state constants.
_INIT = (
    _U64(0x736F6D6570736575),
    _U64(0x646F72616E646F6D),
    _U64(0x6C7967656E657261),
    _U64(0x7465646279746573),
)
_FF = _U64(0xFF)
Words = tuple[np.uint64, np.uint64, np.uint64, np.uint64]  # SipHash's v0..v3
# Row states, one array a word: the four SipHash words, then the message length in bytes. The
# kernels take them as a tuple of five 1-d arrays: numba compiles a contiguous 1-d array's loop to
# vector code, and a slice of a 2-d array (a column group's rows) is contiguous only row by row.
STATE_WORDS = 5
States = tuple[np.ndarray, ...]  # STATE_WORDS arrays, one value a row


def keyed(k0: int, k1: int) -> np.ndarray:
    """SipHash's state for the 128-bit key (k0, k1) before any message: the kernels' `key`."""
    return np.array([k0, k1, k0, k1], dtype=np.uint64) ^ np.array(_INIT, dtype=np.uint64)


def kernel(function: Callable[..., Any]) -> Callable[..., Any]:
    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # "no locator available": no writable cache folder (read-only tree and home)
        # stacklevel 1: one warning, not one per kernel
        warnings.warn("numba cannot cache the checksum kernels: compiling them in memory", stacklevel=1)
        return numba.njit(nogil=True)(function)


_helper = numba.njit(nogil=True)  # not cached on its own: LLVM inlines it into the kernels


@_helper
def _rotl(x: np.uint64, bits: int) -> np.uint64:
    return (x << _U64(bits)) | (x >> _U64(64 - bits))


@_helper
def _rounds(v0: np.uint64, v1: np.uint64, v2: np.uint64, v3: np.uint64, count: int) -> Words:
    for _ in range(count):
        v0 += v1
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 += v3
        v3 = _rotl(v3, 16) ^ v2
        v0 += v3
        v3 = _rotl(v3, 21) ^ v0
        v2 += v1
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


@_helper
def _compress(v0: np.uint64, v1: np.uint64, v2: np.uint64, v3: np.uint64, word: np.uint64) -> Words:
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3 ^ word, C_ROUNDS)
    return v0 ^ word, v1, v2, v3


@_helper
def _finish(
    v0: np.uint64, v1: np.uint64, v2: np.uint64, v3: np.uint64, tail: np.uint64, length: int
) -> np.uint64:
    """The last block (the message's 0-7 trailing bytes and its length mod 256), then finalisation."""
    v0, v1, v2, v3 = _compress(v0, v1, v2, v3, tail | (_U64(length) << _U64(56)))
    v0, v1, v2, v3 = _rounds(v0, v1, v2 ^ _FF, v3, D_ROUNDS)
    return v0 ^ v1 ^ v2 ^ v3


@intrinsic
def _load_word(typing_context: Any, data: types.Array, position: types.Integer) -> tuple[Any, Any]:
    """data[position : position + 8] as one little-endian uint64: one unaligned load, where
    assembling it byte by byte costs three times as long. The caller checks the bounds."""
    if data.dtype != types.uint8:
        return None

    def codegen(context: Any, builder: Any, signature: Any, arguments: Any) -> Any:
        array = context.make_array(signature.args[0])(context, builder, arguments[0])
        address = builder.bitcast(builder.gep(array.data, [arguments[1]]), ir.IntType(64).as_pointer())
        return builder.load(address, align=1)

    return types.uint64(data, position), codegen


@_helper
def _valid(bitmap: np.ndarray, bit: int) -> bool:
    """An Arrow validity bit; an empty bitmap means no nulls."""
    return bitmap.size == 0 or (bitmap[bit >> 3] >> (bit & 7)) & 1 == 1


@kernel
def absorb_words(states: States, header: np.uint64, values: np.ndarray, valid: np.ndarray) -> None:
    """Each row's cell as the header, then the value as 8 little-endian bytes (integers
    sign-extended to 64 bits); a row whose `valid` byte is 0 (a null) feeds nothing.

    Every row is hashed and nulls are masked out after: no branch, so LLVM runs the rounds of
    several rows at once in vector registers (6x a row at a time)."""
    a0, a1, a2, a3, length = states
    for i in range(values.size):
        v0, v1, v2, v3 = a0[i], a1[i], a2[i], a3[i]
        w0, w1, w2, w3 = _compress(v0, v1, v2, v3, header)
        w0, w1, w2, w3 = _compress(w0, w1, w2, w3, _U64(np.int64(values[i])))
        keep = _U64(0) - _U64(valid[i])  # all ones where valid
        a0[i], a1[i] = (w0 & keep) | (v0 & ~keep), (w1 & keep) | (v1 & ~keep)
        a2[i], a3[i] = (w2 & keep) | (v2 & ~keep), (w3 & keep) | (v3 & ~keep)
        length[i] += _U64(16) & keep


@kernel
def absorb_word_pairs(
    states: States, header: np.uint64, lows: np.ndarray, highs: np.ndarray, valid: np.ndarray
) -> None:
    """As absorb_words for 16-byte values given as their low and high uint64 words (each array
    contiguous, or the loop runs a row at a time): the header, then 16 little-endian bytes."""
    a0, a1, a2, a3, length = states
    for i in range(lows.size):
        v0, v1, v2, v3 = a0[i], a1[i], a2[i], a3[i]
        w0, w1, w2, w3 = _compress(v0, v1, v2, v3, header)
        w0, w1, w2, w3 = _compress(w0, w1, w2, w3, lows[i])
        w0, w1, w2, w3 = _compress(w0, w1, w2, w3, highs[i])
        keep = _U64(0) - _U64(valid[i])
        a0[i], a1[i] = (w0 & keep) | (v0 & ~keep), (w1 & keep) | (v1 & ~keep)
        a2[i], a3[i] = (w2 & keep) | (v2 & ~keep), (w3 & keep) | (v3 & ~keep)
        length[i] += _U64(24) & keep


@_helper
def _word_at(data: np.ndarray, position: int, count: int) -> np.uint64:
    """data[position : position + count] (count clamped to 0..8) as one little-endian word padded
    with zeros: one load and a mask where 8 bytes from `position` lie in the buffer (the bytes past
    the value are masked off), else byte by byte."""
    count = min(max(count, 0), 8)
    if position + 8 <= data.size:
        # Two shifts: a shift by 64 is undefined, and the mask of 8 bytes is all ones.
        mask = (_U64(1) << _U64(4 * count) << _U64(4 * count)) - _U64(1)
        return _load_word(data, position) & mask
    word = _U64(0)
    for byte in range(count):
        word |= _U64(data[position + byte]) << _U64(8 * byte)
    return word


@numba.njit(inline="always")  # inlined by numba itself: as a call per cell it cost 4x the hashing
def _value_bytes(
    v0: np.uint64, v1: np.uint64, v2: np.uint64, v3: np.uint64, data: np.ndarray, start: int, end: int
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64, int]:
    """data[start:end] absorbed as its length as 4 little-endian bytes and its bytes, zero-padded
    to whole words and to 3 words at least; the state and the words absorbed."""
    length = end - start
    v0, v1, v2, v3 = _compress(
        v0, v1, v2, v3, _U64(length) | _word_at(data, start, min(length, 4)) << _U64(32)
    )
    v0, v1, v2, v3 = _compress(v0, v1, v2, v3, _word_at(data, start + 4, length - 4))
    v0, v1, v2, v3 = _compress(v0, v1, v2, v3, _word_at(data, start + 12, length - 12))
    words = 3
    position = start + 20
    while position < end:  # past the 3 words every value takes (no branch on shorter ones)
        v0, v1, v2, v3 = _compress(v0, v1, v2, v3, _word_at(data, position, end - position))
        position += 8
        words += 1
    return v0, v1, v2, v3, words


@kernel
def absorb_bytes(
    states: States,
    header: np.uint64,
    offsets: np.ndarray,
    data: np.ndarray,
    validity: np.ndarray,
    offset: int,
    indices: np.ndarray,
    index_validity: np.ndarray,
    index_offset: int,
) -> None:
    """Each row's cell of a string or binary array as the header, then the value (_value_bytes).
    Row i's value is data[offsets[i]:offsets[i + 1]], or with `indices` (a dictionary array:
    these arrays are its entries) entry indices[i]. A null index or a null value feeds nothing."""
    a0, a1, a2, a3, absorbed = states
    for i in range(a0.size):
        entry = i
        if indices.size:
            if not _valid(index_validity, index_offset + i):
                continue
            entry = np.int64(indices[i])
        if not _valid(validity, offset + entry):
            continue
        v0, v1, v2, v3 = _compress(a0[i], a1[i], a2[i], a3[i], header)
        v0, v1, v2, v3, words = _value_bytes(
            v0, v1, v2, v3, data, np.int64(offsets[entry]), np.int64(offsets[entry + 1])
        )
        a0[i], a1[i], a2[i], a3[i] = v0, v1, v2, v3
        absorbed[i] += _U64(8 * (1 + words))


@kernel
def absorb_word_ranges(
    states: States, words: np.ndarray, width: int, starts: np.ndarray, ends: np.ndarray
) -> None:
    """Row i takes the elements starts[i] .. ends[i] - 1 of a node of a nested value, each `width`
    consecutive words of `words`, and no header (the column's came before its root)."""
    a0, a1, a2, a3, absorbed = states
    for i in range(a0.size):
        v0, v1, v2, v3 = a0[i], a1[i], a2[i], a3[i]
        for position in range(starts[i] * width, ends[i] * width):
            v0, v1, v2, v3 = _compress(v0, v1, v2, v3, words[position])
        a0[i], a1[i], a2[i], a3[i] = v0, v1, v2, v3
        absorbed[i] += _U64(8 * width * (ends[i] - starts[i]))


@kernel
def absorb_byte_ranges(
    states: States,
    offsets: np.ndarray,
    data: np.ndarray,
    validity: np.ndarray,
    offset: int,
    starts: np.ndarray,
    ends: np.ndarray,
) -> None:
    """Row i takes the string or binary elements starts[i] .. ends[i] - 1 of a nested value's
    leaf: each the word 1 and its value (_value_bytes), or the word 0 if null."""
    a0, a1, a2, a3, absorbed = states
    for i in range(a0.size):
        v0, v1, v2, v3 = a0[i], a1[i], a2[i], a3[i]
        total = 0
        for element in range(starts[i], ends[i]):
            if not _valid(validity, offset + element):
                v0, v1, v2, v3 = _compress(v0, v1, v2, v3, _U64(0))
                total += 1
                continue
            v0, v1, v2, v3 = _compress(v0, v1, v2, v3, _U64(1))
            v0, v1, v2, v3, words = _value_bytes(
                v0, v1, v2, v3, data, np.int64(offsets[element]), np.int64(offsets[element + 1])
            )
            total += 1 + words
        a0[i], a1[i], a2[i], a3[i] = v0, v1, v2, v3
        absorbed[i] += _U64(8 * total)


@kernel
def finish_lanes(states: States, first_lanes: np.ndarray, sums: np.ndarray) -> None:
    """Each row's sums.size lanes: lane j is the row's SipHash over the cells it absorbed
    followed by the 8 bytes of j. Row i's lane 0 goes to first_lanes[i]; lane j of every row is
    added to sums[j] (mod 2**64), so no rows x lanes array is ever held. A lane at a time over
    all rows, into an array then summed: that loop runs in vector registers, a running sum not."""
    a0, a1, a2, a3, length = states
    lanes = np.empty(a0.size, dtype=np.uint64)
    for j in range(sums.size):
        out = first_lanes if j == 0 else lanes
        for i in range(a0.size):
            v0, v1, v2, v3 = _compress(a0[i], a1[i], a2[i], a3[i], _U64(j))
            out[i] = _finish(v0, v1, v2, v3, _U64(0), length[i] + _U64(8))
        sums[j] += out.sum()
