"""A library on a version axis (`--dlt`, `--pyiceberg`, ...) as a release or built from source: a
checkout folder, a wheel or sdist file, or a VCS URL pip understands (`git+https://...@ref`).

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
from importlib.metadata import PackageNotFoundError, distribution
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
# Version axes that are no pip-built Python library: a JVM runtime's jars, Spark, the Rust worker's crates.
RELEASES_ONLY = ("iceberg-spark", "pyspark", "iceberg-rust")


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


def parse_source(text: str) -> Source | None:
    """The source `text` names; None for a release's version. A one-line ValueError for neither."""
    try:
        check_version(text)
        return None
    except ValueError:
        pass
    if text.startswith(VCS_PREFIXES):
        return Source(text, "vcs")
    path = Path(text).expanduser()
    if path.is_dir():
        if not any((path / name).is_file() for name in ("pyproject.toml", "setup.py", "setup.cfg")):
            raise ValueError(
                f"{text}: a folder without pyproject.toml or setup.py is no Python package to build"
            )
        return Source(str(path.resolve()), "folder")
    if path.is_file():
        if not path.name.endswith(PACKAGE_FILES):
            raise ValueError(f"{text}: not a wheel or sdist ({', '.join(PACKAGE_FILES)})")
        return Source(str(path.resolve()), "file")
    raise ValueError(
        f"not a version, a source folder, a wheel or sdist, or a VCS URL: {text!r} "
        "(e.g. 1.23.0, ../dlt, dist/dlt-1.23.0.tar.gz, git+https://github.com/dlt-hub/dlt@dc01193)"
    )


def check_library_version(text: str, library: str | None = None) -> str:
    """A release's version, or a source with its path made absolute (the workers start elsewhere).
    `library`: one that takes releases only (RELEASES_ONLY) refuses a source."""
    source = parse_source(text)
    if source is not None and library in RELEASES_ONLY:
        raise ValueError(
            f"{library} takes releases only (a source build is for the Python libraries): {text!r}"
        )
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
    """The version of `library` as this environment holds it: a release's, or a build's with what it
    was built from (`1.23.0+dc01193`), read from the distribution pip installed and the environment's
    BUILD_NOTE. "missing" when it is not installed."""
    try:
        found = distribution(library)
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
