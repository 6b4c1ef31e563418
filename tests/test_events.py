"""The events shape (generators/events.py): every Iceberg type, nested ones in each other, a string
key ranked in file order, a timestamp over 30 days; its checksum the files' own, and a run on it
judged by its key."""

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from generators.checksum import Checksum
from generators.events import (
    EVENT_KEY,
    EVENT_TIME,
    EVENT_TYPES,
    JITTER_US,
    SPAN_US,
    events_schema,
    generate_events,
)
from generators.manifest import DatasetManifest
from generators.presets import get_preset
from harness.base.results import read_runs
from harness.cli.main import main

ROWS = 3_000


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("events")
    generate_events(folder, rows=ROWS, columns=44, files=3, seed=5, workers=1)
    return folder


def rows_of(folder: Path) -> pa.Table:
    manifest = DatasetManifest.load(folder)
    return pa.concat_tables(pq.read_table(path) for path in manifest.file_paths(folder))


def test_every_iceberg_type_is_in_the_events_shape():
    schema = events_schema(get_preset("events").columns)
    kinds = {field.type for field in schema}
    assert set(EVENT_TYPES.values()) <= kinds and len(schema) == 120
    assert schema.field(EVENT_KEY).type == pa.string()
    # Nested in each other: a struct in a struct, a list of structs, a map of lists.
    assert pa.types.is_struct(EVENT_TYPES["user"].field("home").type)
    assert pa.types.is_struct(EVENT_TYPES["items"].value_type)
    assert pa.types.is_list(EVENT_TYPES["scores"].item_type)


def test_the_manifest_is_the_files_truth(events: Path):
    manifest = DatasetManifest.load(events)
    rows = rows_of(events)
    assert manifest.rows == ROWS == rows.num_rows and manifest.checksum == Checksum.of(rows).hex
    assert manifest.key_columns == [EVENT_KEY] and manifest.key_ranges == [(0, ROWS - 1)]
    assert manifest.keys.numbers(rows).tolist() == list(range(ROWS))  # ranked in file order
    assert rows.column(EVENT_KEY)[42].as_py() == "EVT-000000000042"


def test_nulls_at_every_level_and_maps_of_distinct_keys(events: Path):
    rows = rows_of(events)
    for name in rows.column_names[2:]:
        column = rows.column(name)
        if name.endswith(("_user", "_tags", "_props", "_items", "_scores")):
            assert column.null_count, name
    items = rows.column(next(n for n in rows.column_names if n.endswith("_items"))).combine_chunks()
    assert pc.list_flatten(items).null_count  # a null element of a list
    for entry in rows.column(next(n for n in rows.column_names if n.endswith("_props"))).to_pylist():
        if entry:
            assert len({key for key, _ in entry}) == len(entry)


def test_the_events_spread_over_thirty_days_in_file_order(events: Path):
    times = rows_of(events).column(EVENT_TIME).cast(pa.int64()).to_numpy()
    assert times.max() - times.min() <= SPAN_US + 2 * JITTER_US
    assert times.max() - times.min() >= SPAN_US * 0.9
    thirds = times.reshape(3, -1).mean(axis=1)
    assert thirds[0] < thirds[1] < thirds[2]


def test_the_same_seed_makes_the_same_events(events: Path, tmp_path: Path):
    again = generate_events(tmp_path / "again", rows=ROWS, columns=44, files=3, seed=5, workers=1)
    other = generate_events(tmp_path / "other", rows=ROWS, columns=44, files=3, seed=6, workers=1)
    assert again.checksum == DatasetManifest.load(events).checksum != other.checksum


@pytest.mark.parametrize(
    ("scenario", "writer"),
    [
        ("append", "pyiceberg-add-files"),
        ("replace", "pyiceberg-add-files"),
        ("upsert", "pyiceberg-rewrite-add-files"),
    ],
)
def test_an_events_set_runs_append_replace_and_upsert(cli_settings, events: Path, scenario: str, writer: str):
    """A generated events set given as --source: its change set and replacement derived from it,
    each table judged by the string key."""
    args = ["run", "--results", str(cli_settings.results_dir), "--memory", "1g"]
    assert main([*args, "--scenario", scenario, "--writer", writer, "--source", str(events)]) == 0
    newest = max(cli_settings.results_dir.iterdir(), key=lambda p: p.stat().st_mtime)
    record = read_runs(newest)[-1]
    assert record.status == "ok" and record.verdict.passed, record.verdict


def test_a_reader_that_cannot_read_nested_columns_leaves_the_table_unjudged(cli_settings, events: Path):
    """An upsert by equality deletes is judged by a reader that applies them with pyarrow's hash
    join, which carries no struct, list or map column: the harness's limit, never the writer's
    failure."""
    args = ["run", "--results", str(cli_settings.results_dir), "--memory", "1g", "--source", str(events)]
    assert main([*args, "--scenario", "upsert", "--writer", "pyiceberg-equality-delete"]) == 0
    newest = max(cli_settings.results_dir.iterdir(), key=lambda p: p.stat().st_mtime)
    record = read_runs(newest)[-1]
    assert record.status == "ok" and record.verdict.unjudged, record.verdict
    (unread,) = record.verdict.failed
    assert unread.name == "table_readable" and unread.harness_limit
    assert "is not supported in join" in unread.reason
