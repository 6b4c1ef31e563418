"""`--iceberg-rust` built from a checkout of the iceberg-rust workspace (or a git URL): the worker is
built against the checkout's crates, named as built (`0.10.1+<commit>`, read from the worker), and
built again when the checkout's tree changes."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.base.results import read_runs
from harness.cli.main import main
from harness.services import rust_worker
from reports.baseline import newest_results_folder

pytestmark = pytest.mark.skipif(
    shutil.which("cargo") is None, reason="no cargo here: the Rust worker needs a Rust toolchain"
)


def git(folder: Path, *arguments: str) -> str:
    command = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *arguments]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def pinned_crates() -> dict[str, Path]:
    """The folders cargo unpacked the pinned iceberg crates into."""
    command = ["cargo", "metadata", "--format-version", "1", "--locked"]
    command += ["--manifest-path", str(rust_worker.RUST_DIR / "Cargo.toml")]
    metadata = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    names = {match["crate"] for match in rust_worker.PINNED.finditer(rust_worker._manifest())}
    return {
        package["name"]: Path(package["manifest_path"]).parent
        for package in metadata["packages"]
        if package["name"] in names and package["version"] == rust_worker.pinned_version()
    }


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout of the iceberg-rust workspace as a user's branch has it: the pinned release's
    crates under crates/, committed in a git repository of their own."""
    folder = tmp_path_factory.mktemp("branch") / "iceberg-rust"
    crates = pinned_crates()
    for name, path in crates.items():
        shutil.copytree(path, folder / "crates" / name)
    members = ", ".join(f'"crates/{name}"' for name in sorted(crates))
    (folder / "Cargo.toml").write_text(f'[workspace]\nresolver = "2"\nmembers = [{members}]\n')
    git(folder, "init", "-q")
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "a branch of the user's")
    return folder


def test_the_manifest_takes_every_iceberg_crate_from_the_checkout(checkout: Path):
    manifest = rust_worker._manifest(str(checkout))
    for crate in pinned_crates():
        assert f'{crate} = {{ path = "{checkout / "crates" / crate}" }}' in manifest
    assert manifest.count('path = "') == 2 * len(pinned_crates())  # the dependency and its patch
    with pytest.raises(ValueError, match="no cargo workspace to build"):
        rust_worker.binary_path(str(checkout / "crates"))  # no Cargo.toml there


def test_a_change_to_the_checkout_is_another_build(checkout: Path, tmp_path: Path):
    copy = tmp_path / "iceberg-rust"
    shutil.copytree(checkout, copy)
    before = rust_worker.binary_path(str(copy))
    assert before.parent.name.startswith("iceberg-src") and before != rust_worker.binary_path()
    (copy / "target").mkdir()
    (copy / "target" / "junk").write_text("cargo's output is no source")
    assert rust_worker.binary_path(str(copy)) == before
    with (copy / "crates" / "iceberg" / "src" / "lib.rs").open("a") as lib:
        lib.write("\n// a change of the branch's\n")
    assert rust_worker.binary_path(str(copy)) != before


@pytest.mark.slow  # compiles the iceberg crates and the worker again: ~5 min on 2 cores
def test_a_checkout_on_the_axis_runs_named_as_built(checkout: Path, cli_settings):
    commit = git(checkout, "rev-parse", "--short=7", "HEAD")
    arguments = ["run", "--scenario", "append", "--writer", "iceberg-rust", "--iceberg-rust", str(checkout)]
    assert main(arguments) == 0
    [record] = read_runs(newest_results_folder(cli_settings.results_dir))
    assert record.status == "ok" and record.verdict.passed, record.error or record.verdict
    built = f"{rust_worker.pinned_version()}+{commit}"
    assert (record.variant, record.versions["iceberg-rust"]) == (f"iceberg-rust {built}", built)
    assert record.versions["iceberg-datafusion"] == built


@pytest.mark.parametrize(
    ("reference", "dependency"),
    [
        (
            "git+https://github.com/apache/iceberg-rust@6f1b2d4",
            'git = "https://github.com/apache/iceberg-rust", rev = "6f1b2d4"',
        ),
        ("git+https://github.com/apache/iceberg-rust@refs/pull/7/head", 'rev = "refs/pull/7/head"'),
        (
            "git+https://github.com/apache/iceberg-rust@main",
            'git = "https://github.com/apache/iceberg-rust", branch = "main"',
        ),
        (
            "git+ssh://git@github.com/apache/iceberg-rust",
            '{ git = "ssh://git@github.com/apache/iceberg-rust" }',
        ),
    ],
)
def test_a_git_url_is_cargos_git_dependency(reference: str, dependency: str):
    manifest = rust_worker._manifest(reference)
    assert manifest.count(dependency) == 2 * len(pinned_crates()), manifest  # the dependency and its patch
