"""Worker environments with other versions of a writer library (`--pyiceberg 0.9.1,0.12.0`), or with
the libraries of a writer that cannot share the main environment (`Writer.environment`: a fork of
pyiceberg, a client pinned to an older dlt).

An environment is a venv under `.icebench/envs/<name>` holding those requirements (and whatever of
their dependencies the main environment cannot satisfy), layered over the main environment by a
`.pth` file: everything else (pyarrow, numpy, the harness) is the very same, so a difference
between two versions' results is the library's. Created once, then cached; creation is one
`pip install`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import venv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.base.builds import BUILD_NOTE, build_tag, parse_source
from harness.base.checkout import REPO_ROOT
from harness.base.errors import IcebenchError

READY = ".icebench-ready"
INSTALL_TIMEOUT_S = 900.0


def env_name(requirements: Sequence[str]) -> str:
    """`pyiceberg-0.9.1` for ["pyiceberg==0.9.1"]; several requirements joined by `+`."""
    return "+".join(re.sub(r"[^\w.+-]+", "-", requirement) for requirement in requirements)


def library_env(library: str, version: str, root: Path) -> Path:
    """The python executable of an environment with `library==version`, or with `library` built
    from the source `version` names (harness/base/builds.py: one environment per digest of the
    source's tree), created if missing."""
    source = parse_source(version)
    if source is None:
        return requirements_env([f"{library}=={version}"], root)
    note = source.note()  # the tree's digest and commit: the same content committed again is another build
    name = f"{library}-src-{build_tag(note)}-{note['digest']}"
    return requirements_env([source.requirement(library)], root, name, {library: note})


def requirements_env(
    requirements: Sequence[str], root: Path, name: str | None = None, notes: dict[str, object] | None = None
) -> Path:
    """The python executable of an environment with these pip requirements, created if missing;
    `name` its folder's (default: the requirements'), `notes` what its source builds are (BUILD_NOTE)."""
    folder = root / (name or env_name(requirements))
    python = folder / "bin" / "python"
    if (folder / READY).is_file():
        _point_at_main(python)  # an env made by another checkout or venv of icebench
        return python
    venv.EnvBuilder(with_pip=False, clear=True, symlinks=True).create(folder)
    _point_at_main(python)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--disable-pip-version-check", *requirements],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise IcebenchError(f"cannot install {' '.join(requirements)} into {folder}: {last}")
    if notes:
        (folder / BUILD_NOTE).write_text(json.dumps(notes, indent=2) + "\n")
    (folder / READY).write_text("\n".join(requirements) + "\n")
    return python


def _point_at_main(python: Path) -> None:
    """After the env's own packages on sys.path: this main environment, then this harness (its
    `.pth`, rewritten when the env was made for another, which may be gone)."""
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    link = site_packages / "icebench-main.pth"
    wanted = f"{sysconfig.get_path('purelib')}\n{REPO_ROOT}\n"
    if not link.is_file() or link.read_text() != wanted:
        link.write_text(wanted)


def pinned_versions(requirements: Sequence[str]) -> dict[str, str]:
    """{"dlt": "1.20.0"} for ["dlt==1.20.0"] (and for "dlt[s3]==1.20.0"): what an environment will
    hold, before it exists."""
    pinned = (requirement.split("==", 1) for requirement in requirements if "==" in requirement)
    return {name.split("[", 1)[0].strip(): version.strip() for name, version in pinned}


def installed_version(python: Path, library: str) -> str:
    """`library`'s version as `python`'s environment holds it (a source build's with its origin)."""
    asked = f"from harness.base.builds import library_version; print(library_version({library!r}))"
    done = subprocess.run(
        [str(python), "-c", asked],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else "missing"


# Variants that are no Python library but a runtime a Python library loads: the Python library
# (in `Writer.libraries`) of the writers they change. Their workers run in the main environment.
JVM_RUNTIMES = {"iceberg-spark": "pyspark"}  # Iceberg's Spark runtime jar, from Maven Central
# --fileio pyarrow,fsspec,opendal: not a library's version but the FileIO pyiceberg writes through
# (harness/engines/fileio.py). It changes the writers whose only engine is pyiceberg; a writer with
# an engine of its own (polars, dlt, Spark) writes its data files its own way.
FILE_IO_AXIS = "fileio"
# Libraries a writer uses through another it names: pyiceberg-core is pyiceberg's Rust kernels
# (partition transforms), so --pyiceberg-core changes every writer that runs on pyiceberg.
USED_THROUGH = {"pyiceberg-core": "pyiceberg"}
PYICEBERG_ALONE = ("pyiceberg", "pyarrow")


@dataclass(frozen=True)
class Variant:
    """One version of one writer library (or runtime) the workers run with; the rest is the main
    environment."""

    library: str
    version: str

    @property
    def label(self) -> str:
        return f"{self.library} {self.version}"

    @property
    def on_jvm(self) -> bool:
        return self.library in JVM_RUNTIMES

    def changes(self, libraries: Sequence[str]) -> bool:
        """Whether a writer that uses these libraries runs differently in this variant."""
        if self.library == FILE_IO_AXIS:
            return tuple(libraries) == PYICEBERG_ALONE
        return JVM_RUNTIMES.get(self.library, USED_THROUGH.get(self.library, self.library)) in libraries


def variants(
    requested: dict[str, list[str]],
    file_ios: Sequence[str] = (),
    writers: dict[str, Sequence[str]] | None = None,
) -> list[Variant | None]:
    """Each requested version of each library in turn, then each FileIO; [None] (the main
    environment) when none. `writers` ({name: its libraries}): a variant that changes none of them
    is a one-line error (the flag would change nothing; an --iceberg-rust build would be for naught)."""
    found: list[Variant | None] = [Variant(lib, v) for lib, versions in requested.items() for v in versions]
    found += [Variant(FILE_IO_AXIS, name) for name in file_ios]
    for variant in found:
        if writers and variant and not any(variant.changes(libraries) for libraries in writers.values()):
            flag = "--fileio" if variant.library == FILE_IO_AXIS else f"--{variant.library}"
            raise IcebenchError(
                f"{flag} {variant.version}: changes none of the writers here ({', '.join(writers)})"
            )
    return found or [None]
