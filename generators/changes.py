"""Upsert change sets: fresh values for a sample of a base set's keys, plus brand-new keys."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from generators.checksum import CHECKSUM_VERSION, Checksum
from generators.manifest import (
    DatasetManifest,
    Expected,
    FileEntry,
    KeyRange,
    ManifestError,
    file_entry,
    merge_key_ranges,
    part_name,
    prepare_dataset_dir,
    schema_fields,
)
from generators.parallel import Progress, run_tasks
from generators.schema import KEY_COLUMN, wide_schema
from generators.wide import build_batch, parquet_writer, rows_per_group, write_row_group

# Leading seed words that keep the update and insert random streams apart from each
# other and from the base set's [seed, file, row_group] streams.
_UPDATE_STREAM, _INSERT_STREAM = 0, 1


@dataclass(frozen=True)
class _Updates:
    """Rows re-generated for keys sampled from one base row group."""

    base_path: Path
    file_index: int
    row_group: int
    rows: int


@dataclass(frozen=True)
class _Inserts:
    chunk: int
    first_key: int
    rows: int


_Unit = _Updates | _Inserts


@dataclass(frozen=True)
class _ChangeFile:
    path: Path
    schema: pa.Schema
    seed: int
    units: tuple[_Unit, ...]


@dataclass(frozen=True)
class _ChangeFileResult:
    entry: FileEntry
    written: Checksum
    replaced: Checksum  # the base rows these updates overwrite
    key_ranges: list[KeyRange]


def generate_changes(
    base_dir: Path,
    out: Path,
    *,
    seed: int,
    update_ratio: float = 0.2,
    insert_ratio: float = 0.1,
    evolved: bool = False,
    workers: int | None = None,
    progress: Progress | None = None,
) -> DatasetManifest:
    """Write a change set for the base set in `base_dir`, with the table expected after upserting it."""
    if not (0 <= update_ratio <= 1 and insert_ratio >= 0 and seed >= 0):
        raise ValueError(
            f"need 0 <= update_ratio <= 1, insert_ratio >= 0, seed >= 0; got "
            f"{update_ratio}, {insert_ratio}, {seed}"
        )
    base_dir, out = Path(base_dir), Path(out)
    base = _load_base(base_dir)
    if problem := base.file_mismatch(base_dir):  # its rows would be read to sample the updates
        raise ManifestError(f"base set {base_dir} does not match its manifest: {problem}")
    first_insert_key = max(high for _, high in base.key_ranges) + 1
    inserts = _insert_count(base, insert_ratio)
    units = _update_units(base, base_dir, update_ratio) + _insert_units(base, first_insert_key, inserts)
    schema = wide_schema(base.columns, evolved=evolved)
    prepare_dataset_dir(out)
    target_rows = math.ceil(base.rows / len(base.files))
    tasks = [
        _ChangeFile(out / part_name(index), schema, seed, tuple(group))
        for index, group in enumerate(_split_into_files(units, target_rows))
    ]
    results = run_tasks(_write_change_file, tasks, workers=workers, progress=progress)
    written = sum((result.written for result in results), Checksum())
    replaced = sum((result.replaced for result in results), Checksum())
    after = Checksum.from_hex(base.checksum, base.rows) - replaced + written
    new_keys = [(first_insert_key, first_insert_key + inserts - 1)] if inserts else []
    manifest = DatasetManifest(
        kind="changes",
        rows=written.rows,
        columns=len(schema),
        seed=seed,
        schema_fields=schema_fields(schema),
        files=[result.entry for result in results],
        checksum=written.hex,
        checksum_version=CHECKSUM_VERSION,
        key_ranges=merge_key_ranges([r for result in results for r in result.key_ranges]),
        base_checksum=base.checksum,
        updates=replaced.rows,
        inserts=inserts,
        update_ratio=update_ratio,
        insert_ratio=insert_ratio,
        evolved=evolved,
        expected_after_upsert=Expected(
            rows=after.rows, checksum=after.hex, key_ranges=merge_key_ranges(base.key_ranges + new_keys)
        ),
    )
    manifest.save(out)
    return manifest


def change_rows(base_dir: Path, *, update_ratio: float, insert_ratio: float) -> int:
    """The rows generate_changes will write for this base set: its updates are sampled per row
    group (rounded there), so the total is not simply the ratio times the base rows."""
    base_dir = Path(base_dir)
    base = _load_base(base_dir)
    updates = sum(unit.rows for unit in _update_units(base, base_dir, update_ratio))
    return updates + _insert_count(base, insert_ratio)


def _insert_count(base: DatasetManifest, insert_ratio: float) -> int:
    return round(insert_ratio * base.rows)


def _load_base(base_dir: Path) -> DatasetManifest:
    base = DatasetManifest.load(base_dir).require_checksum_version(base_dir, CHECKSUM_VERSION)
    if base.kind != "base" or base.field_names() != wide_schema(base.columns).names:
        raise ManifestError(f"not a generated base set: {base_dir}")
    for path in base.file_paths(base_dir):
        if not path.is_file():
            raise ManifestError(f"base file listed in the manifest is missing: {path}")
    return base


def _update_units(base: DatasetManifest, base_dir: Path, ratio: float) -> list[_Unit]:
    units: list[_Unit] = []
    for file_index, path in enumerate(base.file_paths(base_dir)):
        metadata = pq.read_metadata(path)
        for group in range(metadata.num_row_groups):
            rows = round(ratio * metadata.row_group(group).num_rows)
            if rows:
                units.append(_Updates(path, file_index, group, rows))
    return units


def _insert_units(base: DatasetManifest, first_key: int, inserts: int) -> list[_Unit]:
    chunk_rows = rows_per_group(base.columns)
    return [
        _Inserts(chunk, first_key + start, min(chunk_rows, inserts - start))
        for chunk, start in enumerate(range(0, inserts, chunk_rows))
    ]


def _split_into_files(units: list[_Unit], target_rows: int) -> list[list[_Unit]]:
    """Consecutive runs of units holding about `target_rows` rows each."""
    files: list[list[_Unit]] = [[]]
    filled = 0
    for unit in units:
        if filled >= target_rows:
            files.append([])
            filled = 0
        files[-1].append(unit)
        filled += unit.rows
    return [group for group in files if group]


def _write_change_file(task: _ChangeFile) -> _ChangeFileResult:
    written, replaced, key_ranges = Checksum(), Checksum(), []
    with parquet_writer(task.path, task.schema) as writer:
        for unit in task.units:
            if isinstance(unit, _Updates):
                rng = np.random.default_rng([task.seed, _UPDATE_STREAM, unit.file_index, unit.row_group])
                keys = _sample_base_keys(unit, rng, replaced)
            else:
                rng = np.random.default_rng([task.seed, _INSERT_STREAM, unit.chunk])
                keys = np.arange(unit.first_key, unit.first_key + unit.rows, dtype=np.int64)
            key_ranges += _key_ranges(keys)
            write_row_group(writer, build_batch(task.schema, keys, rng), written)
    entry = file_entry(task.path, written.rows)
    return _ChangeFileResult(entry, written, replaced, key_ranges)


def _sample_base_keys(unit: _Updates, rng: np.random.Generator, replaced: Checksum) -> np.ndarray:
    """Pick `unit.rows` rows of the base row group, add them to `replaced`, return their keys."""
    group = _read_row_group(unit.base_path, unit.row_group)
    picks = np.sort(rng.choice(group.num_rows, unit.rows, replace=False))
    chosen = group.take(picks)
    replaced.update(chosen)
    return chosen[KEY_COLUMN].to_numpy()


def _read_row_group(path: Path, row_group: int) -> pa.Table:
    # Strings read as dictionaries hash once per distinct value.
    strings = [field.name for field in pq.read_schema(path) if pa.types.is_string(field.type)]
    return pq.ParquetFile(path, read_dictionary=strings).read_row_group(row_group)


def _key_ranges(sorted_keys: np.ndarray) -> list[KeyRange]:
    """Runs of consecutive keys as inclusive ranges."""
    if not len(sorted_keys):
        return []
    breaks = np.flatnonzero(np.diff(sorted_keys) != 1)
    firsts = sorted_keys[np.concatenate([[0], breaks + 1])]
    lasts = sorted_keys[np.concatenate([breaks, [len(sorted_keys) - 1]])]
    return list(zip(firsts.tolist(), lasts.tolist(), strict=True))
