"""A library on a version axis (`--dlt`, `--pyiceberg`, ...) as a release or built from source: a
checkout folder, a wheel or sdist file, or a VCS URL pip understands (`git+https://...@ref`).
iceberg-rust's crates (`--iceberg-rust`) are built by cargo: from a checkout of the iceberg-rust
workspace or a git URL (harness/services/rust_worker.py).

A build is named as it is, never as the release it started from: the version the package declares,
then what it was built from (`1.23.0+dc01193`, `+dc01193.dirty` for a checkout with changes,
`+src.<digest>` for a folder outside git or a file). Its environment is keyed by a digest of the
source's tree, so a change rebuilds it and an unchanged source is reused. The worker reads the
label from the environment it runs in (`library_version`): what ran, not what was asked for.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import Distribution, PackageNotFoundError, distribution, distributions
from importlib.util import find_spec
from pathlib import Path
from typing import Literal

from harness.base.config_file import check_version

BUILD_NOTE = "icebench-build.json"  # in a source build's environment: what it was built from
VCS_PREFIXES = ("git+", "hg+", "svn+", "bzr+")
PACKAGE_FILES = (".whl", ".tar.gz", ".zip")
# What a checkout holds that is no part of the package it builds (caches, build output, VCS data).
NOT_SOURCE = {".git", ".hg", ".svn", "__pycache__", "build", "dist", ".venv", ".tox", ".nox", ".mypy_cache",
              ".pytest_cache", ".ruff_cache", "node_modules", "target"}  # fmt: skip
SourceKind = Literal["folder", "file", "vcs"]
# Version axes that are no pip-built Python library: a JVM runtime's jars and Spark take releases only,
# the Rust worker's crates a cargo workspace's checkout or a git URL as well.
RELEASES_ONLY = ("iceberg-spark", "pyspark")
CARGO_BUILT = ("iceberg-rust",)


@dataclass(frozen=True)
class Source:
    """A library built from source; `ref` an absolute path or a VCS URL."""

    ref: str
    kind: SourceKind

    def requirement(self, library: str) -> str:
        """What pip installs: `dlt @ file:///...` (a URL pip builds a wheel from, if need be)."""
        url = self.ref if self.kind == "vcs" else Path(self.ref).as_uri()
        return f"{library} @ {url}"

    def note(self) -> dict[str, str | bool | None]:
        """What the build is, as its environment keeps it (BUILD_NOTE) and its label reads it."""
        commit, dirty = git_state(Path(self.ref)) if self.kind == "folder" else (None, False)
        return {
            "source": self.ref,
            "kind": self.kind,
            "commit": commit,
            "dirty": dirty,
            "digest": self.digest(),
        }

    def digest(self) -> str:
        """Short sha256 of what is built: a folder's files (its tree, without caches and VCS data),
        a file's bytes, a VCS URL's text (pin a commit in it: a branch is fetched once)."""
        hasher = hashlib.sha256()
        if self.kind == "vcs":
            hasher.update(self.ref.encode())
        elif self.kind == "file":
            hasher.update(Path(self.ref).read_bytes())
        else:
            for path in _tree(Path(self.ref)):
                hasher.update(f"{path.relative_to(self.ref)}\0".encode())
                hasher.update(path.read_bytes())
        return hasher.hexdigest()[:16]


def parse_source(text: str, cargo: bool = False) -> Source | None:
    """The source `text` names; None for a release's version. A one-line ValueError for neither.
    `cargo`: a source cargo builds (a folder with Cargo.toml, a git URL), not pip."""
    try:
        check_version(text)
        return None
    except ValueError:
        pass
    if text.startswith("git+" if cargo else VCS_PREFIXES):
        return Source(text, "vcs")
    path = Path(text).expanduser()
    if path.is_dir():
        needs = ("Cargo.toml",) if cargo else ("pyproject.toml", "setup.py", "setup.cfg")
        if not any((path / name).is_file() for name in needs):
            what = "no cargo workspace to build" if cargo else "no Python package to build"
            raise ValueError(f"{text}: a folder without {' or '.join(needs[:2])} is {what}")
        return Source(str(path.resolve()), "folder")
    if path.is_file() and not cargo:
        if not path.name.endswith(PACKAGE_FILES):
            raise ValueError(f"{text}: not a wheel or sdist ({', '.join(PACKAGE_FILES)})")
        return Source(str(path.resolve()), "file")
    if cargo:
        raise ValueError(
            f"not a version, a checkout folder or a git URL: {text!r} "
            "(e.g. 0.10.1, ../iceberg-rust, git+https://github.com/apache/iceberg-rust@6f1b2d4)"
        )
    raise ValueError(
        f"not a version, a source folder, a wheel or sdist, or a VCS URL: {text!r} "
        "(e.g. 1.23.0, ../dlt, dist/dlt-1.23.0.tar.gz, git+https://github.com/dlt-hub/dlt@dc01193)"
    )


def sources_taken(library: str) -> str:
    """What a library's axis builds from, for its flag's help; empty for one of releases only."""
    if library in RELEASES_ONLY:
        return ""
    return (
        "a checkout of its cargo workspace or a git URL"
        if library in CARGO_BUILT
        else ("a checkout folder, wheel, sdist, VCS URL")
    )


def check_library_version(text: str, library: str | None = None) -> str:
    """A release's version, or a source with its path made absolute (the workers start elsewhere).
    `library`: one that takes releases only (RELEASES_ONLY) refuses a source; one cargo builds
    (CARGO_BUILT) takes its own kinds of source."""
    source = parse_source(text, cargo=library in CARGO_BUILT)
    if source is not None and library in RELEASES_ONLY:
        raise ValueError(f"{library} takes releases only (a source build is for the libraries): {text!r}")
    return text if source is None else source.ref


def git_state(folder: Path) -> tuple[str | None, bool]:
    """(short commit, whether the tree differs from it) of a checkout; (None, False) outside git."""

    def git(*arguments: str) -> str | None:
        done = subprocess.run(
            ["git", "-C", str(folder), *arguments], capture_output=True, text=True, check=False, timeout=60
        )
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short=7", "HEAD")
    if commit is None:
        return None, False
    changed = (git("status", "--porcelain", "--untracked-files=all", ".") or "").splitlines()
    return commit, any(not _built(Path(line[3:].strip('"'))) for line in changed)  # builds change nothing


def build_tag(note: dict[str, str | bool | None]) -> str:
    """`dc01193`, `dc01193.dirty`, or `src.<digest>` when no commit is known."""
    if note.get("commit"):
        return f"{note['commit']}{'.dirty' if note.get('dirty') else ''}"
    return f"src.{str(note.get('digest', ''))[:8]}"


def library_version(library: str) -> str:
    """The version of `library` as this environment imports it: a release's, or a build's with what
    it was built from (`1.23.0+dc01193`), read from the distribution whose files the import finds
    (not one installed beside it without them: `pyiceberg 0.0.1` holds no module, so its environment
    imports the main one's 0.12.0) and the environment's BUILD_NOTE. "missing" when not installed."""
    try:
        found = _imported_distribution(library) or distribution(library)
    except PackageNotFoundError:
        return "missing"
    version = found.version
    note_path = Path(sys.prefix) / BUILD_NOTE
    direct_url = found.read_text("direct_url.json")  # PEP 610: installed from a URL, not an index
    if direct_url is None or not note_path.is_file():
        return version
    notes = json.loads(note_path.read_text())
    note = notes.get(library)
    if note is None:
        return version
    commit = json.loads(direct_url).get("vcs_info", {}).get("commit_id")  # what pip checked out
    if commit and not note.get("commit"):
        note = {**note, "commit": commit[:7]}
    return f"{version}+{build_tag(note)}"


def _imported_distribution(library: str) -> Distribution | None:
    """The installed distribution of `library` whose folder holds the module `import` finds first;
    None when the module is not found (the caller falls back to the installed distribution)."""
    spec = find_spec(library.replace("-", "_"))
    if spec is None or spec.origin is None:
        return None
    origin = Path(spec.origin).resolve()
    for candidate in distributions(name=library):
        if origin.is_relative_to(Path(str(candidate.locate_file(""))).resolve()):
            return candidate
    return None


def _tree(folder: Path) -> list[Path]:
    found: list[Path] = []
    for root, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not _built(Path(name)))
        found += [Path(root) / name for name in sorted(files) if not _built(Path(name))]
    return found


def _built(path: Path) -> bool:
    """Whether `path` (relative to a checkout) is no source: a cache, a build's output, VCS data."""
    return any(part in NOT_SOURCE or part.endswith(".egg-info") for part in path.parts) or bool(
        re.search(r"\.py[co]$", path.name)
    )
