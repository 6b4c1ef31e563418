"""The Rust worker (`rust/`): the worker of the iceberg-rust writers, built by cargo into a cache
outside the repository and kept there under a digest of its sources, so a fresh clone (CI) with
unchanged sources builds nothing. `--iceberg-rust VERSION` builds a copy of `rust/` with the
iceberg crates pinned at VERSION, once, beside it; `--iceberg-rust PATH` (a checkout of the
iceberg-rust workspace) or `git+URL@REV` with the crates taken from there, every crate that asks for
them from crates.io patched to the same (`[patch.crates-io]`), rebuilt when the checkout changes.
The worker names such a build as it is (`0.10.1+dc01193.dirty`, build.rs): what ran.

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
import tomllib
from functools import cache
from pathlib import Path

from harness.base.builds import NOT_SOURCE, Source, build_tag, parse_source
from harness.base.checkout import REPO_ROOT
from harness.base.errors import IcebenchError, first_line

RUST_DIR = REPO_ROOT / "rust"
BINARY = "icebench-rust-worker"
LIBRARY = "iceberg-rust"  # its name on the version axis (--iceberg-rust) and in records
CACHE_VARIABLE = "ICEBENCH_CACHE"  # the build cache of the images and the REST catalog too
# Every iceberg crate rust/Cargo.toml pins, all at one version (they are released together).
PINNED = re.compile(r'^(?P<crate>iceberg(?:-[a-z-]+)?) = "=(?P<version>[^"]+)"$', re.M)
DESCRIBE_TIMEOUT_S = 30.0
BUILD_VARIABLE = "ICEBENCH_ICEBERG_BUILD"  # a checkout's commit, for build.rs to name the build by
# The cargo profile the worker is built with: `release` for benchmarks, or another that rust/Cargo.toml
# declares (`make test` builds `quick`: the same code, a fraction of the compile). Every record names it.
PROFILE_VARIABLE = "ICEBENCH_RUST_PROFILE"
RELEASE = "release"


def build_cache() -> Path:
    """icebench's build cache outside the repository (the images' and the Rust worker's): where
    cargo's target folder, the variants' sources and the built binaries go."""
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "icebench")


def target_dir() -> Path:
    """cargo's target folder: every build of the worker's, and `make lint-rust`'s clippy (there it
    reuses the build's build scripts and proc-macros)."""
    return build_cache() / "rust-target"


def profile() -> str:
    """The cargo profile to build and run: ICEBENCH_RUST_PROFILE, one rust/Cargo.toml declares."""
    name = os.environ.get(PROFILE_VARIABLE) or RELEASE
    declared = {RELEASE, *tomllib.loads(_manifest()).get("profile", {})}
    if name not in declared:
        raise IcebenchError(
            f"{PROFILE_VARIABLE}={name}: rust/Cargo.toml declares no such cargo profile "
            f"(it has {', '.join(sorted(declared))})"
        )
    return name


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
    source = parse_source(version, cargo=True)
    if source is None:
        return PINNED.sub(lambda match: f'{match["crate"]} = "={version}"', text)
    crates = {match["crate"]: _dependency(match["crate"], source) for match in PINNED.finditer(text)}
    patches = "".join(f"{crate} = {dependency}\n" for crate, dependency in crates.items())
    return PINNED.sub(lambda match: f"{match['crate']} = {crates[match['crate']]}", text) + (
        f"\n# The crates under them that ask crates.io for these get the same build.\n"
        f"[patch.crates-io]\n{patches}"
    )


def _dependency(crate: str, source: Source) -> str:
    """A cargo dependency on `crate` of a checkout (its folder found by name) or a git URL."""
    if source.kind == "vcs":
        url, _, reference = source.ref.removeprefix("git+").rpartition("@")
        if "/" not in url.partition("://")[2]:  # no @REV: that @ is the URL's user's (ssh://git@host/...)
            return f'{{ git = "{source.ref.removeprefix("git+")}" }}'
        kind = "rev" if re.fullmatch(r"[0-9a-f]{7,40}|refs/.+", reference) else "branch"
        return f'{{ git = "{url}", {kind} = "{reference}" }}'
    folder = _crate_folders(Path(source.ref)).get(crate)
    if folder is None:
        raise IcebenchError(f"{source.ref} has no crate {crate}: not a checkout of iceberg-rust")
    return f'{{ path = "{folder}" }}'


def _crate_folders(checkout: Path) -> dict[str, Path]:
    """Each crate of a checkout by its package name (a workspace keeps them in folders of its own)."""
    found: dict[str, Path] = {}
    for root, folders, files in os.walk(checkout):
        folders[:] = sorted(name for name in folders if name not in NOT_SOURCE)  # not target/, .git/
        if "Cargo.toml" in files:
            name = tomllib.loads((Path(root) / "Cargo.toml").read_text()).get("package", {}).get("name")
            if isinstance(name, str):
                found.setdefault(name, Path(root))
    return found


