"""What icebench leaves on disk, and its removal (`icebench clean [--all] [--dry-run]`, `make clean-all`).

The one list of the places the harness, its scripts and its tests write to, each removed only
when provably icebench's and not in use:
- in the checkout (`clean`): the generated data sets (settings.data_dir), the writer
  environments beside them, the worker image's wheelhouse. Results are outputs, never removed.
- outside it (`clean --all` adds): ${ICEBENCH_CACHE:-~/.cache/icebench} (rootfs tarballs,
  debootstrap's .debs, wheels of compose/images.sh and compose/rest-catalog/build.sh); the
  private Docker engine's folder ${ICEBENCH_DOCKER_DIR:-/var/tmp/icebench-docker} with its data
  root and images (only while its dockerd is stopped); the icebench/* images of another engine
  that answers (built there by compose/images.sh); icebench-* scratch folders in the temp folder
  of processes that are gone; the pytest session folders of icebench's test suite
  (/tmp/pytest-of-USER/pytest-N holding its `icebench` session folder) whose session has ended.
Never another cache: pip's (~/.cache/pip, shared with everything else), uv's, matplotlib's.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.base.caps import format_size
from harness.base.checkout import REPO_ROOT
from harness.base.ownership import pid_alive
from harness.base.settings import Settings
from harness.services.rust_worker import build_cache

# Scratch folders in the temp folder: harness.engines (icebench-spark-<pid>, icebench-dlt-*,
# icebench-duckdb-*, icebench-pyfiles-*), crash tracebacks.
TEMP_PREFIX = "icebench-"
SCRATCH_WITH_PID = re.compile(r"icebench-spark-(\d+)")
# A scratch folder without a PID in its name is taken for abandoned once untouched this long
# (longer than the default worker timeout, 1800 s).
ABANDONED_AFTER_S = 2 * 3600
# The test suite's session folder (tests/conftest.py: tmp_path_factory.mktemp("icebench")).
TEST_SESSION_FOLDER = "icebench"
IMAGE_REFERENCE = "icebench/*"
DEFAULT_ENGINE_DIR = "/var/tmp/icebench-docker"  # compose/docker-engine.sh's


@dataclass(frozen=True)
class Place:
    """Something icebench wrote: a folder or file, or a Docker image (`image` set)."""

    what: str
    path: Path | None = None
    image: str | None = None
    size: int = 0
    # Why it stays although it is ours (in use), None when it can go.
    kept_because: str | None = None

    @property
    def name(self) -> str:
        return self.image or str(self.path)


Outcome = Literal["removed", "would go", "kept", "failed"]


@dataclass(frozen=True)
class Removal:
    place: Place
    outcome: Outcome
    note: str | None = None  # why it was kept, or could not be removed

    def __str__(self) -> str:
        note = f": {self.note}" if self.note else ""
        size = format_size(self.place.size)
        return f"{self.outcome:<8} {size:>10}  {self.place.what} {self.place.name}{note}"


def places(settings: Settings, everything: bool, checkout: Path | None = None) -> list[Place]:
    """What `clean` (and with `everything`, `clean --all`) would remove, with sizes, existing only."""
    checkout = checkout or REPO_ROOT
    found = [
        _folder(settings.data_dir, "generated data sets"),
        _folder(settings.data_dir.parent / "envs", "writer environments (other library versions)"),
        _folder(checkout / "compose" / "worker" / "wheelhouse", "worker image wheelhouse"),
    ]
    if everything:
        cache = build_cache()
        what = "build cache (images: rootfs, .debs, wheels; the REST catalog; the Rust worker)"
        found.append(_folder(cache, what))
        found.append(_private_engine())
        found += _scratch_folders(Path(tempfile.gettempdir()))
        found += _test_sessions(Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}")
        found += _engine_images()
    return [place for place in found if place.path is None or place.path.exists()]


def remove(found: list[Place], dry_run: bool = False) -> Iterator[Removal]:
    """Removes each place not kept, one at a time, and says what came of each as it goes."""
    for place in found:
        if place.kept_because or dry_run:
            yield Removal(place, "kept" if place.kept_because else "would go", place.kept_because)
            continue
        try:
            if place.image is not None:
                _docker("image", "rm", place.image)
            elif place.path is not None and place.path.is_dir() and not place.path.is_symlink():
                shutil.rmtree(place.path)
            elif place.path is not None:
                place.path.unlink()
        except (OSError, subprocess.SubprocessError) as exc:
            yield Removal(place, "failed", _failure(exc))
            continue
        yield Removal(place, "removed")


def _failure(exc: OSError | subprocess.SubprocessError) -> str:
    """One line: docker's own complaint, else the exception's."""
    said = exc.stderr if isinstance(exc, subprocess.CalledProcessError) and exc.stderr else str(exc)
    lines = said.strip().splitlines()
    return lines[-1] if lines else type(exc).__name__


def _folder(path: Path, what: str, kept_because: str | None = None) -> Place:
    return Place(what=what, path=path, size=_size(path), kept_because=kept_because)


def _size(path: Path) -> int:
    """Bytes on disk below `path` (a hard-linked file counted once; symlinks not followed)."""
    if not path.exists():
        return 0
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                stat = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total


def _private_engine() -> Place:
    """compose/docker-engine.sh's folder, kept while its dockerd runs (stop it: `make down`)."""
    folder = Path(os.environ.get("ICEBENCH_DOCKER_DIR") or DEFAULT_ENGINE_DIR)
    running = _engine_pid(folder)
    kept = f"its dockerd runs as pid {running}, stop it first with make down" if running else None
    return _folder(folder, "private Docker engine (data root with the icebench images)", kept)


