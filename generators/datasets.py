"""The generated sets a preset's scenarios need, made once and cached under settings.data_dir."""

from __future__ import annotations

import fcntl
import math
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pyarrow as pa

from generators.changes import change_rows, generate_changes
from generators.checksum import CHECKSUM_VERSION
from generators.events import generate_events
from generators.faults import DAMAGES, Damage, damaged_copy, intact_files
from generators.manifest import MANIFEST_FILE, DatasetManifest, ManifestError
from generators.place import Place, on_s3, require_set_folder
from generators.presets import Preset
from generators.wide import GENERATION, generate_base
from harness.base.errors import IcebenchError, SourceError, close_match, first_line, one_line, warn

# Base-like sets of their own seed whose keys follow each other's: base 0..rows-1, replacement
# rows..2*rows-1, `disjoint-N` N*rows..; the change set's new keys start at rows, so from
# disjoint-2 on a set's keys are apart from every other set's (a scenario just names one).
DISJOINT_SETS = {"base": 0, "replacement": 1} | {f"disjoint-{n}": n for n in range(2, 4)}
# name -> sets it is derived from; generated in this order.
SET_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(DISJOINT_SETS, ()),
    "changes": ("base",),
    "changes-evolved": ("base",),
    # The base set with its middle file broken (generators/faults.py), for the bad-source scenarios.
    **{f"base-{damage}": ("base",) for damage in DAMAGES},
}
DAMAGED_SETS = frozenset(name for name in SET_DEPENDENCIES if name.startswith("base-"))
# The rounds workload's sets: `round-N` is base-like with keys of its own, `round-N-changes` its
# change set (updates of round-N's keys, new keys just above them). Named on demand, any N >= 1.
ROUND_SET = re.compile(r"round-([1-9][0-9]*)(-changes)?")
FIRST_ROUND_BLOCK = 4  # key blocks 0-3 are the fixed sets': base, replacement, disjoint-2, -3


def round_set(round_number: int) -> str:
    return f"round-{round_number}"


def round_changes(round_number: int) -> str:
    return f"round-{round_number}-changes"


def dependencies(name: str) -> tuple[str, ...]:
    """The sets `name` is derived from (a one-line error for a name no generator makes)."""
    if name in SET_DEPENDENCIES:
        return SET_DEPENDENCIES[name]
    if match := ROUND_SET.fullmatch(name):
        return (round_set(int(match[1])),) if match[2] else ()
    hint = close_match(name, SET_DEPENDENCIES)
    raise SourceError(
        f"unknown data set {name!r}{hint}; choose from {', '.join(SET_DEPENDENCIES)} or round-N"
    )


def generation_order(name: str) -> tuple[int, int, str]:
    """The fixed sets in their order, then each round's set before its change set."""
    if name in SET_DEPENDENCIES:
        return (0, list(SET_DEPENDENCIES).index(name), "")
    match = ROUND_SET.fullmatch(name)
    assert match, name
    return (1, int(match[1]), match[2] or "")


ProgressFactory = Callable[[str, int], Callable[[int], None]]


@dataclass(frozen=True)
class DataSet:
    directory: Place  # a folder, or an S3 prefix (only a set given by --source s3://...)
    manifest: DatasetManifest


DataSets = dict[str, DataSet]