def _source(version: str | None) -> Source | None:
    return None if version is None else parse_source(version, cargo=True)


def source_digest(version: str | None = None) -> str:
    """What the binary is built from: the sources, and the iceberg version of a variant (a
    checkout's tree, a git URL's text)."""
    source = _source(version)
    digest = hashlib.sha256((source.digest() if source else version or "").encode())
    for path in _sources():
        digest.update(str(path.relative_to(RUST_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _label(version: str | None) -> str:
    source = _source(version)
    built = "pinned" if version is None else "iceberg-src" if source is not None else f"iceberg-{version}"
    cargo_profile = profile()
    return built if cargo_profile == RELEASE else f"{built}.{cargo_profile}"


def binary_path(version: str | None = None) -> Path:
    return build_cache() / "rust-bin" / f"{_label(version)}-{source_digest(version)}" / BINARY


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


def build(version: str | None = None, echo: bool = True) -> tuple[Path, float]:
    """The worker built (nothing to do when its sources are unchanged) and the seconds it took.
    `echo`: cargo's lines go to stderr as they come (`make rust-worker`); else to a log beside the
    binary, and the command says in one line what it builds, waits for and fails on."""
    path = binary_path(version)
    if path.is_file():
        return path, 0.0
    if shutil.which("cargo") is None:
        raise IcebenchError("cargo is not installed: the Rust worker needs a Rust toolchain (rustup.rs)")
    started = time.perf_counter()
    project = RUST_DIR if version is None else _variant_project(version)
    source = _source(version)
    # One target folder for every release: a variant rebuilds the iceberg crates and the worker,
    # not the ~500 crates they share (a lock keeps two harnesses from swapping binaries).
    target = target_dir()
    cargo_profile = profile()
    command = ["cargo", "build", "--profile", cargo_profile, "--manifest-path", str(project / "Cargo.toml")]
    command += ["--locked"] if version is None else []
    environment = {**os.environ, "CARGO_TARGET_DIR": str(target)}
    if source is not None and source.kind == "folder":  # a git source's commit is in Cargo.lock
        environment[BUILD_VARIABLE] = build_tag(source.note())
    target.mkdir(parents=True, exist_ok=True)
    what = f"iceberg-rust {'of ' if source else ''}{version}" if version else "the pinned crates"
    log_path = path.parent.with_name(f"{path.parent.name}.build.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock().open("w") as lock, log_path.open("w") as log:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                "waiting for another build of the Rust worker to finish (cargo, in this cache)",
                file=sys.stderr,
            )
            fcntl.flock(lock, fcntl.LOCK_EX)  # the build and the copy of its binary, one harness at a time
        if not echo:
            print(
                f"building the Rust worker with {what} (cargo, minutes; its log: {log_path})", file=sys.stderr
            )
        # cargo's own lines ("Compiling datafusion ...") are the progress of a build that takes minutes.
        with subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True) as cargo:
            assert cargo.stderr is not None
            errors = []
            for line in cargo.stderr:
                (sys.stderr if echo else log).write(line)
                if line.startswith("error"):
                    errors.append(line)
        if cargo.returncode != 0:
            why = first_line(errors[0]) if errors else f"cargo exited with {cargo.returncode}"
            raise IcebenchError(
                f"the Rust worker does not build with {what}: {why}"
                + ("" if echo else f" (cargo's log: {log_path})")
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{BINARY}.partial")
        shutil.copy2(target / cargo_profile / BINARY, partial)
        partial.replace(path)
    return path, time.perf_counter() - started


def _variant_project(version: str) -> Path:
    """A copy of rust/ with every iceberg crate at `version` (or from its source). Its Cargo.lock is
    rust/'s: cargo changes only what the new pins need, every other crate stays at its pinned version."""
    project = build_cache() / "rust-src" / f"{_label(version)}-{source_digest(version)}"
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
        sys.exit(
            "usage: python -m harness.services.rust_worker build [VERSION|CHECKOUT|GIT_URL] | target-dir"
        )
    version = arguments[1] if len(arguments) > 1 and arguments[1] else None
    try:
        path, seconds = build(version)
    except (IcebenchError, ValueError) as exc:  # a build that fails; a source that is none
        sys.exit(f"rust_worker: {exc}")
    sys.stderr.write(
        f"rust_worker: {path} ({'up to date' if not seconds else f'built in {seconds:.0f} s'})\n"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
