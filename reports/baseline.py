"""Baselines: the runs of one or more results folders, aggregated per run key, saved as JSON.

A baseline is what a user commits and gates later results against. Repeats of one key (a
matrix run repeated, or several folders) are folded into one aggregate: times as medians,
because one slow repeat on a noisy machine says little; peaks as maxima, because memory is
what gets a worker killed; correctness checks as failed when any repeat failed them.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

from harness.errors import IcebenchError, first_error
from harness.growth import growth_class
from harness.model import RunRecord, Status
from harness.results import ScaleResult, now_iso, read_runs, read_scales

BASELINE_FORMAT = 1
KEY_SEPARATOR = "|"
# Metrics taken as the median of the repeats (noisy) and as their maximum (worst case wins).
MEDIAN_METRICS = ("wall_s", "write_s")
MAX_METRICS = (
    "peak_memory_bytes",
    "peak_rss_bytes",
    "snapshots_added",
    "data_files",
    "metadata_files",
    "metadata_bytes",
)


class RunAggregate(BaseModel):
    """The repeats of one scenario x writer x preset x stack."""

    repeats: int
    statuses: list[Status]  # one per repeat, in the order they ran
    wall_s: float | None = None  # median
    write_s: float | None = None  # median
    peak_memory_bytes: int | None = None  # max
    peak_rss_bytes: int | None = None  # max
    snapshots_added: int | None = None  # max
    data_files: int | None = None  # max
    metadata_files: int | None = None  # max
    metadata_bytes: int | None = None  # max
    checks_passed: list[str] = []  # passed in every repeat that ran them
    checks_failed: dict[str, str | None] = {}  # failed in some repeat -> the first failure's reason


class ScaleAggregate(BaseModel):
    """The `scale` fits of one scenario x writer x preset (usually one)."""

    fits: int
    statuses: list[str]  # every point of every fit
    batch_rows: list[int]
    growth_exponent: float | None = None  # median
    growth_class: str | None = None
    tail_exponent: float | None = None  # median
    longest_write_s: float | None = None  # the largest point's write time (median over fits)


class Baseline(BaseModel):
    format: int = BASELINE_FORMAT
    created_at: str
    sources: list[str]  # the results folders it came from
    versions: dict[str, str]  # library -> version(s) the workers ran with
    runs: dict[str, RunAggregate]  # run key -> aggregate
    scales: dict[str, ScaleAggregate]  # scale key -> aggregate


def run_key(record: RunRecord) -> str:
    """scenario|writer|preset|stack, and |variant for runs with another library version."""
    parts = (record.scenario, record.writer, record.preset, record.stack, record.variant)
    return KEY_SEPARATOR.join(part for part in parts if part)


def scale_key(result: ScaleResult) -> str:
    # Scale results carry no stack; the batch counts and sizes are in the aggregate.
    parts = (result.scenario, result.writer, result.preset, result.variant)
    return KEY_SEPARATOR.join(part for part in parts if part)


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _maximum(values: Iterable[int | None]) -> int | None:
    return max((v for v in values if v is not None), default=None)


def aggregate_runs(records: Sequence[RunRecord]) -> RunAggregate:
    """One key's repeats folded into one aggregate."""
    # A repeat that was killed or failed stops early: its numbers say nothing about the write
    # itself, so they count only when no repeat completed (its status is gated on its own).
    completed = [r for r in records if r.status == "ok"] or list(records)
    metrics: dict[str, float | int | None] = {
        name: _median(getattr(r, name) for r in completed) for name in MEDIAN_METRICS
    }
    metrics |= {name: _maximum(getattr(r, name) for r in completed) for name in MAX_METRICS}
    failed: dict[str, str | None] = {}
    seen: set[str] = set()
    for record in records:
        for check in record.verdict.checks if record.verdict else []:
            seen.add(check.name)
            if not check.passed:
                failed.setdefault(check.name, check.reason)
    return RunAggregate(
        repeats=len(records),
        statuses=[r.status for r in records],
        checks_passed=sorted(seen - failed.keys()),
        checks_failed=dict(sorted(failed.items())),
        **metrics,
    )


def aggregate_scales(results: Sequence[ScaleResult]) -> ScaleAggregate:
    exponent = _median(r.growth_exponent for r in results)
    return ScaleAggregate(
        fits=len(results),
        statuses=[p.status for r in results for p in r.points],
        batch_rows=sorted({r.batch_rows for r in results}),
        growth_exponent=exponent,
        growth_class=growth_class(exponent) if exponent is not None else None,
        tail_exponent=_median(r.tail_exponent for r in results),
        longest_write_s=_median(max((p.write_s or 0.0 for p in r.points), default=None) for r in results),
    )


