"""Results: one JSON object per run appended to results/<run-id>/runs.jsonl, plus environment.json."""

from __future__ import annotations

import os
import platform
import secrets
import subprocess
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

import psutil
from pydantic import BaseModel, ConfigDict, ValidationError

from harness.base.checkout import REPO_ROOT
from harness.base.errors import IcebenchError, first_error, one_line, warn
from harness.base.redaction import redact
from harness.model import (
    RESULTS_SCHEMA_VERSION,
    UNVERSIONED_SCHEMA,
    Environment,
    GitState,
    Machine,
    MachineSpeed,
    RunRecord,
    WorkerResult,
)

LIBRARIES = ("icebench", "pyiceberg", "pyarrow", "numpy", "sqlalchemy")
CHECKOUT = REPO_ROOT  # the icebench checkout this code runs from


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def library_versions() -> dict[str, str]:
    found = {}
    for library in LIBRARIES:
        try:
            found[library] = version(library)
        except PackageNotFoundError:
            found[library] = "missing"
    return found


def version_text() -> str:
    """`icebench 0.1.0, commit 26d4569fbf09`: the package's version and, run from a checkout, its
    commit (`(modified)` when tracked files differ from it)."""
    git = git_state(CHECKOUT)
    return f"icebench {library_versions()['icebench']}" + (f", commit {git.text}" if git else "")


def environment(isolation: str, settings: dict[str, Any]) -> Environment:
    return Environment(
        created_at=now_iso(),
        machine=Machine(
            platform=platform.platform(),
            python=platform.python_version(),
            cpus=os.cpu_count(),
            memory_bytes=psutil.virtual_memory().total,
        ),
        isolation=isolation,
        versions=library_versions(),
        settings=settings,
        icebench_git=git_state(CHECKOUT),
    )


def git_state(checkout: Path) -> GitState | None:
    """HEAD of the git checkout at `checkout`, and whether tracked files differ from it; None when
    it is no checkout of its own (an installed copy) or git is missing: informative, never fatal."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(checkout), *args], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != checkout.resolve():
            return None  # the code sits inside some other repository
        return GitState(
            commit=git("rev-parse", "HEAD"), dirty=bool(git("status", "--porcelain", "--untracked-files=no"))
        )
    except (OSError, subprocess.SubprocessError):
        return None


CALIBRATION_FILE = "calibration.jsonl"


def read_calibration(folder: Path) -> list[MachineSpeed]:
    """The machine's speed samples of a results folder; none where it has no file (results made
    before it, or by a workload that does not calibrate), and a bad line is left out: informative,
    as the environment is, and the gate says when it has none to use."""
    try:
        lines = (folder / CALIBRATION_FILE).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for line in lines:
        try:
            found.append(MachineSpeed.model_validate_json(line))
        except ValidationError:
            continue
    return found


def read_environment(folder: Path) -> Environment | None:
    """environment.json of a results folder; None when absent or unreadable (it is informative only)."""
    try:
        return Environment.model_validate_json((folder / "environment.json").read_text())
    except (OSError, UnicodeDecodeError, ValidationError):
        return None


class ResultsStore:
    """One folder per run id; records are appended as they finish, so a crash keeps what ran."""

    def __init__(self, root: Path, run_id: str | None = None) -> None:
        self.run_id = run_id or new_run_id()
        self.folder = root.resolve() / self.run_id  # absolute: workers may run elsewhere (containers)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.runs_path = self.folder / "runs.jsonl"
        self.unwritten = 0  # records append could not write (a full disk): said, and counted

    def write_environment(self, env: Environment) -> None:
        (self.folder / "environment.json").write_text(redact(env.model_dump_json(indent=2)))

    def append(self, record: RunRecord) -> None:
        """The record added to runs.jsonl; one that cannot be (a full disk) is said in one line
        with its outcome and counted in `unwritten`, and the runs go on."""
        try:
            append_line(self.runs_path, redact(record.model_dump_json()))
        except OSError as exc:
            self.unwritten += 1
            outcome = (
                f"{record.status}: {record.error}"
                if record.verdict is None
                else "PASS"
                if record.verdict.passed
                else "FAIL " + ", ".join(check.name for check in record.verdict.failed)
            )
            warn(
                f"run {record.scenario} x {record.writer}: its record could not be written to "
                f"{self.runs_path} ({one_line(exc)}); it was {outcome}"
            )

    def append_calibration(self, speed: MachineSpeed) -> None:
        """A sample of the machine's speed, beside the runs it was taken among."""
        try:
            append_line(self.folder / CALIBRATION_FILE, speed.model_dump_json())
        except OSError as exc:
            warn(f"the machine's calibration could not be written to {self.folder}: {one_line(exc)}")

    def new_work_folder(self, name: str) -> tuple[int, Path]:
        """A fresh folder for one run's files, `<n>-<name>`: n counts the folder's runs, whichever
        runner made them (one per library variant), so no run reuses another's."""
        work = self.folder / "work"
        work.mkdir(parents=True, exist_ok=True)
        number = sum(1 for _ in work.iterdir()) + 1
        path = work / f"{number:03d}-{name}"
        path.mkdir()
        return number, path


