"""Baselines: the runs of one or more results folders, aggregated per run key, saved as JSON.

A baseline is what a user commits and gates later results against. Repeats of one key (a
matrix run repeated, or several folders) are folded into one aggregate: times as medians,
because one slow repeat on a noisy machine says little; peaks as maxima, because memory is
what gets a worker killed; correctness checks as failed when any repeat failed them.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.base.errors import IcebenchError, first_error
from harness.base.results import now_iso, read_calibration, read_environment, read_results_folder
from harness.model import MachineSpeed, Metric, RunKey, RunRecord, Status, metrics, run_key
from reports.fits import Fit, fits

# 2: run keys with isolation, cap and batch size, the writers' source hashes, fits computed from
# the points in runs.jsonl, every metric of the registry.
BASELINE_FORMAT = 2


class Aggregate(BaseModel):
    """What the runs of one key measured. The metrics of the registry (harness/model/__init__.py METRICS)
    are fields of their own, by name, so that adding a metric adds it here."""

    model_config = ConfigDict(extra="allow")
    key: RunKey  # without writer_source: the hashes are in writer_sources
    statuses: list[Status]  # one per run, in the order they ran
    writer_sources: list[str] = []  # of the writer modules the runs ran

    def value(self, name: str) -> float | None:
        found = (self.model_extra or {}).get(name)
        return None if found is None else float(found)


class RunAggregate(Aggregate):
    """The repeats of one run key."""

    repeats: int
    checks_passed: list[str] = []  # passed in every repeat that ran them
    checks_failed: dict[str, str | None] = {}  # failed in some repeat -> the first failure's reason


class ScaleAggregate(Aggregate):
    """The growth fit of one run key's points on the scale axis."""

    batches: list[int]  # the axis
    growth_class: str | None = None


class Baseline(BaseModel):
    format: int = BASELINE_FORMAT
    created_at: str
    sources: list[str]  # the results folders it came from
    versions: dict[str, str]  # library -> version(s) the workers ran with
    runs: dict[str, RunAggregate]  # run key text -> aggregate
    scales: dict[str, ScaleAggregate]  # run key text (less the axis) -> the fit's figures
    machine: MachineSpeed | None = None  # the calibration's medians; None: the folders have none


def aggregate(metric: Metric, values: Iterable[float | int | None]) -> float | int | None:
    """The repeats' values as the metric folds them: noisy times as medians, peaks as maxima."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return statistics.median(present) if metric.aggregate == "median" else max(present)


def _sources(records: Iterable[RunRecord]) -> list[str]:
    return sorted({r.writer_source for r in records if r.writer_source})


def _stored_key(record: RunRecord) -> RunKey:
    return run_key(record).model_copy(update={"writer_source": None})


def aggregate_runs(records: Sequence[RunRecord]) -> RunAggregate:
    """One key's repeats folded into one aggregate."""
    # A repeat that was killed or failed stops early: its numbers say nothing about the write
    # itself, so they count only when no repeat completed (its status is gated on its own).
    completed = [r for r in records if r.status == "ok"] or list(records)
    values = {m.name: aggregate(m, (getattr(r, m.name, None) for r in completed)) for m in metrics("run")}
    failed: dict[str, str | None] = {}
    seen: set[str] = set()
    for record in records:
        for check in record.verdict.checks if record.verdict else []:
            seen.add(check.name)
            if not check.passed:
                failed.setdefault(check.name, check.reason)
    return RunAggregate(
        key=_stored_key(records[0]),
        repeats=len(records),
        statuses=[r.status for r in records],
        writer_sources=_sources(records),
        checks_passed=sorted(seen - failed.keys()),
        checks_failed=dict(sorted(failed.items())),
        **values,
    )


def aggregate_fit(fit: Fit) -> ScaleAggregate:
    return ScaleAggregate(
        key=fit.key,
        statuses=[p.status for p in fit.points],
        writer_sources=fit.writer_sources,
        batches=fit.batch_counts,
        growth_class=fit.growth_class,
        **{m.name: getattr(fit, m.name, None) for m in metrics("fit")},
    )


def _read_folder(folder: Path) -> tuple[list[RunRecord], dict[str, str]]:
    """Runs (scale points included) and environment versions of one results folder, or one line naming it."""
    records = read_results_folder(folder)
    environment = read_environment(folder)
    return records, environment.versions if environment else {}


def _merge_versions(found: Iterable[dict[str, str]]) -> dict[str, str]:
    versions: defaultdict[str, set[str]] = defaultdict(set)
    for mapping in found:
        for library, value in mapping.items():
            versions[library].add(value)
    return {library: ", ".join(sorted(values)) for library, values in sorted(versions.items())}


