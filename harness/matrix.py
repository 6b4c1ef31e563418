"""Many runs: the scenario x writer x preset matrix, and the batch-count scale of one writer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from generators.presets import get_preset
from harness.caps import parse_size
from harness.datasets import DAMAGED_SETS, DataCache
from harness.envs import Variant, variants
from harness.errors import IcebenchError
from harness.growth import growth_class, growth_exponent, tail_exponent
from harness.model import RunRecord
from harness.results import ResultsStore, ScalePoint, ScaleResult
from harness.runner import Runner, RunPlan
from harness.settings import Settings, read_toml
from harness.source import ParquetSource
from harness.stacks import Stack
from harness.writers import get_writer, writers
from reports.summary import scale_table, summary_tables
from scenarios import get_scenario, scenarios
from scenarios.base import DataSets


def comma_list(text: str) -> list[str]:
    """Names or versions as the command line and TOML give them: `a, b,,c` is a, b and c."""
    return [item.strip() for item in text.split(",") if item.strip()]


class MatrixConfig(BaseModel):
    """The `[matrix]` table of a config file; empty lists mean all."""

    model_config = ConfigDict(extra="forbid")
    presets: list[str] = Field(default_factory=lambda: ["small"])
    scenarios: list[str] = Field(default_factory=list)
    writers: list[str] = Field(default_factory=list)
    repeat: int = Field(1, ge=1, description="runs of each pair; gates compare medians")
    # After the matrix, in the same results folder: the batch-count scale of these writers (append).
    scale_writers: list[str] = Field(default_factory=list)
    scale_batches: list[int] = Field(default_factory=lambda: [50, 100, 200])
    scale_batch_rows: int = Field(500, ge=1, description="at most; fewer when the preset is too small")

    @field_validator("presets", "scenarios", "writers", "scale_writers", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return comma_list(value) if isinstance(value, str) else value

    def resolved(self) -> MatrixConfig:
        """Every name checked (one-line error for an unknown one), defaults filled in."""
        for name in self.presets:
            get_preset(name)
        for name in self.scenarios:
            get_scenario(name)
        for name in [*self.writers, *self.scale_writers]:
            get_writer(name)
        return MatrixConfig(
            repeat=self.repeat,
            scale_writers=self.scale_writers,
            scale_batches=self.scale_batches,
            scale_batch_rows=self.scale_batch_rows,
            presets=self.presets,
            scenarios=self.scenarios or [name for name, s in scenarios().items() if s.in_default_matrix],
            writers=self.writers or [name for name, w in writers().items() if w.in_default_matrix],
        )


def progress_bar(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


@contextmanager
def generation_progress(console: Console) -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    with progress_bar(console) as progress:

        def factory(description: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(description, total=total)
            return lambda rows: progress.advance(task, rows)

        yield factory


def prepare_data(settings: Settings, preset_name: str, set_names: list[str], console: Console) -> DataSets:
    cache = DataCache(settings.data_dir, settings.seed, settings.update_ratio, settings.insert_ratio)
    with generation_progress(console) as factory:
        sets = cache.ensure(get_preset(preset_name), set_names, factory)
    for name, data in sets.items():  # footers and schemas, before any table is touched
        if name not in DAMAGED_SETS:  # broken on purpose: their workers must meet the damage
            ParquetSource.open(data.directory, batch_rows=1)
    return sets


def run_matrix(
    settings: Settings, config: MatrixConfig, store: ResultsStore, stack: Stack, console: Console
) -> list[RunRecord]:
    config = config.resolved()
    records: list[RunRecord] = []
    for variant in variants(settings.library_versions):
        records += _run_matrix_once(settings, config, Runner(settings, store, stack, variant), console)
    console.print(*summary_tables(records, title=f"icebench matrix {store.run_id}"))
    if config.scale_writers:
        preset = config.presets[0]
        rows = prepare_data(settings, preset, ["base"], console)["base"].manifest.rows
        run_scales(
            settings,
            config.scale_writers,
            scenario="append",
            preset=preset,
            batch_counts=config.scale_batches,
            batch_rows=min(config.scale_batch_rows, rows // max(config.scale_batches)),
            store=store,
            stack=stack,
            console=console,
        )
    return records


def run_scales(
    settings: Settings, writer_names: list[str], *, console: Console, **scale: Any
) -> list[ScaleResult]:
    """run_scale() for each writer and each library variant, each fit's table printed."""
    results = []
    for writer in writer_names:
        for variant in variants(settings.library_versions):
            result = run_scale(settings, writer=writer, console=console, variant=variant, **scale)
            console.print(scale_table(result))
            results.append(result)
    return results


def _run_matrix_once(
    settings: Settings, config: MatrixConfig, runner: Runner, console: Console
) -> list[RunRecord]:
    """Every preset x scenario x writer (x repeat) with one runner, i.e. one library variant."""
    cap = parse_size(settings.memory)
    needed = sorted({s for name in config.scenarios for s in get_scenario(name)().needs})
    records: list[RunRecord] = []
    label = f" [{runner.variant.label}]" if runner.variant else ""
    for preset in config.presets:
        sets = prepare_data(settings, preset, needed, console)
        plans = [  # whole rounds one after the other, so slow spells spread over every pair
            RunPlan(scenario, writer, preset, sets, settings.batch_rows, cap, repeat=repeat)
            for repeat in range(config.repeat)
            for scenario in config.scenarios
            for writer in config.writers
        ]
        with progress_bar(console) as progress:
            task = progress.add_task(f"matrix {preset}{label}", total=len(plans))
            for plan in plans:
                progress.update(task, description=f"{preset}: {plan.scenario} x {plan.writer}")
                record = runner.run(plan)
                records.append(record)
                progress.console.print(
                    f"  {plan.scenario:<24} {plan.writer:<30} {record.status:<11} {_verdict_word(record)}"
                )
                progress.advance(task)
    return records


def _verdict_word(record: RunRecord) -> str:
    if record.verdict is None:
        return ""
    return "pass" if record.verdict.passed else f"FAIL ({', '.join(c.name for c in record.verdict.failed)})"


def run_scale(
    settings: Settings,
    *,
    writer: str,
    scenario: str,
    preset: str,
    batch_counts: list[int],
    batch_rows: int | None,
    store: ResultsStore,
    stack: Stack,
    console: Console,
    variant: Variant | None = None,
) -> ScaleResult:
    """Same batch size, more batches: total write time vs batch count on log-log axes."""
    get_writer(writer)
    scenario_obj = get_scenario(scenario)()
    sets = prepare_data(settings, preset, list(scenario_obj.needs), console)
    rows = sets[scenario_obj.source_set].manifest.rows
    batch_rows = batch_rows or rows // max(batch_counts)
    if not scenario_obj.accepts_row_limit:
        raise IcebenchError(
            f"scale feeds prefixes of a set; scenario {scenario} needs its whole set (use append)"
        )
    if batch_rows < 1 or batch_rows * max(batch_counts) > rows:
        raise IcebenchError(
            f"{max(batch_counts)} batches of {batch_rows} rows need more than the {rows} rows "
            f"of preset {preset}"
        )
    runner = Runner(settings, store, stack, variant)
    cap = parse_size(settings.memory)
    points = []
    with progress_bar(console) as progress:
        task = progress.add_task(f"scale {writer}", total=len(batch_counts))
        for count in sorted(batch_counts):
            record = runner.run(
                RunPlan(scenario, writer, preset, sets, batch_rows, cap, limit_rows=count * batch_rows)
            )
            points.append(
                ScalePoint(
                    batches=count,
                    write_s=record.write_s,
                    wall_s=record.wall_s,
                    peak_memory_bytes=record.peak_memory_bytes,
                    peak_rss_bytes=record.peak_rss_bytes,
                    late_early_ratio=record.late_early_ratio,
                    status=record.status,
                )
            )
            progress.console.print(
                f"  {count:>5} batches: write {record.write_s or 0:.2f} s, "
                f"{record.status}, {_verdict_word(record)}"
            )
            progress.advance(task)
    good = [p for p in points if p.status == "ok" and p.write_s]
    counts, totals = [p.batches for p in good], [p.write_s or 0.0 for p in good]
    fits = len(set(counts)) >= 2  # failed points are shown, never fitted
    exponent = growth_exponent(counts, totals) if fits else None
    result = ScaleResult(
        writer=writer,
        scenario=scenario,
        preset=preset,
        batch_rows=batch_rows,
        points=points,
        growth_exponent=exponent,
        growth_class=growth_class(exponent) if exponent is not None else None,
        tail_exponent=tail_exponent(counts, totals) if fits else None,
        variant=variant.label if variant else None,
    )
    store.append_scale(result)
    return result


def load_matrix_config(path: Path | None) -> MatrixConfig:
    if path is None:
        return MatrixConfig()
    try:
        return MatrixConfig.model_validate(read_toml(path).get("matrix", {}))
    except ValueError as exc:
        raise IcebenchError(
            f"config file {path}: invalid [matrix] table: {str(exc).splitlines()[1:3]}"
        ) from None
