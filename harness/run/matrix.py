"""Many runs: the scenario x writer x preset matrix, and its scale axis (batch counts).

Nothing here prints: the caller hears of progress through MatrixEvents (the CLI draws progress
bars) and renders the records it gets back.
"""

from __future__ import annotations

from dataclasses import replace

from generators.datasets import DAMAGED_SETS, DataCache
from generators.events import events_schema
from generators.presets import get_preset
from generators.schema import wide_schema
from generators.source import ParquetSource
from generators.your_changes import YOUR_SETS, sets_of_yours
from harness.base.errors import IcebenchError, WorkloadStopped, warn
from harness.base.layout import check_layout
from harness.base.results import ResultsStore
from harness.base.settings import Settings
from harness.model import RunRecord, TableLayout
from harness.run.config import MatrixConfig
from harness.run.disk_room import point_needs, require_room
from harness.run.events import MatrixEvents
from harness.run.find_cap import find_caps
from harness.run.plugins import default_scenarios, writer_libraries
from harness.run.runner import Runner, RunPlan
from harness.services.calibration import measure
from harness.services.envs import variants
from harness.services.stacks import Stack
from scenarios import get_scenario
from scenarios.base import DataSets

# The machine's speed is sampled (~2 s) before every this many pairs and after the last: the gate
# divides time ratios by the samples' median, so a slow spell anywhere in the run is in it.
CALIBRATE_EVERY = 16


def axis_scenarios(config: MatrixConfig) -> list[str]:
    """The scenarios of the matrix that take a prefix of their set: those on the axis."""
    if not config.batches:
        return []
    taking = [name for name in config.scenarios if get_scenario(name).accepts_row_limit]
    if not taking:
        raise IcebenchError(
            f"the batches axis feeds prefixes of a set; scenario {', '.join(config.scenarios)} needs "
            "its whole set (use append)"
        )
    return taking


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
    """Every preset x scenario x writer (x repeat) on the whole set, then the scale axis, each pair
    under every library variant in turn; the records in the order they ran. With `your_sets`
    (--source), on those alone, as preset "custom"."""
    config = config.resolved()
    events = events or MatrixEvents()
    caps, layouts = config.caps(settings), config.layouts()
    axis = axis_scenarios(config)
    needed = sorted({s for name in config.scenarios for s in get_scenario(name)().needs})
    records: list[RunRecord] = []
    # Every variant's runner first (each makes its environment once), so that the variants run
    # interleaved, pair by pair (A B A B, never A A B B): a slow spell of the machine falls on both.
    runners = [
        Runner(settings, store, stack, variant, on_progress=events.run_progress)
        for variant in variants(
            settings.library_versions,
            settings.file_ios,
            writer_libraries([*config.writers, *config.scale_writers]),
        )
    ]
    labels = ", ".join(runner.variant.label for runner in runners if runner.variant is not None)
    earlier: tuple[str, DataSets] | None = None  # the point before, on a rows axis
    for preset in ["custom"] if your_sets is not None else config.presets:
        if earlier is not None:
            _require_room(settings, store, stack, preset, needed, earlier, records)
        sets = your_sets if your_sets is not None else prepare_data(settings, preset, needed, events)
        earlier = (preset, sets)
        check_layouts(layouts, config.scenarios, sets)
        plans = [  # whole rounds one after the other, so slow spells spread over every pair
            RunPlan(scenario, writer, preset, sets, settings.batch_rows, cap, repeat=repeat, layout=layout)
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
        ran: dict[int, list[RunRecord]] = {index: [] for index in range(len(runners))}
        with events.stage(f"matrix {preset}" + (f" [{labels}]" if labels else ""), len(plans) * len(runners)):
            for number, plan in enumerate(plans):
                if number % CALIBRATE_EVERY == 0:
                    _calibrate(store)
                # The scale axis' points are not kept: maintenance follows whole-set writes only.
                steps = config.maintenance if plan.limit_rows is None else []
                maintainer = config.maintainer_of(plan.writer) if steps else ""
                for index, runner in enumerate(runners):
                    events.run_started(plan)
                    write, *maintained = runner.run_and_maintain(plan, steps, maintainer)
                    ran[index].append(write)
                    records += [write, *maintained]
                    events.run_finished(plan, write)
                    for step in maintained:
                        events.step_finished(replace(plan, phase=step.phase, maintainer=maintainer), step)
            _calibrate(store)
        if config.find_cap:  # this preset's records of each variant, each beside its plan
            for index, runner in enumerate(runners):
                records += find_caps(runner, plans, ran[index], caps[-1], events)
    return records


def _require_room(
    settings: Settings,
    store: ResultsStore,
    stack: Stack,
    preset: str,
    needed: list[str],
    earlier: tuple[str, DataSets],
    records: list[RunRecord],
) -> None:
    """Before a rows axis' next point (wide's shape again, at more rows): room for its sets and
    its largest table, as the point before measured them (harness/run/disk_room.py)."""
    point, (before, sets) = get_preset(preset), earlier
    if (point.shape, point.columns) != (get_preset(before).shape, get_preset(before).columns):
        return  # not a rows axis: nothing measured scales to it
    cache = DataCache(settings.data_dir, settings.seed, settings.update_ratio, settings.insert_ratio)
    tables = None if stack.name == "external" else store.folder  # external: the tables are elsewhere
    measured = [record for record in records if record.preset == before]
    needs = point_needs(point.rows, sets, cache.missing(point, needed), measured, cache.folder(point), tables)
    try:
        require_room(preset, needs, measured_at=before)
    except IcebenchError as exc:
        raise WorkloadStopped(str(exc), records) from None


def _calibrate(store: ResultsStore) -> None:
    """A sample of the machine's speed into the results, for the gate; one that fails is said, not fatal."""
    try:
        store.append_calibration(measure())
    except IcebenchError as exc:
        warn(f"{exc}; the gate will compare these results' times unadjusted for the machine")


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