def build_baseline(results_dirs: Sequence[Path]) -> Baseline:
    """Every run key of the folders aggregated, and the growth fit of every key's scale points."""
    if not results_dirs:
        raise IcebenchError("a baseline needs at least one results folder")
    records: list[RunRecord] = []
    environments: list[dict[str, str]] = []
    for folder in results_dirs:
        found, environment_versions = _read_folder(folder)
        records += found
        if not found:  # the environment is all that names the versions
            environments.append(environment_versions)
    baseline = baseline_of_records(records, [str(folder) for folder in results_dirs], environments)
    return baseline.model_copy(update={"machine": machine_speed(results_dirs)})


def machine_speed(results_dirs: Sequence[Path]) -> MachineSpeed | None:
    """The medians of the folders' calibration samples: the machine's speed while they ran."""
    samples = [sample for folder in results_dirs for sample in read_calibration(folder)]
    if not samples:
        return None
    return MachineSpeed(
        cpu_s=statistics.median(s.cpu_s for s in samples), wall_s=statistics.median(s.wall_s for s in samples)
    )


def baseline_of_records(
    records: Sequence[RunRecord], sources: list[str], environments: Sequence[dict[str, str]] = ()
) -> Baseline:
    """The records' run keys aggregated, and the growth fit of every key's scale points."""
    runs: defaultdict[str, list[RunRecord]] = defaultdict(list)
    points: list[RunRecord] = []
    for record in records:
        # The points of a scale fit are runs too, of growing sizes: the fit stands for them.
        if record.limit_rows is None:
            runs[run_key(record).text].append(record)
        else:
            points.append(record)
    scales = {fit.key.text: aggregate_fit(fit) for fit in fits(points)}
    return Baseline(
        created_at=now_iso(),
        sources=sources,
        versions=_merge_versions([*(r.versions for r in records), *environments]),
        runs={key: aggregate_runs(records) for key, records in sorted(runs.items())},
        scales=dict(sorted(scales.items())),
    )


def variant_labels(records: Sequence[RunRecord]) -> list[str]:
    """The variants of the records, in the order they first ran."""
    return list(dict.fromkeys(r.variant for r in records if r.variant is not None))


def of_variant(records: Sequence[RunRecord], label: str) -> list[RunRecord]:
    """The runs of one variant of a library axis (`dlt 1.31.0`, `dlt 1.23.0+dc01193`), with the
    variant left out of their keys: the same pair under two variants then has one key."""
    found = [r.model_copy(update={"variant": None}) for r in records if r.variant == label]
    if not found:
        ran = ", ".join(variant_labels(records)) or "none"
        raise IcebenchError(f"no runs of variant {label!r}; the variants that ran: {ran}")
    return found


def variant_baselines(results_dirs: Sequence[Path], base: str, current: str) -> tuple[Baseline, Baseline]:
    """The folders' runs of two variants, each as a baseline keyed without the variant."""
    records = [record for folder in results_dirs for record in _read_folder(folder)[0]]
    base_side, current_side = (
        baseline_of_records(of_variant(records, label), [f"{folder} [{label}]" for folder in results_dirs])
        for label in (base, current)
    )
    return base_side, current_side


def save_baseline(results_dirs: list[Path], path: Path) -> Baseline:
    baseline = build_baseline(results_dirs)
    if not baseline.runs and not baseline.scales:  # a gate against it would compare nothing
        raise IcebenchError(f"no runs to make a baseline of in {', '.join(map(str, results_dirs))}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(baseline.model_dump_json(indent=2) + "\n")
    return baseline


class _Format(BaseModel):
    format: int = 1


def load_baseline(path: Path) -> Baseline:
    try:
        text = path.read_text()
        found = _Format.model_validate_json(text).format
        if found != BASELINE_FORMAT:
            raise IcebenchError(
                f"baseline file {path} has format {found}, this icebench reads format {BASELINE_FORMAT}: "
                "record it again (icebench baseline save, make gate-baseline)"
            )
        return Baseline.model_validate_json(text)
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
    """The latest folder under the results root that holds results: run ids begin with their time, to
    the second; two runs begun in one second are told apart by when their results were last written."""
    folders = [f for f in root.iterdir() if _holds_results(f)] if root.is_dir() else []
    if not folders:
        raise IcebenchError(f"no results folder under {root}: name one, or run icebench matrix first")
    return max(folders, key=lambda folder: (folder.name[:15], (folder / "runs.jsonl").stat().st_mtime_ns))


def _holds_results(folder: Path) -> bool:
    return (folder / "runs.jsonl").is_file()
