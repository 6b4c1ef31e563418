"""`make lint-rust`: rustfmt and clippy hold the Rust worker (rust/) to its conventions, and fail on a
damaged copy of it naming the file. clippy is the worker crate's compiler in the tests' build (the
`quick` profile) of the worker's own cargo target folder: a copy of rust/ elsewhere compiles only
the worker crate again (the ~540 crates under it are the worker's build's)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.base.checkout import REPO_ROOT
from harness.services import rust_worker

pytestmark = pytest.mark.skipif(
    shutil.which("cargo") is None, reason="no cargo here: linting the Rust worker needs a Rust toolchain"
)


def lint_rust(rust_dir: Path) -> subprocess.CompletedProcess[str]:
    # -o: a test never reinstalls the venv, even one older than pyproject.toml.
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", "lint-rust", f"RUST_DIR={rust_dir}"]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)


@pytest.fixture
def rust_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "rust"
    shutil.copytree(rust_worker.RUST_DIR, copy, ignore=shutil.ignore_patterns("target"))
    return copy


def replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path} no longer has one {old!r} to replace"
    path.write_text(text.replace(old, new))


def test_the_worker_passes_rustfmt_and_clippy():
    done = lint_rust(rust_worker.RUST_DIR)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_unformatted_line_fails_naming_its_file(rust_copy: Path):
    timer = rust_copy / "src" / "timer.rs"
    replace_once(timer, "use std::time::Instant;", "use std::time::Instant ;")
    done = lint_rust(rust_copy)
    assert done.returncode != 0
    assert f"Diff in {timer}:" in done.stdout, done.stdout + done.stderr
    assert "clippy-driver" not in done.stdout  # make stops at rustfmt's failure


def test_a_clippy_warning_fails_naming_the_lint_and_its_file(rust_copy: Path):
    # Formatted as rustfmt wants, so it is clippy that fails.
    replace_once(
        rust_copy / "src" / "main.rs",
        "fn main() {\n",
        "fn main() {\n    let v = 1u32;\n    let _ = v.clone();\n",
    )
    done = lint_rust(rust_copy)
    assert done.returncode != 0
    assert "clippy::clone_on_copy" in done.stderr and "src/main.rs:" in done.stderr, done.stderr