class DataCache:
    def __init__(self, root: Path, seed: int, update_ratio: float, insert_ratio: float) -> None:
        self.root = root.resolve()
        self.seed = seed
        self.update_ratio = update_ratio
        self.insert_ratio = insert_ratio

    def folder(self, preset: Preset) -> Path:
        generation = f"-g{GENERATION}" if preset.shape == "wide" and GENERATION > 1 else ""
        return (
            self.root
            / f"{preset.name}-{preset.rows}x{preset.columns}-f{preset.files}-seed{self.seed}{generation}"
        )

    def ensure(
        self, preset: Preset, names: Iterable[str], progress: ProgressFactory | None = None
    ) -> DataSets:
        wanted = set(names)
        for name in list(wanted):
            wanted.update(dependencies(name))
        sets: DataSets = {}
        for name in sorted(wanted, key=generation_order):
            directory = self._set_folder(preset, name)
            if self._unusable(name, directory) is not None:
                with generation_lock(directory):  # another invocation may be making the same set
                    if (why := self._unusable(name, directory)) is not None:
                        if why:
                            warn(f"cached data set {name}: {why}; generating it again")
                        shutil.rmtree(directory, ignore_errors=True)
                        self._generate(preset, name, directory, sets, progress)
            sets[name] = DataSet(directory, DatasetManifest.load(directory))
        return sets

    def _generate(
        self, preset: Preset, name: str, directory: Path, sets: DataSets, progress: ProgressFactory | None
    ) -> None:
        """Into a staging folder of this process, renamed into place once complete: a set is
        either whole or absent, and a failure (a full disk, Ctrl-C) leaves no partial folder."""
        for stale in directory.parent.glob(f".{directory.name}.partial*"):  # a dead run's, under the lock
            shutil.rmtree(stale, ignore_errors=True)
        staging = directory.with_name(f".{directory.name}.partial-{os.getpid()}")
        try:
            self._write_set(preset, name, staging, sets, progress, directory)
            staging.rename(directory)
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, OSError | pa.ArrowException) and not isinstance(exc, IcebenchError):
                # Arrow's "No space left on device" names no file: say where the set was going.
                raise IcebenchError(f"generating {name} into {directory.parent}: {one_line(exc)}") from exc
            raise

    def _write_set(
        self,
        preset: Preset,
        name: str,
        staging: Path,
        sets: DataSets,
        progress: ProgressFactory | None,
        directory: Path,
    ) -> None:
        if preset.shape == "events":  # its other sets are derived as from your data (your_changes)
            if name != "base":
                raise SourceError(f"preset {preset.name} makes its base set only here, not {name}")
            advance = progress(f"generate {preset.name}/{name}", preset.rows) if progress else None
            size = {"rows": preset.rows, "columns": preset.columns, "files": preset.files, "seed": self.seed}
            generate_events(staging, **size, final=directory, progress=advance)
            return
        if name.startswith("base-"):
            damaged_copy(sets["base"].directory, staging, cast(Damage, name.removeprefix("base-")))
            return
        block = self._key_block(name)
        if block is not None:
            advance = progress(f"generate {preset.name}/{name}", preset.rows) if progress else None
            # Disjoint keys and other values: e.g. every row a replace removed must disappear.
            generate_base(
                staging,
                rows=preset.rows,
                columns=preset.columns,
                files=preset.files,
                seed=self.seed + block + (block >= 2),  # seed + 2 is the change set's
                first_key=preset.rows * block,
                progress=advance,
            )
            return
        of, seed = ("base", self.seed + 2) if name.startswith("changes") else self._round_changes(name)
        base_dir = sets[of].directory
        advance = None
        if progress:  # the exact total reads the base's footers: only for a bar
            rows = change_rows(base_dir, update_ratio=self.update_ratio, insert_ratio=self.insert_ratio)
            advance = progress(f"generate {preset.name}/{name}", rows)
        generate_changes(
            base_dir,
            staging,
            seed=seed,
            update_ratio=self.update_ratio,
            insert_ratio=self.insert_ratio,
            evolved=name == "changes-evolved",
            progress=advance,
        )

    @staticmethod
    def _unusable(name: str, directory: Path) -> str | None:
        """None for a complete set of this checksum version whose files are those its manifest
        lists (size, footer rows, CRC-32); else why not: a file that changed since it was
        generated, a manifest removed or damaged, or "" to make it again in silence (absent,
        another checksum version's or from before CRC-32s were recorded: the oracle could not
        verify against it)."""
        if not (directory / MANIFEST_FILE).exists():  # a set is renamed into place whole: one removed it
            return f"its {MANIFEST_FILE} is gone" if directory.exists() else ""
        try:
            manifest = DatasetManifest.load(directory)
        except ManifestError as exc:
            return f"its {MANIFEST_FILE} is unreadable ({first_line(exc)})"
        if manifest.checksum_version != CHECKSUM_VERSION:
            return ""
        # A damaged copy's broken file differs on purpose; its others are the base set's.
        entries = intact_files(manifest) if name in DAMAGED_SETS else manifest.files
        if any(entry.crc32 is None for entry in entries):
            return ""
        return manifest.file_mismatch(directory, entries)

    def _key_block(self, name: str) -> int | None:
        """Which block of `rows` keys a base-like set starts at; None for a change set. A round's
        block leaves room above it for its change set's new keys (insert_ratio x rows of them)."""
        if name in DISJOINT_SETS:
            return DISJOINT_SETS[name]
        match = ROUND_SET.fullmatch(name)
        if match is None or match[2]:
            return None
        return FIRST_ROUND_BLOCK + (int(match[1]) - 1) * (1 + math.ceil(self.insert_ratio))

    def _round_changes(self, name: str) -> tuple[str, int]:
        """A round's change set: derived from its round's set, seeded by the block just above it
        (a block no base-like set uses: it holds the change set's new keys)."""
        of = name.removesuffix("-changes")
        block = self._key_block(of)
        assert block is not None, name
        return of, self.seed + block + 2

    def missing(self, preset: Preset, names: Iterable[str]) -> list[str]:
        """The sets of `names` and those they derive from that are not in the cache (a quick look
        at their manifests, not the check `ensure` makes)."""
        wanted = set(names)
        for name in list(wanted):
            wanted.update(dependencies(name))
        return [
            name
            for name in sorted(wanted, key=generation_order)
            if not (self._set_folder(preset, name) / MANIFEST_FILE).exists()
        ]

    def _set_folder(self, preset: Preset, name: str) -> Path:
        if "changes" in name:  # change sets also depend on the ratios
            name = f"{name}-u{self.update_ratio:g}-i{self.insert_ratio:g}"
        return self.folder(preset) / name


@contextmanager
def generation_lock(directory: Path) -> Iterator[None]:
    """One generator per set across processes; the kernel drops the lock when its holder dies. A
    generation that made nothing (a refused source) leaves no lock file behind: it is removed under
    the lock, and a waiter that then holds the removed file's lock takes a fresh one."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    path = directory.with_name(f".{directory.name}.lock")
    while True:
        with open(path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _same_file(lock.fileno(), path):
                continue  # its holder removed it while this process waited
            try:
                yield
            finally:
                if not directory.exists():
                    path.unlink(missing_ok=True)
                fcntl.flock(lock, fcntl.LOCK_UN)
            return


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        return os.fstat(descriptor).st_ino == path.stat().st_ino
    except FileNotFoundError:
        return False


def data_set(directory: Place) -> DataSet:
    """A user-given set (`--source`, `--base`): must be a generated set with its manifest (on S3
    too: every file's CRC-32 is read there)."""
    require_set_folder(directory)
    try:
        manifest = DatasetManifest.load(directory).require_checksum_version(directory, CHECKSUM_VERSION)
    except ManifestError as exc:
        raise SourceError(str(exc)) from None
    if problem := manifest.file_mismatch(directory):
        raise SourceError(f"source set {directory} does not match its manifest: {problem}; regenerate it")
    return DataSet(directory if on_s3(directory) else Path(directory).resolve(), manifest)