def append_line(path: Path, line: str) -> None:
    """One line appended whole or not at all: a write that fails (a full disk) is cut back off,
    so the file never ends in half a record."""
    data = (line + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def read_runs(path: Path) -> list[RunRecord]:
    """The records of runs.jsonl (a folder or the file). A last line cut short (a harness killed
    mid-write) is skipped with a warning; a bad line anywhere else, or one of a newer schema than
    this icebench knows, is an IcebenchError naming the file."""
    runs_path = path / "runs.jsonl" if path.is_dir() else path
    try:
        text = runs_path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise IcebenchError(f"results file {runs_path} is unreadable: {exc}") from None
    lines = text.splitlines()
    torn = not text.endswith("\n")
    parsed = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                parsed.append(_record(line))
            except ValidationError as exc:
                if torn and number == len(lines):
                    warn(f"{runs_path} line {number} was cut short; skipped")
                    break
                raise IcebenchError(
                    f"results file {runs_path} is corrupt: line {number}: {first_error(exc)}"
                ) from None
            except NewerSchema as exc:
                raise IcebenchError(f"results file {runs_path} line {number}: {exc}") from None
    return parsed


def read_results_folder(folder: Path) -> list[RunRecord]:
    """The runs of a results folder that a command reads (summary, report, baseline, gate); one
    line when it is missing or holds none (an empty runs.jsonl would be a report of nothing)."""
    if not folder.is_dir():
        raise IcebenchError(f"results folder {folder} does not exist")
    if not (folder / "runs.jsonl").is_file():
        raise IcebenchError(f"{folder} holds no runs.jsonl")
    records = read_runs(folder)
    if not records:
        raise IcebenchError(f"{folder / 'runs.jsonl'} holds no runs: nothing to read")
    return records


class NewerSchema(Exception):
    pass


def _record(line: str) -> RunRecord:
    fields = RawLine.model_validate_json(line).model_extra or {}
    version = fields.setdefault("schema_version", UNVERSIONED_SCHEMA)
    if isinstance(version, int) and version > RESULTS_SCHEMA_VERSION:
        raise NewerSchema(
            f"schema version {version} is newer than this icebench reads ({RESULTS_SCHEMA_VERSION}): "
            "read it with the icebench that wrote it, or a newer one"
        )
    return RunRecord.model_validate(fields)


class RawLine(BaseModel):
    """A results line as JSON: a JSON object whatever its fields (checked by RunRecord after)."""

    model_config = ConfigDict(extra="allow")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


Report = TypeVar("Report", bound=WorkerResult)


def write_whole(path: Path, text: str) -> None:
    """A report written beside and renamed into place: the harness reads a whole one or none. A
    write that fails (a full disk) leaves neither, and raises."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text)
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise


def read_report(path: Path, model: type[Report]) -> Report | None:
    """What a worker reported (its result, or a fault scenario's kill note); None when it wrote
    nothing readable (it died first, or its disk was full): its exit code and output then tell."""
    try:
        return model.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None
