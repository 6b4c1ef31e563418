"""The sets a scenario needs beside your own, derived from it: an upsert's change set and a
replacement, deterministic for a seed, written into the data cache beside your set's manifest.

- changes: per batch of your set, `update_ratio` of its rows sampled, each keeping its key and
  taking the other columns' values of another row (new values of each column's type); and
  `insert_ratio` of its rows as new rows, their first key column given new values past its
  largest (new keys of the key's type).
- replacement: every row of your set under a new key, its other values shifted by a row: a set of
  your shape whose keys are disjoint from yours, as the generated replacement is.

Both are then derived like your own files against your set (generators/your_data.py): keyed in its
key space, the change set's table after the upsert known from the base rows it replaces.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from generators.datasets import DataSet, DataSets, ProgressFactory, round_changes, round_set
from generators.keys import plain
from generators.manifest import part_name
from generators.source import row_group_batches
from generators.your_data import READ_ROWS, derived_set
from harness.base.errors import SourceError

ROWS_PER_FILE = 1_000_000
# The sets made of a set with ranked keys (yours, or the events preset's): it, a change set and a
# replacement. A scenario that needs another set (an evolved change set, damaged copies) cannot run.
YOUR_SETS = ("base", "changes", "replacement")
_UPDATES, _INSERTS = 0, 1  # streams of the seed's random numbers


def sets_of_yours(
    base: DataSet,
    needs: set[str],
    seed: int,
    ratios: tuple[float, float],
    progress: ProgressFactory | None = None,
    changes: DataSet | None = None,
) -> DataSets:
    """`base` as the set `base`, and the `changes` (yours if given, else derived at `ratios` of
    updates and inserts) and `replacement` sets when `needs` names them."""
    if unknown := sorted(needs - set(YOUR_SETS)):
        raise SourceError(
            f"the {unknown[0]} set is not derived from {base.directory.name} (only {', '.join(YOUR_SETS)})"
        )
    sets = {"base": base}
    if "changes" in needs:
        sets["changes"] = changes or your_changes(base, seed, *ratios, progress)
    if "replacement" in needs:
        sets["replacement"] = your_replacement(base, progress)
    return sets


def your_changes(
    base: DataSet,
    seed: int,
    update_ratio: float,
    insert_ratio: float,
    progress: ProgressFactory | None = None,
) -> DataSet:
    """`base`'s change set: updates of `update_ratio` of its rows, `insert_ratio` of its rows in
    new keys."""
    if not (0 <= update_ratio <= 1 and 0 <= insert_ratio <= 1):
        raise SourceError(
            f"--update-ratio {update_ratio}, --insert-ratio {insert_ratio}: each must lie in 0..1"
        )
    folder = base.directory / f"changes-{seed}-u{update_ratio:g}-i{insert_ratio:g}"

    def write(staging: Path) -> list[Path]:
        keys = _NewKeys(base)
        batches = _changed_batches(base, seed, update_ratio, insert_ratio, keys)
        return _write(staging, batches, progress, round(base.manifest.rows * (update_ratio + insert_ratio)))

    return derived_set(folder, write, list(base.manifest.key_columns), progress, base, kind="changes")


def your_replacement(
    base: DataSet,
    progress: ProgressFactory | None = None,
    past: DataSet | None = None,
    name: str = "replacement",
) -> DataSet:
    """Every row of `base` under a new key, the other columns' values those of the next row; with
    `past`, keys past its keys too, numbered in its key space (a later round's set)."""
    past = past or base
    folder = base.directory / name

    def write(staging: Path) -> list[Path]:
        keys = _NewKeys(past)
        batches = (_rekeyed(batch, np.arange(batch.num_rows), keys, shift=1) for batch in _batches(base))
        return _write(staging, batches, progress, base.manifest.rows)

    return derived_set(folder, write, list(base.manifest.key_columns), progress, past)


def your_rounds(
    base: DataSet,
    rounds: int,
    changes: bool,
    seed: int,
    ratios: tuple[float, float],
    progress: ProgressFactory | None = None,
) -> DataSets:
    """The rounds workload's sets made of yours: `round-1` is your set, each later round your rows
    under keys past every earlier round's (its change set's inserts too); with `changes`, each
    round's change set `round-N-changes`. Each set is numbered in the key space of the one before,
    so the last holds every key of the workload."""
    sets: DataSets = {}
    latest = base
    tag = f"-u{ratios[0]:g}-i{ratios[1]:g}" if changes else ""
    for number in range(1, rounds + 1):
        rows = (
            base if number == 1 else your_replacement(base, progress, latest, f"round-{number}{tag}-{seed}")
        )
        sets[round_set(number)] = latest = rows
        if changes:
            sets[round_changes(number)] = latest = your_changes(rows, seed + number, *ratios, progress)
    return sets


def _batches(base: DataSet) -> Iterator[pa.RecordBatch]:
    for path in base.manifest.file_paths(base.directory):
        with pq.ParquetFile(path) as parquet:
            yield from row_group_batches(parquet, READ_ROWS, use_threads=True)


def _changed_batches(
    base: DataSet, seed: int, update_ratio: float, insert_ratio: float, keys: _NewKeys
) -> Iterator[pa.RecordBatch]:
    for index, batch in enumerate(_batches(base)):
        rows = batch.num_rows
        updates = np.random.default_rng([seed, _UPDATES, index]).choice(
            rows, round(update_ratio * rows), False
        )
        inserts = np.random.default_rng([seed, _INSERTS, index]).choice(
            rows, round(insert_ratio * rows), False
        )
        if len(updates):
            yield _shifted(batch, np.sort(updates), list(base.manifest.key_columns), shift=1)
        if len(inserts):
            yield _rekeyed(batch, np.sort(inserts), keys, shift=2)


def _shifted(batch: pa.RecordBatch, rows: np.ndarray, key: list[str], shift: int) -> pa.RecordBatch:
    """The `rows` of `batch` with their keys, every other column's values taken `shift` rows on."""
    own, other = pa.array(rows), pa.array((rows + shift) % batch.num_rows)
    columns = [
        batch.column(i).take(own if name in key else other) for i, name in enumerate(batch.schema.names)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _rekeyed(batch: pa.RecordBatch, rows: np.ndarray, keys: _NewKeys, shift: int) -> pa.RecordBatch:
    """`_shifted` rows under new keys: the first key column's values are the next new ones."""
    shifted = _shifted(batch, rows, keys.columns, shift)
    first = shifted.schema.get_field_index(keys.columns[0])
    return shifted.set_column(first, shifted.schema.field(first), keys.take(len(rows)))


class _NewKeys:
    """Values of the first key column past its largest in the base: keys no base row has, of the
    key's type, in increasing order."""

    def __init__(self, base: DataSet) -> None:
        self.columns = list(base.manifest.key_columns)
        column = self.columns[0]
        largest: Any = None
        kind: pa.DataType | None = None
        for path in base.manifest.file_paths(base.directory):
            with pq.ParquetFile(path) as parquet:
                for batch in parquet.iter_batches(READ_ROWS, columns=[column]):
                    kind = batch.schema.field(0).type
                    top = pc.max(plain(batch.column(0))).as_py()
                    largest = top if largest is None or (top is not None and top > largest) else largest
        if kind is None or largest is None:
            raise SourceError(f"{base.directory}: no key to make new keys past (the set is empty)")
        self.kind, self.largest, self.made = kind, largest, 0

    def take(self, count: int) -> pa.Array:
        steps = range(self.made + 1, self.made + count + 1)
        self.made += count
        return pa.array(
            [_successor(self.largest, step, self.kind, self.columns[0]) for step in steps], self.kind
        )


def _successor(largest: Any, step: int, kind: pa.DataType, column: str) -> Any:
    """The `step`-th value past `largest` of an Arrow type; a type with none is refused in one line."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return f"{largest}~{step:010d}"  # a longer string with `largest` as prefix sorts after it
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return largest + b"~" + step.to_bytes(8, "big")
    if pa.types.is_integer(kind):
        value = largest + step
        if value > np.iinfo(kind.to_pandas_dtype()).max:
            raise SourceError(f"key column {column} ({kind}) has no room for new keys past {largest}")
        return value
    if pa.types.is_decimal(kind):
        value = largest + Decimal(step).scaleb(-kind.scale)
        if len(value.as_tuple().digits) > kind.precision:
            raise SourceError(f"key column {column} ({kind}) has no room for new keys past {largest}")
        return value
    if pa.types.is_fixed_size_binary(kind) or isinstance(kind, pa.UuidType):
        width = kind.byte_width if pa.types.is_fixed_size_binary(kind) else 16
        raw = largest.bytes if hasattr(largest, "bytes") else largest
        number = int.from_bytes(raw, "big") + step
        if number >= 1 << (8 * width):
            raise SourceError(f"key column {column} ({kind}) has no room for new keys past it")
        value = number.to_bytes(width, "big")
        return type(largest)(bytes=value) if hasattr(largest, "bytes") else value
    if pa.types.is_temporal(kind) and not pa.types.is_time(kind):
        whole = pa.int32() if kind.bit_width == 32 else pa.int64()  # its storage
        return pa.scalar(pa.scalar(largest, kind).cast(whole).as_py() + step, whole).cast(kind).as_py()
    raise SourceError(
        f"key column {column} is {kind}: icebench cannot make new keys of that type for inserts"
    )


def _write(
    staging: Path, batches: Iterator[pa.RecordBatch], progress: ProgressFactory | None, rows: int
) -> list[Path]:
    """`batches` (about `rows` rows) into parquet files of about ROWS_PER_FILE rows each in `staging`."""
    advance = progress(f"derive {staging.name.split('.partial')[0].lstrip('.')}", rows) if progress else None
    files: list[Path] = []
    writer: pq.ParquetWriter | None = None
    written = 0
    try:
        for batch in batches:
            if writer is None or written >= ROWS_PER_FILE:
                if writer is not None:
                    writer.close()
                files.append(staging / part_name(len(files)))
                writer, written = pq.ParquetWriter(files[-1], batch.schema), 0
            writer.write_batch(batch)
            written += batch.num_rows
            if advance:
                advance(batch.num_rows)
    finally:
        if writer is not None:
            writer.close()
    if not files:
        raise SourceError(f"{staging.name}: the derived set would hold no row (ratios of 0?)")
    return files
