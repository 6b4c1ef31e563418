"""Results: one JSON object per run appended to results/<run-id>/runs.jsonl, plus environment.json."""

from __future__ import annotations

import json
import os
import platform
import secrets
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TypeVar

import psutil
from pydantic import BaseModel, ValidationError

from harness.errors import IcebenchError, first_error, warn
from harness.model import RunRecord
from harness.redaction import redact

Line = TypeVar("Line", bound=BaseModel)
LIBRARIES = ("icebench", "pyiceberg", "pyarrow", "numpy", "sqlalchemy")


class ScalePoint(BaseModel):
    batches: int
    write_s: float | None
    wall_s: float | None
    peak_memory_bytes: int | None
    peak_rss_bytes: int | None
    late_early_ratio: float | None
    status: str


class ScaleResult(BaseModel):
    writer: str
    scenario: str
    preset: str
    batch_rows: int
    points: list[ScalePoint]
    growth_exponent: float | None
    growth_class: str | None
    tail_exponent: float | None
    variant: str | None = None  # e.g. "pyiceberg 0.9.1"


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


def environment(isolation: str, settings: dict[str, object]) -> dict[str, object]:
    return {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "memory_bytes": psutil.virtual_memory().total,
        },
        "isolation": isolation,
        "versions": library_versions(),
        "settings": settings,
    }


class ResultsStore:
    """One folder per run id; records are appended as they finish, so a crash keeps what ran."""

    def __init__(self, root: Path, run_id: str | None = None) -> None:
        self.run_id = run_id or new_run_id()
        self.folder = root.resolve() / self.run_id  # absolute: workers may run elsewhere (containers)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.runs_path = self.folder / "runs.jsonl"

    def write_environment(self, env: dict[str, object]) -> None:
        (self.folder / "environment.json").write_text(redact(json.dumps(env, indent=2, default=str)))

    def append(self, record: RunRecord) -> None:
        append_line(self.runs_path, redact(record.model_dump_json()))

    def append_scale(self, result: ScaleResult) -> None:
        append_line(self.folder / "scale.jsonl", redact(result.model_dump_json()))

    def new_work_folder(self, name: str) -> tuple[int, Path]:
        """A fresh folder for one run's files, `<n>-<name>`: n counts the folder's runs, whichever
        runner made them (one per library variant, one per scale), so no run reuses another's."""
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
    """The records of runs.jsonl (a folder or the file); IcebenchError names a corrupt file."""
    runs_path = path / "runs.jsonl" if path.is_dir() else path
    return _read_lines(runs_path, RunRecord)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_scales(folder: Path) -> list[ScaleResult]:
    path = folder / "scale.jsonl"
    return _read_lines(path, ScaleResult) if path.is_file() else []


def _read_lines(path: Path, model: type[Line]) -> list[Line]:
    """Every line as a `model`. A last line cut short (a harness killed mid-write) is skipped
    with a warning; a bad line anywhere else means the file is corrupt."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise IcebenchError(f"results file {path} is unreadable: {exc}") from None
    lines = text.splitlines()
    torn = not text.endswith("\n")
    parsed = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                parsed.append(model.model_validate_json(line))
            except ValidationError as exc:
                if torn and number == len(lines):
                    warn(f"{path} line {number} was cut short; skipped")
                    break
                raise IcebenchError(
                    f"results file {path} is corrupt: line {number}: {first_error(exc)}"
                ) from None
    return parsed
