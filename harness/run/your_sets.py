"""The sets a command runs on when you give your own data (`--source`, `--key`, `--changes`,
`--base`): your parquet set, or a set icebench generated, and what the scenarios need derived from
it; each mistake a one-line error before any writer runs."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from generators.datasets import DataSet, data_set
from generators.manifest import MANIFEST_FILE
from generators.place import child, exists, on_s3, place_of
from generators.schema import KEY_COLUMN
from generators.your_changes import sets_of_yours
from generators.your_data import your_data
from harness.base.errors import IcebenchError
from harness.base.settings import Settings
from harness.model import Operation
from harness.run.config import YourData
from harness.run.events import MatrixEvents
from harness.run.matrix import prepare_data, your_scenarios
from scenarios import get_scenario
from scenarios.base import DataSets

DEFAULT_RUN_PRESET = "tiny"  # `icebench run` without --preset or --source


def your_sets(
    command: str,
    data: YourData,
    preset_named: bool,
    settings: Settings,
    scenario_names: list[str],
    events: MatrixEvents,
) -> DataSets | None:
    """The matrix's, rounds' or scale axis' sets from --source (None: the presets'): your set and
    what `scenario_names` need derived from it."""
    data.check_needs_source()
    if data.source is None:
        return None
    refuse_preset_with_source(command, preset_named)
    refuse_s3_outside_matrix(command, data)
    needs = {need for name in scenario_names for need in get_scenario(name)().needs}
    if scenario_names:  # rounds name none: their phases derive each round's change set
        data.check_used(needs, scenario_names)
    return derived_sets(data, settings, needs, events)


def refuse_preset_with_source(command: str, preset_named: bool) -> None:
    if preset_named:
        raise IcebenchError(f"--source and --preset: {command} runs on your data or on a preset, not both")


def refuse_s3_outside_matrix(command: str, data: YourData) -> None:
    if data.on_s3 and command != "matrix":
        raise IcebenchError(f"--source {data.source}: {command} takes local sets; matrix runs on a set on S3")


def prepare_writers_for_s3(source: str, writer_names: list[str]) -> None:
    """Each writer can be fed the set on S3, and has what its engine needs for it, before any run:
    a writer icebench cannot hand an S3 set to is refused by name (the harness's limit, not its)."""
    from harness.engines.writers import get_writer

    writers = [get_writer(name) for name in dict.fromkeys(writer_names)]
    if gaps := [(writer.name, gap) for writer in writers if (gap := writer.s3_source_gap())]:
        named = ", ".join(name for name, _ in gaps)
        raise IcebenchError(f"--source {source}: {named}: {gaps[0][1]}; leave them out for a set on S3")
    for writer in writers:
        writer.prepare_s3_source()


def derived_sets(data: YourData, settings: Settings, needs: set[str], events: MatrixEvents) -> DataSets:
    """Your set as `base`, and the `changes` and `replacement` sets derived from it when needed."""
    assert data.source is not None
    base = your_set("--source", data.source, data.key, settings, events)
    if on_s3(base.directory) and (derived := sorted(needs - {"base"})):
        raise IcebenchError(
            f"--source {data.source}: the scenarios asked need sets derived from it ({', '.join(derived)}), "
            f"which icebench derives from local sets only: run append scenarios on a set on S3"
        )
    changes = None
    if "changes" in needs and data.changes is not None:
        changes = your_set("--changes", data.changes, data.key, settings, events, base, "changes")
    with events.generating() as progress:
        ratios = (settings.update_ratio, settings.insert_ratio)
        return sets_of_yours(base, needs, settings.seed, ratios, progress, changes)


def run_sets(
    scenario_name: str, preset: str | None, data: YourData, settings: Settings, events: MatrixEvents
) -> tuple[str, DataSets]:
    """`icebench run`'s preset name and sets: the preset's (`preset` None: tiny), yours with what
    the scenario needs derived, or yours as given (--source and --base)."""
    scenario = get_scenario(scenario_name)()
    data.check_needs_source()
    refuse_s3_outside_matrix("run", data)
    if data.source is None and data.base is None:
        preset = preset or DEFAULT_RUN_PRESET
        return preset, prepare_data(settings, preset, list(scenario.needs), events)
    if data.source is None:
        raise IcebenchError(f"--base {data.base}: give the set the writer is fed with --source too")
    refuse_preset_with_source("run", preset is not None)
    data.check_used(set(scenario.needs), [scenario.name])
    if data.base is None:  # your set, and what the scenario needs derived from it
        your_scenarios([scenario.name])
        return "custom", derived_sets(data, settings, set(scenario.needs), events)
    if not scenario.initial_set:
        raise IcebenchError(f"--base {data.base}: scenario {scenario.name} starts from an empty table")
    base = your_set("--base", data.base, data.key, settings, events)
    kind = "changes" if scenario.operation == Operation.UPSERT else "base"
    source = your_set("--source", data.source, data.key, settings, events, base, kind)
    if source.manifest.kind == "changes" and source.manifest.base_checksum != base.manifest.checksum:
        raise IcebenchError(f"change set {data.source} was not made from base set {data.base}")
    if scenario.operation == Operation.UPSERT and source.manifest.kind != "changes":
        raise IcebenchError(
            f"source {data.source} is a base set; {scenario.name} needs a change set "
            f"(icebench generate --changes-of BASE)"
        )
    return "custom", {scenario.source_set: source, scenario.initial_set: base}


def your_set(
    flag: str,
    path: str,
    key: list[str] | None,
    settings: Settings,
    events: MatrixEvents,
    base: DataSet | None = None,
    kind: Literal["base", "changes"] = "base",
) -> DataSet:
    """A set icebench generated (a folder with its manifest.json), or your own parquet files, whose
    manifest icebench derives once into its data cache (numbered against `base`'s keys if given)."""
    if not path.strip():
        raise IcebenchError(f"{flag}: the path is empty; give a parquet file, a folder or a glob")
    if on_s3(path):
        _require_manifest_on_s3(flag, path)
    if on_s3(path) or (Path(path) / MANIFEST_FILE).is_file():
        generated = data_set(place_of(path))
        if key is not None and key != list(generated.manifest.key_columns):
            keyed = ",".join(generated.manifest.key_columns)
            raise IcebenchError(f"--key {','.join(key)}: the generated set {path} is keyed by {keyed}")
        return generated
    with events.generating() as progress:
        return your_data(path, key or [KEY_COLUMN], settings.data_dir, progress, base, kind)


def _require_manifest_on_s3(flag: str, path: str) -> None:
    """A set on S3 is one `icebench generate --out s3://...` wrote: your own parquet files there
    would need their manifest derived, which icebench does from local files."""
    if not exists(child(place_of(path), MANIFEST_FILE)):
        raise IcebenchError(
            f"{flag} {path}: no {MANIFEST_FILE} there; a set on S3 is one `icebench generate --out "
            f"s3://...` wrote (your own parquet files: give them as a local folder)"
        )
