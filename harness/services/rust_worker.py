"""The Rust worker (`rust/`): the worker of the iceberg-rust writers, built by cargo into a cache
outside the repository and kept there under a digest of its sources, so a fresh clone (CI) with
unchanged sources builds nothing. `--iceberg-rust VERSION` builds a copy of `rust/` with the
iceberg crates pinned at VERSION, once, beside it.

`python -m harness.services.rust_worker build [VERSION]` is what `make rust-worker` runs, `... target-dir`
prints the cargo target folder it builds in (`make lint-rust` checks there too).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

from harness.base.checkout import REPO_ROOT
from harness.base.errors import IcebenchError, first_line

RUST_DIR = REPO_ROOT / "rust"
BINARY = "icebench-rust-worker"
LIBRARY = "iceberg-rust"  # its name on the version axis (--iceberg-rust) and in records
CACHE_VARIABLE = "ICEBENCH_CACHE"  # the build cache of the images and the REST catalog too
# Every iceberg crate rust/Cargo.toml pins, all at one version (they are released together).
PINNED = re.compile(r'^(?P<crate>iceberg(?:-[a-z-]+)?) = "=(?P<version>[^"]+)"$', re.M)
DESCRIBE_TIMEOUT_S = 30.0


def build_cache() -> Path:
    """icebench's build cache outside the repository (the images' and the Rust worker's): where
    cargo's target folder, the variants' sources and the built binaries go."""
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "icebench")


def target_dir() -> Path:
    """cargo's target folder: every build of the worker's, and `make lint-rust`'s clippy (there it
    reuses the build's build scripts and proc-macros)."""
    return build_cache() / "rust-target"


def pinned_version() -> str:
    """The iceberg crate's version `rust/Cargo.toml` pins."""
    versions = {match["version"] for match in PINNED.finditer(_manifest())}
    if len(versions) != 1:
        raise IcebenchError(
            f"{RUST_DIR / 'Cargo.toml'} must pin every iceberg crate at one version, found {versions}"
        )
    return versions.pop()


def _sources() -> list[Path]:
    files = [RUST_DIR / "Cargo.toml", RUST_DIR / "Cargo.lock", RUST_DIR / "build.rs"]
    return files + sorted((RUST_DIR / "src").rglob("*.rs"))


def _manifest(version: str | None = None) -> str:
    text = (RUST_DIR / "Cargo.toml").read_text()
    if version is None:
        return text
    return PINNED.sub(lambda match: f'{match["crate"]} = "={version}"', text)


def source_digest(version: str | None = None) -> str:
    """What the binary is built from: the sources, and the iceberg version of a variant."""
    digest = hashlib.sha256((version or "").encode())
    for path in _sources():
        digest.update(str(path.relative_to(RUST_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def binary_path(version: str | None = None) -> Path:
    label = f"iceberg-{version}" if version else "pinned"
    return build_cache() / "rust-bin" / f"{label}-{source_digest(version)}" / BINARY


def worker_binary(version: str | None = None) -> Path:
    """The built worker, or a one-line error saying how to build it. A build under way (`make
    test` starts one in the background) is waited for."""
    path = binary_path(version)
    if not path.is_file():
        wait_for_builds()
    if not path.is_file():
        # The command first: the verdict's column shows a reason's first ~60 characters.
        how = (
            "`make bench RUST=1` builds it first (or `make rust-worker` alone; cargo, ~18 min the "
            "first time on 2 cores)"
            if version is None
            else f"`make rust-worker ICEBERG_RUST={version}` builds it"
        )
        raise IcebenchError(f"the Rust worker is not built: {how}")
    return path


def _build_lock() -> Path:
    return target_dir() / ".icebench-build.lock"


def wait_for_builds() -> None:
    """Until no harness builds a worker (each holds the build lock while cargo runs)."""
    if not _build_lock().is_file():
        return
    with _build_lock().open() as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)


def build(version: str | None = None) -> tuple[Path, float]:
    """The worker built (nothing to do when its sources are unchanged) and the seconds it took."""
    path = binary_path(version)
    if path.is_file():
        return path, 0.0
    if shutil.which("cargo") is None:
        raise IcebenchError("cargo is not installed: the Rust worker needs a Rust toolchain (rustup.rs)")
    started = time.perf_counter()
    project = RUST_DIR if version is None else _variant_project(version)
    # One target folder for every release: a variant rebuilds the iceberg crates and the worker,
    # not the ~500 crates they share (a lock keeps two harnesses from swapping binaries).
    target = target_dir()
    command = ["cargo", "build", "--release", "--manifest-path", str(project / "Cargo.toml")]
    command += ["--locked"] if version is None else []
    environment = {**os.environ, "CARGO_TARGET_DIR": str(target)}
    target.mkdir(parents=True, exist_ok=True)
    with _build_lock().open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the build and the copy of its binary, one harness at a time
        # cargo's own lines ("Compiling datafusion ...") are the progress of a build that takes minutes.
        with subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True) as cargo:
            assert cargo.stderr is not None
            errors = []
            for line in cargo.stderr:
                sys.stderr.write(line)
                if line.startswith("error"):
                    errors.append(line)
        if cargo.returncode != 0:
            what = f"iceberg-rust {version}" if version else "the pinned crates"
            why = first_line(errors[0]) if errors else f"cargo exited with {cargo.returncode}"
            raise IcebenchError(f"the Rust worker does not build with {what}: {why}")
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{BINARY}.partial")
        shutil.copy2(target / "release" / BINARY, partial)
        partial.replace(path)
    return path, time.perf_counter() - started


def _variant_project(version: str) -> Path:
    """A copy of rust/ with every iceberg crate at `version`. Its Cargo.lock is rust/'s: cargo
    changes only what the new pins need, every other crate stays at its pinned version."""
    project = build_cache() / "rust-src" / f"iceberg-{version}"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(RUST_DIR, project, ignore=shutil.ignore_patterns("target"))
    (project / "Cargo.toml").write_text(_manifest(version))
    return project


@cache
def describe(binary: Path) -> dict[str, dict[str, object]]:
    """What the built worker says of itself: its writers' operations and the crates' versions."""
    done = subprocess.run(
        [str(binary), "--describe"], capture_output=True, text=True, timeout=DESCRIBE_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise IcebenchError(f"{binary} --describe failed: {first_line(done.stderr)}")
    return json.loads(done.stdout)


def main(arguments: list[str]) -> None:
    if arguments == ["target-dir"]:
        print(target_dir())
        return
    if not arguments or arguments[0] != "build":
        sys.exit("usage: python -m harness.services.rust_worker build [ICEBERG_RUST_VERSION] | target-dir")
    version = arguments[1] if len(arguments) > 1 and arguments[1] else None
    try:
        path, seconds = build(version)
    except IcebenchError as exc:
        sys.exit(f"rust_worker: {exc}")
    sys.stderr.write(
        f"rust_worker: {path} ({'up to date' if not seconds else f'built in {seconds:.0f} s'})\n"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