def _read_folder(folder: Path) -> tuple[list[RunRecord], list[ScaleResult], dict[str, str]]:
    """Runs, scale fits and environment versions of one results folder, or one line naming it."""
    runs_path = folder / "runs.jsonl"
    if not folder.is_dir():
        raise IcebenchError(f"results folder {folder} does not exist")
    if not _holds_results(folder):
        raise IcebenchError(f"{folder} holds neither runs.jsonl nor scale.jsonl")
    scales = read_scales(folder)
    runs = read_runs(runs_path) if runs_path.is_file() else []
    # The points of a scale fit are runs too, of growing sizes: the fit stands for them, and they
    # are no repeats of the matrix runs of the same key beside them.
    runs = [record for record in runs if record.limit_rows is None]
    return runs, scales, _environment_versions(folder / "environment.json")


def _environment_versions(path: Path) -> dict[str, str]:
    try:
        versions = json.loads(path.read_text()).get("versions", {})
    except (OSError, ValueError, AttributeError):
        return {}  # environment.json is informative only; the runs carry their own versions
    return {str(k): str(v) for k, v in versions.items()} if isinstance(versions, dict) else {}


def _merge_versions(found: Iterable[dict[str, str]]) -> dict[str, str]:
    versions: defaultdict[str, set[str]] = defaultdict(set)
    for mapping in found:
        for library, value in mapping.items():
            versions[library].add(value)
    return {library: ", ".join(sorted(values)) for library, values in sorted(versions.items())}


def build_baseline(results_dirs: Sequence[Path]) -> Baseline:
    """Every run and scale fit of the folders, aggregated per key."""
    if not results_dirs:
        raise IcebenchError("a baseline needs at least one results folder")
    runs: defaultdict[str, list[RunRecord]] = defaultdict(list)
    scales: defaultdict[str, list[ScaleResult]] = defaultdict(list)
    versions: list[dict[str, str]] = []
    for folder in results_dirs:
        folder_runs, folder_scales, environment_versions = _read_folder(folder)
        for record in folder_runs:
            runs[run_key(record)].append(record)
            versions.append(record.versions)
        for result in folder_scales:
            scales[scale_key(result)].append(result)
        if not folder_runs:  # scale sessions: the environment is all that names the versions
            versions.append(environment_versions)
    return Baseline(
        created_at=now_iso(),
        sources=[str(folder) for folder in results_dirs],
        versions=_merge_versions(versions),
        runs={key: aggregate_runs(records) for key, records in sorted(runs.items())},
        scales={key: aggregate_scales(results) for key, results in sorted(scales.items())},
    )


def save_baseline(results_dirs: list[Path], path: Path) -> Baseline:
    baseline = build_baseline(results_dirs)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(baseline.model_dump_json(indent=2) + "\n")
    return baseline


def load_baseline(path: Path) -> Baseline:
    try:
        return Baseline.model_validate_json(path.read_text())
    except FileNotFoundError:
        raise IcebenchError(f"baseline file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise IcebenchError(f"baseline file {path} is unreadable: {first_error(exc)}") from None
    except ValidationError as exc:
        raise IcebenchError(f"baseline file {path} is not a baseline: {first_error(exc)}") from None


def baseline_of(path: Path) -> Baseline:
    """A saved baseline file, or a results folder aggregated on the spot."""
    if path.is_dir():
        return build_baseline([path])
    if path.is_file():
        return load_baseline(path)
    raise IcebenchError(f"{path} is neither a results folder nor a baseline file")


def status_text(statuses: Sequence[str]) -> str:
    """`ok` when every repeat agrees, else the count of each, e.g. `ok x2, oom x1`."""
    counts = Counter(statuses)
    if len(counts) <= 1:
        return statuses[0] if statuses else "-"
    return ", ".join(f"{status} x{count}" for status, count in counts.most_common())


def newest_results_folder(root: Path) -> Path:
    """The latest folder under the results root that holds results (run ids begin with their time)."""
    folders = [f for f in root.iterdir() if _holds_results(f)] if root.is_dir() else []
    if not folders:
        raise IcebenchError(f"no results folder under {root}: name one, or run icebench matrix first")
    return max(folders, key=lambda folder: folder.name)


def _holds_results(folder: Path) -> bool:
    return (folder / "runs.jsonl").is_file() or (folder / "scale.jsonl").is_file()
