"""The harness's own inputs are verified before a writer is judged on them: a cached set whose
files are not those its manifest lists (size, footer rows, CRC-32) is generated again, a set the
user gives is refused, in one line naming the file."""

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import generators.manifest
from generators.changes import generate_changes
from generators.datasets import DataCache, data_set
from generators.manifest import MANIFEST_FILE, DatasetManifest, ManifestError
from generators.presets import get_preset
from harness.base.errors import IcebenchWarning, SourceError
from harness.base.results import read_runs
from harness.cli.main import main
from reports.baseline import newest_results_folder

TINY = get_preset("tiny")


def flip_middle(path: Path, count: int = 64) -> None:
    """`count` bytes in the middle of the file inverted: same size, same footer."""
    middle = path.stat().st_size // 2
    with path.open("r+b") as handle:
        handle.seek(middle)
        data = handle.read(count)
        handle.seek(middle)
        handle.write(bytes(byte ^ 0xFF for byte in data))


def fewer_rows(path: Path) -> None:
    """The file replaced by a valid parquet file of its first half."""
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows // 2), path)


@pytest.fixture
def cache(tmp_path: Path) -> DataCache:
    return DataCache(tmp_path / "data", seed=42, update_ratio=0.2, insert_ratio=0.1)


@pytest.mark.parametrize(("damage", "says"), [(flip_middle, "CRC-32"), (fewer_rows, "bytes")])
def test_a_changed_cached_file_is_named_and_generated_again(cache: DataCache, damage, says):
    fresh = cache.ensure(TINY, ["base", "base-corrupt-page"])
    cache.ensure(TINY, ["base", "base-corrupt-page"])  # checked: the files' state is recorded
    victim = fresh["base"].directory / "part-00000.parquet"
    damage(victim)  # also the damaged copy's file: it is a hard link of the base's
    with pytest.warns(IcebenchWarning) as warned:
        again = cache.ensure(TINY, ["base", "base-corrupt-page"])
    lines = [str(w.message) for w in warned]
    assert len(lines) == 2, lines
    assert all(str(victim.name) in line and says in line and "\n" not in line for line in lines)
    assert lines[0].startswith(f"cached data set base: {victim} ")
    assert again["base"].manifest == fresh["base"].manifest
    assert again["base"].manifest.file_mismatch(again["base"].directory) is None


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda manifest: manifest.unlink(), "its manifest.json is gone"),
        (lambda manifest: manifest.write_text("{"), "its manifest.json is unreadable"),
    ],
)
def test_a_removed_or_damaged_manifest_is_said_and_the_set_made_again(cache: DataCache, damage, says):
    fresh = cache.ensure(TINY, ["base"])
    damage(fresh["base"].directory / "manifest.json")
    with pytest.warns(IcebenchWarning, match=f"cached data set base: {says}"):
        again = cache.ensure(TINY, ["base"])
    assert again["base"].manifest.checksum == fresh["base"].manifest.checksum


def test_an_intact_cache_passes_without_a_word(cache: DataCache, recwarn):
    cache.ensure(TINY, ["changes", "base-empty-file", "base-wrong-schema"])
    modified = {p: p.stat().st_mtime_ns for p in cache.folder(TINY).rglob("*.parquet")}
    cache.ensure(TINY, ["changes", "base-empty-file", "base-wrong-schema"])
    assert not [w for w in recwarn if issubclass(w.category, IcebenchWarning)]
    assert modified == {p: p.stat().st_mtime_ns for p in cache.folder(TINY).rglob("*.parquet")}


def test_a_manifest_without_crc32s_is_made_again_in_silence(cache: DataCache, recwarn):
    base = cache.ensure(TINY, ["base"])["base"]
    document = json.loads((base.directory / MANIFEST_FILE).read_text())
    for entry in document["files"]:
        del entry["crc32"]
    (base.directory / MANIFEST_FILE).write_text(json.dumps(document))
    with pytest.raises(SourceError, match=r"part-00000\.parquet has no CRC-32 in its manifest"):
        data_set(base.directory)
    again = cache.ensure(TINY, ["base"])["base"]
    assert all(entry.crc32 for entry in again.manifest.files)
    assert not [w for w in recwarn if issubclass(w.category, IcebenchWarning)]


@pytest.mark.parametrize("damage", [flip_middle, fewer_rows])
def test_a_given_set_that_changed_is_refused_before_any_run(capsys, cache, tmp_path, damage):
    source = tmp_path / "mine"
    shutil.copytree(cache.ensure(TINY, ["base"])["base"].directory, source)
    victim = source / "part-00001.parquet"
    damage(victim)
    results = tmp_path / "results"
    code = main(
        ["run", "--scenario", "append", "--writer", "pyiceberg-table", "--source", str(source),
         "--results", str(results)]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"icebench: error: source set {source} does not match its manifest: {victim} ")
    assert not results.exists()  # no run, no record: no writer judged on it


def test_the_next_run_on_a_corrupted_cache_judges_the_writer_on_the_true_data(
    capsys, cache, tmp_path, monkeypatch
):
    victim = cache.ensure(TINY, ["base"])["base"].directory / "part-00001.parquet"
    flip_middle(victim)
    monkeypatch.setenv("ICEBENCH_DATA_DIR", str(cache.root))
    code = main(
        ["run", "--scenario", "append", "--writer", "pyiceberg-add-files", "--preset", "tiny",
         "--results", str(tmp_path / "results"), "--memory", "1g"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"icebench: warning: cached data set base: {victim} has CRC-32" in err
    (record,) = read_runs(newest_results_folder(tmp_path / "results"))
    assert record.verdict is not None and record.verdict.passed, record.verdict
    assert DatasetManifest.load(victim.parent).file_mismatch(victim.parent) is None


def test_a_change_set_is_never_made_of_a_base_that_changed(cache: DataCache, tmp_path: Path):
    base = cache.ensure(TINY, ["base"])["base"]
    copy = tmp_path / "base"
    shutil.copytree(base.directory, copy)
    flip_middle(copy / "part-00000.parquet")
    with pytest.raises(ManifestError, match=r"part-00000\.parquet has CRC-32"):
        generate_changes(copy, tmp_path / "changes", seed=1)


def test_a_file_checked_before_and_not_written_since_is_not_read_again(cache: DataCache, monkeypatch):
    base = cache.ensure(TINY, ["base"])["base"]
    assert base.manifest.file_mismatch(base.directory) is None
    read: list[Path] = []
    crc32 = generators.manifest.file_crc32
    monkeypatch.setattr(generators.manifest, "file_crc32", lambda path: read.append(path) or crc32(path))
    assert base.manifest.file_mismatch(base.directory) is None
    assert read == []
    victim = base.directory / "part-00001.parquet"
    flip_middle(victim)
    flip_middle(victim)  # written twice: the same bytes, but read again
    assert base.manifest.file_mismatch(base.directory) is None
    assert read == [victim]