def _engine_pid(folder: Path) -> int | None:
    try:
        pid = int((folder / "dockerd.pid").read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    return pid if pid and pid_alive(pid) else None


def _scratch_folders(temp: Path) -> list[Place]:
    found = []
    for path in sorted(temp.glob(f"{TEMP_PREFIX}*")):
        if match := SCRATCH_WITH_PID.fullmatch(path.name):
            in_use = pid_alive(int(match.group(1)))
        else:
            in_use = time.time() - path.lstat().st_mtime < ABANDONED_AFTER_S
        kept = "a running process may use it" if in_use else None
        found.append(_folder(path, "scratch in the temp folder", kept))
    return found


def _test_sessions(pytest_root: Path) -> list[Place]:
    """pytest's numbered session folders of icebench's test suite; kept while their session runs
    (pytest's `.lock` there holds its PID until it exits)."""
    found = []
    for session in sorted(pytest_root.glob("pytest-[0-9]*")):
        if not any(session.glob(f"{TEST_SESSION_FOLDER}[0-9]*")):
            continue  # another project's tests
        running = _lock_pid(session / ".lock")
        kept = f"its test session runs as pid {running}" if running else None
        found.append(_folder(session, "test-suite session folder", kept))
    return found


def _lock_pid(lock: Path) -> int | None:
    try:
        pid = int(lock.read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    return pid if pid and pid_alive(pid) else None


def _engine_images() -> list[Place]:
    """icebench/* images in the engine that answers (none: no docker CLI or no engine). Not the
    private engine's: they go with its folder, and only once it is stopped."""
    private = Path(os.environ.get("ICEBENCH_DOCKER_DIR") or DEFAULT_ENGINE_DIR) / "docker.sock"
    if os.environ.get("DOCKER_HOST") == f"unix://{private}":
        return []
    try:
        listed = _docker(
            "image", "ls", "--filter", f"reference={IMAGE_REFERENCE}", "--format", "{{.Repository}}:{{.Tag}}"
        )
    except (OSError, subprocess.SubprocessError):
        return []
    images = [line for line in listed.splitlines() if line and not line.endswith(":<none>")]
    return [Place(what="Docker image", image=image, size=_image_size(image)) for image in images]


def _image_size(image: str) -> int:
    try:
        return int(_docker("image", "inspect", "--format", "{{.Size}}", image).strip())
    except (OSError, subprocess.SubprocessError, ValueError):
        return 0


def _docker(*arguments: str) -> str:
    if shutil.which("docker") is None:
        raise FileNotFoundError("no docker CLI")
    done = subprocess.run(["docker", *arguments], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout
