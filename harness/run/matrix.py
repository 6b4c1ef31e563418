"""Many runs: the scenario x writer x preset matrix, and its scale axis (batch counts).

Nothing here prints: the caller hears of progress through MatrixEvents (the CLI draws progress
bars) and renders the records it gets back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from generators.datasets import DAMAGED_SETS, DataCache
from generators.events import events_schema
from generators.presets import get_preset
from generators.schema import wide_schema
from generators.source import ParquetSource
from generators.your_changes import YOUR_SETS, sets_of_yours
from harness.base.caps import parse_size
from harness.base.errors import IcebenchError
from harness.base.layout import check_layout, parse_layout
from harness.base.results import ResultsStore
from harness.base.settings import Settings, read_table
from harness.engines.writers import get_writer, writers
from harness.model import RunRecord, TableLayout
from harness.run.find_cap import find_caps
from harness.run.runner import Runner, RunPlan
from harness.services.envs import variants
from harness.services.stacks import Stack
from scenarios import get_scenario, scenarios
from scenarios.base import DataSets

# description, total -> advance(amount): one progress bar
ProgressFactory = Callable[[str, int], Callable[[int], None]]
DEFAULT_SCALE_BATCHES = [50, 100, 200]


def default_writers() -> list[str]:
    """A matrix's writers when none are named: those that declare themselves in it."""
    return [name for name, writer in writers().items() if writer.in_default_matrix]


def default_scenarios() -> list[str]:
    """A matrix's scenarios when none are named."""
    return [name for name, scenario in scenarios().items() if scenario.in_default_matrix]


def comma_list(text: str) -> list[str]:
    """Names or versions as the command line and TOML give them: `a, b,,c` is a, b and c."""
    return [item.strip() for item in text.split(",") if item.strip()]


def comma_separated(value: object) -> object:
    """A config list given as one `a,b` string (a flag, an environment variable) made a list."""
    return comma_list(value) if isinstance(value, str) else value


class MatrixConfig(BaseModel):
    """The `[matrix]` table of a config file; empty lists mean all."""

    model_config = ConfigDict(extra="forbid")
    presets: list[str] = Field(default_factory=lambda: ["small"])
    scenarios: list[str] = Field(default_factory=list)
    writers: list[str] = Field(default_factory=list)
    repeat: int = Field(1, ge=1, le=1000, description="runs of each pair; gates compare medians")
    # The scale axis: the same batch size at each of these batch counts (prefixes of the set), for
    # the scenarios of the matrix that take a prefix (append). `scale_batches` is its former name.
    batches: list[int] = Field(
        default_factory=list, validation_alias=AliasChoices("batches", "scale_batches")
    )
    # The writers on the axis; empty: the matrix's. Naming some (--scale) asks for the axis, by
    # default over 50, 100 and 200 batches.
    scale_writers: list[str] = Field(default_factory=list)
    scale_batch_rows: int | None = Field(
        500, ge=1, description="rows per batch on the axis, at most (None: the set over the largest count)"
    )
    whole_set: bool = Field(
        True, description="each pair also on its whole set (icebench scale: only the axis)"
    )
    # The layout axis (harness/base/layout.py): a table per partitioning ("" / "none": unpartitioned),
    # each with the same sort order and table properties.
    partitions: list[str] = Field(default_factory=lambda: [""])
    sort: str = ""
    table_properties: list[str] = Field(default_factory=list)
    # The cap axis: each pair under each cap (empty: the settings' one cap).
    memory: list[str] = Field(default_factory=list)
    # Bisect the smallest cap each pair survives (harness/run/find_cap.py), below the largest cap.
    find_cap: bool = False

    _split = field_validator("presets", "scenarios", "writers", "scale_writers", "memory", mode="before")(
        comma_separated
    )

    @field_validator("memory")
    @classmethod
    def _sizes(cls, value: list[str]) -> list[str]:
        for size in value:
            parse_size(size)
        return value

    def layouts(self) -> list[TableLayout]:
        """The tables each pair runs on, one per partitioning (one-line error for a bad spelling)."""
        return list(
            dict.fromkeys(
                parse_layout(spec, self.sort, self.table_properties) for spec in self.partitions or [""]
            )
        )

    def caps(self, settings: Settings) -> list[int]:
        """The caps each pair runs under, smallest first."""
        return sorted({parse_size(size) for size in self.memory or [settings.memory]})

    @field_validator("batches")
    @classmethod
    def _counts(cls, value: list[int]) -> list[int]:
        if value and (len(set(value)) < 2 or min(value) < 1):
            raise ValueError("give at least two different positive batch counts, e.g. [50, 100, 200]")
        return sorted(set(value))

    def resolved(self) -> MatrixConfig:
        """Every name checked (one-line error for an unknown one), defaults filled in."""
        for name in self.presets:
            get_preset(name)
        for name in self.scenarios:
            get_scenario(name)
        for name in [*self.writers, *self.scale_writers]:
            get_writer(name)
        chosen_writers = self.writers or default_writers()
        batches = self.batches or (DEFAULT_SCALE_BATCHES if self.scale_writers else [])
        return self.model_copy(
            update={
                "scenarios": self.scenarios or default_scenarios(),
                "writers": chosen_writers,
                "batches": batches,
                "scale_writers": (self.scale_writers or chosen_writers) if batches else [],
            }
        )

    def axis_scenarios(self) -> list[str]:
        """The scenarios of the matrix that take a prefix of their set: those on the axis."""
        if not self.batches:
            return []
        taking = [name for name in self.scenarios if get_scenario(name).accepts_row_limit]
        if not taking:
            raise IcebenchError(
                f"the batches axis feeds prefixes of a set; scenario {', '.join(self.scenarios)} needs "
                "its whole set (use append)"
            )
        return taking


class MatrixEvents:
    """What a matrix reports as it goes. This one tells nobody; the CLI's draws progress bars."""

    @contextmanager
    def generating(self) -> Iterator[ProgressFactory]:
        """While data sets are generated: a progress bar per set."""
        yield lambda description, total: lambda amount: None

    @contextmanager
    def stage(self, description: str, total: int) -> Iterator[None]:
        """Around `total` runs of one preset (and library variant)."""
        yield

    def run_started(self, plan: RunPlan) -> None:
        pass

    def run_progress(self, fed: int, rows: int) -> None:
        """Within a run: its worker's source has handed `fed` of its `rows` to the writer."""

    def run_finished(self, plan: RunPlan, record: RunRecord) -> None:
        pass


def prepare_data(
    settings: Settings, preset_name: str, set_names: list[str], events: MatrixEvents | None = None
) -> DataSets:
    cache = DataCache(settings.data_dir, settings.seed, settings.update_ratio, settings.insert_ratio)
    preset = get_preset(preset_name)
    with (events or MatrixEvents()).generating() as factory:
        if preset.shape == "events":  # keyed by strings: its other sets derived as from your data
            base = cache.ensure(preset, ["base"], factory)["base"]
            ratios = (settings.update_ratio, settings.insert_ratio)
            sets = sets_of_yours(base, set(set_names), settings.seed, ratios, factory)
        else:
            sets = cache.ensure(preset, set_names, factory)
    for name, data in sets.items():  # footers and schemas, before any table is touched
        if name not in DAMAGED_SETS:  # broken on purpose: their workers must meet the damage
            ParquetSource.open(data.directory, batch_rows=1)
    return sets


def your_scenarios(named: list[str]) -> list[str]:
    """The scenarios a matrix on your own data (or the events preset) runs: those named, else the
    default ones the sets made of yours can feed; a named one that needs another set is a
    one-line error."""
    if not named:
        return [name for name in default_scenarios() if set(get_scenario(name)().needs) <= set(YOUR_SETS)]
    for name in named:
        if missing := [need for need in get_scenario(name)().needs if need not in YOUR_SETS]:
            raise IcebenchError(
                f"scenario {name} needs the {missing[0]} set, which icebench does not derive from your data "
                f"yet: with --source the matrix runs {', '.join(your_scenarios([])) or 'none'}"
            )
    return named


def run_matrix(
    settings: Settings,
    config: MatrixConfig,
    store: ResultsStore,
    stack: Stack,
    events: MatrixEvents | None = None,
    your_sets: DataSets | None = None,
) -> list[RunRecord]:
    """Every preset x scenario x writer (x repeat) on the whole set, then the scale axis, once per
    library variant; the records in the order they ran. With `your_sets` (--source), on those
    alone, as preset "custom"."""
    config = config.resolved()
    events = events or MatrixEvents()
    caps, layouts = config.caps(settings), config.layouts()
    axis = config.axis_scenarios()
    needed = sorted({s for name in config.scenarios for s in get_scenario(name)().needs})
    records: list[RunRecord] = []
    for variant in variants(settings.library_versions, settings.file_ios):
        runner = Runner(settings, store, stack, variant, on_progress=events.run_progress)
        label = f" [{variant.label}]" if variant else ""
        for preset in ["custom"] if your_sets is not None else config.presets:
            sets = your_sets if your_sets is not None else prepare_data(settings, preset, needed, events)
            check_layouts(layouts, config.scenarios, sets)
            plans = [  # whole rounds one after the other, so slow spells spread over every pair
                RunPlan(
                    scenario, writer, preset, sets, settings.batch_rows, cap, repeat=repeat, layout=layout
                )
                for repeat in range(config.repeat if config.whole_set else 0)
                for cap in caps
                for layout in layouts
                for scenario in config.scenarios
                for writer in config.writers
            ]
            # The scale axis on the first table only: a partitioned table's hundreds of commits of
            # a file per partition each would cost more than the rest of the matrix.
            plans += [
                plan
                for scenario in axis
                for plan in _axis_plans(config, scenario, preset, sets, caps[-1], layouts[0])
            ]
            with events.stage(f"matrix {preset}{label}", len(plans)):
                for plan in plans:
                    events.run_started(plan)
                    record = runner.run(plan)
                    records.append(record)
                    events.run_finished(plan, record)
            if config.find_cap:  # this preset's records, each beside its plan
                records += find_caps(runner, plans, records[-len(plans) :], caps[-1], events)
    return records


def check_preset_layouts(layouts: list[TableLayout], preset_names: list[str]) -> None:
    """Before any data is generated: every layout fits the presets' tables (their base schema)."""
    for name in preset_names:
        preset = get_preset(name)
        schema = events_schema(preset.columns) if preset.shape == "events" else wide_schema(preset.columns)
        for layout in layouts:
            check_layout(layout, schema)


def check_layouts(layouts: list[TableLayout], scenario_names: list[str], sets: DataSets) -> None:
    """Before any run: every layout fits every scenario's table (one line naming the culprit)."""
    for layout in layouts:
        for name in scenario_names:
            check_layout(layout, get_scenario(name)().table_schema(sets))


def _axis_plans(
    config: MatrixConfig, scenario: str, preset: str, sets: DataSets, cap: int | None, layout: TableLayout
) -> list[RunPlan]:
    """The same batch size at each batch count of the axis, each writer's counts in a row."""
    rows = sets[get_scenario(scenario)().source_set].manifest.rows
    largest = max(config.batches)
    batch_rows = min(config.scale_batch_rows or rows, rows // largest)
    if batch_rows < 1:
        raise IcebenchError(f"{largest} batches need more than the {rows} rows of preset {preset}")
    return [
        RunPlan(scenario, writer, preset, sets, batch_rows, cap, limit_rows=count * batch_rows, layout=layout)
        for writer in config.scale_writers
        for count in config.batches
    ]


def load_matrix_config(path: Path | None) -> MatrixConfig:
    return read_table(path, "matrix", MatrixConfig)
