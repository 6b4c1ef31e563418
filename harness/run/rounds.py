"""The rounds workload: N rounds of phases (append, upsert, replace, and the maintenance steps
compact, expire, orphans) by each writer on a table of its own, the oracle judging the table after
every phase (scenarios/rounds.py). A maintenance step is the writer's maintainer's
(`Writer.maintained_with`, or `--maintainer`), on the table the writer left.

Declared in the `[rounds]` table of a config file, or by `icebench rounds` flags. Every phase is
an ordinary run in runs.jsonl with its `round` and `phase`, in a worker of its own under the cap:
its latency, peak rss, files, snapshots and metadata bytes, and reports/rounds.py's degradation
rate over the rounds. Nothing here prints (MatrixEvents, as the matrix).
"""

from __future__ import annotations

from dataclasses import replace

from generators.datasets import DataSet, DataSets
from generators.presets import get_preset
from generators.source import ParquetSource
from generators.your_changes import your_rounds
from harness.base.layout import check_layout
from harness.base.results import ResultsStore
from harness.base.settings import Settings
from harness.model import ROUND_PHASES, Maintenance, RunRecord, TableLayout
from harness.run.config import RoundsConfig
from harness.run.events import MatrixEvents
from harness.run.matrix import check_preset_layouts, prepare_data
from harness.run.plugins import writer_libraries
from harness.run.runner import Runner, RunPlan
from harness.services.envs import variants
from harness.services.stacks import Stack
from scenarios.rounds import RoundPhase, RoundsTable


def run_rounds(
    settings: Settings,
    config: RoundsConfig,
    store: ResultsStore,
    stack: Stack,
    events: MatrixEvents | None = None,
    your_set: DataSet | None = None,
) -> list[RunRecord]:
    """Each writer's rounds on a table of its own, phase after phase; the records in order. With
    `your_set` (--source), the rounds' sets are made of it, as preset "custom"."""
    config = config.resolved()
    events = events or MatrixEvents()
    # One runner per library variant, each writer's rounds on a table of each: the variants take
    # their phases in turn (A B A B), so a slow spell of the machine falls on both.
    found = variants(settings.library_versions, settings.file_ios, writer_libraries(config.writers))
    runners = [Runner(settings, store, stack, variant, on_progress=events.run_progress) for variant in found]
    sets = _rounds_sets(settings, config, events, your_set)
    preset = "custom" if your_set is not None else config.preset
    layouts = config.layouts()
    records: list[RunRecord] = []
    total = len(layouts) * len(config.writers) * config.rounds * len(config.phases) * len(runners)
    with events.stage(f"rounds {preset}", total):
        for number, layout in enumerate(layouts):
            for writer in config.writers:
                plan = RunPlan("rounds", writer, preset, sets, settings.batch_rows, settings.memory)
                label = f"rounds-{writer}" + (f"-table{number}" if len(layouts) > 1 else "")
                records += _writer_rounds(config, runners, replace(plan, layout=layout), label, store, events)
    return records


def _writer_rounds(
    config: RoundsConfig,
    runners: list[Runner],
    plan: RunPlan,
    label: str,
    store: ResultsStore,
    events: MatrixEvents,
) -> list[RunRecord]:
    """One writer's rounds on a table of each runner's, phase after phase (`plan`: what every
    phase's plan shares)."""
    maintainer = config.maintainer_of(plan.writer)
    rounds = [number for number in range(1, config.rounds + 1) for _ in config.phases]
    steps = zip(rounds, config.phases * config.rounds, config.blocks(), strict=True)
    names = [label + (f"-v{index}" if index else "") for index in range(len(runners))]
    homes = [runner.new_catalog(name) for runner, name in zip(runners, names, strict=True)]
    tables = [RoundsTable() for _ in runners]
    records: list[RunRecord] = []
    try:
        for step, (round_number, phase, block) in enumerate(steps, start=1):
            maintains = isinstance(ROUND_PHASES[phase], Maintenance)
            phase_plan = replace(
                plan, round=round_number, phase=phase, maintainer=maintainer if maintains else None
            )
            for index, runner in enumerate(runners):
                scenario = RoundPhase(phase, round_number, tables[index], block, maintainer)
                events.run_started(phase_plan)
                _, work = store.new_work_folder(f"{names[index]}-{step:03d}-r{round_number}-{phase}")
                record = runner.run_on(phase_plan, scenario, homes[index], work)
                if record.status == "ok":  # else the table must be as it was
                    tables[index] = scenario.after()
                records.append(record)
                events.run_finished(phase_plan, record)
    finally:
        for runner, home in zip(runners, homes, strict=True):
            runner.release(home)
    return records


def _rounds_sets(
    settings: Settings, config: RoundsConfig, events: MatrixEvents, your_set: DataSet | None
) -> DataSets:
    """Each round's set and change set: the preset's generated ones, or made of a set keyed by
    rank (yours, the events preset's) by generators/your_changes.py."""
    if your_set is None and get_preset(config.preset).shape != "events":
        return prepare_data(settings, config.preset, config.set_names(), events)
    base = your_set or prepare_data(settings, config.preset, ["base"], events)["base"]
    ratios = (settings.update_ratio, settings.insert_ratio)
    with events.generating() as factory:
        blocks = max(config.blocks())
        return your_rounds(base, blocks, "upsert" in config.phases, settings.seed, ratios, factory)


def check_rounds_layouts(layouts: list[TableLayout], your_set: DataSet | None, preset: str) -> None:
    """Before any data is made or run: every layout fits the rounds' table (one line naming the
    culprit), that of your set or of the preset's base schema."""
    if your_set is None:
        check_preset_layouts(layouts, [preset])
        return
    schema = ParquetSource.open(your_set.directory, batch_rows=1).schema
    for layout in layouts:
        check_layout(layout, schema)
