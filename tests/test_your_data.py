"""Your own parquet set (generators/your_data.py): no manifest of icebench's, a key of your naming,
nested columns; what the oracle needs derived once into the cache; what icebench cannot take
refused in one line before a writer runs; and a change inside a nested value caught."""

import datetime
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from generators.checksum import Checksum
from generators.keys import KEY_SPACE_FILE, KeySpace
from generators.your_data import SOURCES_FOLDER, source_files, your_data
from harness.base.errors import SourceError
from harness.base.results import read_runs
from harness.cli.main import main
from harness.judge.readback import read_content
from scenarios.base import expect_prefix

ROWS = 3_000
UTC = datetime.UTC
ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.string())])


def orders(rows: int = ROWS, first: int = 1_000) -> pa.Table:
    """A data engineer's orders: an integer key of their naming, a struct, a list, a map, a UTC
    timestamp and a decimal(38, 9), with nulls at every level."""
    start = datetime.datetime(2026, 1, 1, tzinfo=UTC)
    return pa.table(
        {
            "order_id": pa.array(range(first, first + rows), pa.int64()),
            "placed_at": pa.array(
                [start + datetime.timedelta(minutes=i) for i in range(rows)], pa.timestamp("us", tz="UTC")
            ),
            "total": pa.array(
                [Decimal(i) / 100 if i % 11 else None for i in range(rows)], pa.decimal128(38, 9)
            ),
            "ship_to": pa.array(
                [
                    {"city": "Berlin" if i % 2 else None, "zip": f"{10_000 + i}"} if i % 7 else None
                    for i in range(rows)
                ],
                ADDRESS,
            ),
            "items": pa.array(
                [[f"sku-{i}", None] if i % 3 else ([] if i % 2 else None) for i in range(rows)],
                pa.list_(pa.string()),
            ),
            "attrs": pa.array(
                [[("gift", f"{i % 2 == 0}")] if i % 5 else None for i in range(rows)],
                pa.map_(pa.string(), pa.string()),
            ),
        }
    )


@pytest.fixture
def your_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "orders"
    folder.mkdir()
    table = orders()
    pq.write_table(table.slice(0, 1_800), folder / "2026-01.parquet", row_group_size=500)
    pq.write_table(table.slice(1_800), folder / "2026-02.parquet")
    return folder


@pytest.fixture(autouse=True)
def _isolated_data(cli_settings):
    """Commands run through main use the session's data cache and results (cli_settings)."""


def command(settings, name: str, *args: str) -> list[str]:
    """`icebench NAME` with the session's results folder and a 1 GiB cap."""
    return [name, "--results", str(settings.results_dir), "--memory", "1g", *args]


def append(settings, source: Path, key: str, writer: str = "pyiceberg-add-files") -> int:
    """`icebench run` of append by `writer` on `source` keyed by `key`."""
    return main(
        command(
            settings, "run", "--scenario", "append", "--writer", writer, "--source", str(source), "--key", key
        )
    )


def newest_records(settings) -> list:
    return read_runs(max(settings.results_dir.iterdir(), key=lambda p: p.stat().st_mtime))


def test_your_parquet_folder_is_appended_and_judged_by_your_key(cli_settings, your_folder: Path):
    code = append(cli_settings, your_folder, "order_id")
    assert code == 0
    record = newest_records(cli_settings)[-1]
    assert record.status == "ok" and record.verdict.passed, record.verdict
    assert record.rows == ROWS and record.preset == "custom"


def test_the_derived_manifest_is_your_sets_truth_and_made_once(cli_settings, your_folder: Path):
    first = your_data(str(your_folder), ["order_id"], cli_settings.data_dir)
    # Your keys are ranked in file order: the keys file in the set's folder numbers them.
    assert first.manifest.rows == ROWS and first.manifest.key_ranges == [(0, ROWS - 1)]
    assert first.manifest.key_space == [first.directory / KEY_SPACE_FILE]
    assert first.manifest.keys.values([0, ROWS - 1]) == [{"order_id": 1_000}, {"order_id": 1_000 + ROWS - 1}]
    assert first.manifest.checksum == Checksum.of(orders()).hex
    assert [Path(entry.name) for entry in first.manifest.files] == source_files(str(your_folder))
    again = your_data(str(your_folder / "*.parquet"), ["order_id"], cli_settings.data_dir)
    # A glob of the same files: the same set (in a folder of its own, its keys file there).
    assert again.manifest.model_copy(update={"key_space": first.manifest.key_space}) == first.manifest
    assert your_data(str(your_folder), ["order_id"], cli_settings.data_dir).directory == first.directory
    # A file written since is another set: derived anew, never the stale manifest.
    changed = your_folder / "2026-02.parquet"
    pq.write_table(orders(ROWS - 1_800, first=50_000), changed)
    os.utime(changed, ns=(1, 1))
    newer = your_data(str(your_folder), ["order_id"], cli_settings.data_dir)
    assert newer.directory != first.directory and newer.manifest.checksum != first.manifest.checksum
    assert (cli_settings.data_dir / SOURCES_FOLDER).is_dir()


@pytest.mark.parametrize(
    ("make", "key", "said"),
    [
        (lambda folder: pq.write_table(orders(), folder / "a.parquet"), "id", "key column id is not in"),
        (
            lambda folder: _twice(folder),
            "order_id",
            "key order_id is not unique: 10 keys repeat (one is order_id=100",
        ),
        (
            lambda folder: pq.write_table(
                orders().append_column("score", pa.array([0.5] * ROWS)), folder / "a.parquet"
            ),
            "score",
            "key column score is double: an Iceberg key (identifier field) is a primitive column",
        ),
        (
            lambda folder: pq.write_table(
                orders().set_column(0, "order_id", pa.array([None] * ROWS, pa.int64())), folder / "a.parquet"
            ),
            "order_id",
            "holds nulls",
        ),
        (lambda folder: None, "order_id", "no *.parquet file in that folder"),
        (lambda folder: _unlike_schemas(folder), "order_id", "its schema differs"),
        (
            lambda folder: pq.write_table(
                orders().rename_columns(["order_id"] * 2 + orders().column_names[2:]), folder / "a.parquet"
            ),
            "order_id",
            "two columns are named order_id",
        ),
        (
            lambda folder: pq.write_table(orders().slice(0, 0), folder / "a.parquet"),
            "order_id",
            "holds no rows",
        ),
    ],
    ids=[
        "missing key",
        "repeated key",
        "float key",
        "null key",
        "empty folder",
        "schemas differ",
        "a name twice",
        "no rows",
    ],
)
def test_what_icebench_cannot_take_is_one_line_before_any_writer(
    cli_settings, capsys, tmp_path: Path, make, key: str, said: str
):
    folder = tmp_path / ".hidden" / "bad"  # a source under a hidden folder is read like any other
    folder.mkdir(parents=True)
    make(folder)
    code = append(cli_settings, folder, key)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and said in err[-1], err
    assert err[-1].startswith("icebench: error: ")
    # Nothing left behind in the data cache: no lock of a set that was never made.
    locks = cli_settings.data_dir.rglob(".*.lock")
    assert [lock for lock in locks if not lock.with_name(lock.name[1:].removesuffix(".lock")).exists()] == []


def _twice(folder: Path) -> None:
    pq.write_table(orders(), folder / "a.parquet")
    pq.write_table(orders(10), folder / "b.parquet")  # keys 1000..1009 again


def _unlike_schemas(folder: Path) -> None:
    pq.write_table(orders(), folder / "a.parquet")
    pq.write_table(orders(10, first=90_000).drop_columns(["attrs"]), folder / "b.parquet")


@pytest.mark.parametrize(
    ("what", "damage"),
    [
        ("a struct field", lambda rows: _replace(rows, "ship_to", 1, {"city": "Bonn", "zip": "10001"})),
        ("a list element", lambda rows: _replace(rows, "items", 1, ["sku-2", None])),
        ("a map value", lambda rows: _replace(rows, "attrs", 1, [("gift", "True")])),
    ],
)
def test_a_change_inside_a_nested_value_fails_the_checksum(tmp_path: Path, what: str, damage):
    """The table's file holds the source's rows but for one nested value: the oracle's read-back
    no longer reaches the source's checksum."""
    source = orders(50)
    catalog = SqlCatalog("icebench", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/w")
    catalog.create_namespace("yours")
    for name, rows in (("intact", source), ("damaged", damage(source))):
        table = catalog.create_table(f"yours.{name}", schema=source.schema)
        pq.write_table(rows, tmp_path / f"{name}.parquet")
        table.add_files([str(tmp_path / f"{name}.parquet")])
        content = read_content(table, keys=KeySpace(("order_id",)))
        assert (content.checksum == Checksum.of(source).hex) == (name == "intact"), what


def _replace(rows: pa.Table, column: str, row: int, value: object) -> pa.Table:
    values = rows.column(column).to_pylist()
    values[row] = value
    return rows.set_column(
        rows.schema.get_field_index(column), column, pa.array(values, rows.schema.field(column).type)
    )


def test_a_path_that_names_nothing_is_said(tmp_path: Path):
    with pytest.raises(SourceError, match="does not exist"):
        source_files(str(tmp_path / "nowhere"))
    with pytest.raises(SourceError, match="matches no file"):
        source_files(str(tmp_path / "*.parquet"))


def test_the_matrix_runs_on_your_data_what_it_can_feed(cli_settings, capsys, your_folder: Path):
    common = command(cli_settings, "matrix", "--source", str(your_folder))
    assert main([*common, "--key", "order_id", "--writers", "pyiceberg-add-files"]) == 0
    records = newest_records(cli_settings)
    # The change set and the replacement are derived from your set (generators/your_changes.py).
    assert [(r.scenario, r.preset, r.status) for r in records] == [
        ("append", "custom", "ok"),
        ("replace", "custom", "ok"),
        ("upsert", "custom", "unsupported"),
    ]
    assert all(r.verdict.passed for r in records if r.status == "ok")
    capsys.readouterr()
    code = main(
        [
            *common,
            "--key",
            "order_id",
            "--writers",
            "pyiceberg-add-files",
            "--scenarios",
            "schema-evolution-upsert",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "scenario schema-evolution-upsert needs the changes-evolved set" in err[-1], err
    assert main([*common, "--preset", "tiny"]) == 2


def test_a_prefix_of_your_set_expects_the_keys_it_holds(cli_settings, tmp_path: Path):
    """Your rows need not come in key order: a writer fed the first rows must hold their keys."""
    folder = tmp_path / "reversed"
    folder.mkdir()
    rows = orders()
    pq.write_table(rows.take(list(range(ROWS - 1, -1, -1))), folder / "a.parquet")
    data = your_data(str(folder), ["order_id"], cli_settings.data_dir)
    last = 1_000 + ROWS - 1
    prefix = expect_prefix(data, 10)
    assert data.manifest.keys.values(list(range(prefix.key_ranges[0][0], prefix.key_ranges[0][1] + 1))) == [
        {"order_id": key} for key in range(last, last - 10, -1)
    ]


def test_the_scale_axis_runs_on_your_data(cli_settings, capsys, your_folder: Path):
    common = command(cli_settings, "scale", "--writer", "pyiceberg-add-files")
    assert main([*common, "--source", str(your_folder), "--key", "order_id", "--batches", "2,5"]) == 0
    records = newest_records(cli_settings)
    assert [(r.limit_rows, r.verdict.passed) for r in records] == [(2 * 600, True), (5 * 600, True)]
    capsys.readouterr()
    assert main([*common, "--source", str(your_folder), "--preset", "tiny"]) == 2
    assert "--source and --preset" in capsys.readouterr().err


def test_a_writer_that_loses_nested_nulls_fails_by_name_and_one_that_keeps_them_passes(
    cli_settings, tmp_path: Path
):
    """A null list of structs: pyiceberg's writer stores an empty list (apache/iceberg-python#3833),
    add_files of the file as it is keeps the null. The oracle tells them apart."""
    folder = tmp_path / "lines"
    folder.mkdir()
    line = pa.struct([("sku", pa.string()), ("qty", pa.int64())])
    lines = [None if i % 4 == 0 else [{"sku": f"s{i}", "qty": i}] for i in range(400)]
    pq.write_table(
        pa.table({"order_id": pa.array(range(400), pa.int64()), "lines": pa.array(lines, pa.list_(line))}),
        folder / "a.parquet",
    )
    verdicts = {}
    for writer in ("pyiceberg-add-files", "pyiceberg-table"):
        append(cli_settings, folder, "order_id", writer)
        verdicts[writer] = newest_records(cli_settings)[-1].verdict
    assert verdicts["pyiceberg-add-files"].passed
    failed = [check for check in verdicts["pyiceberg-table"].checks if not check.passed]
    assert [check.name for check in failed] == ["content_checksum"]
    assert failed[0].reason.startswith("key order_id=0: column lines is [], expected None")
    assert failed[0].upstream == "apache/iceberg-python#3833"


def string_keyed(rows: int = ROWS) -> pa.Table:
    """orders() keyed as a shop keys them: `ORD-00001000`, ..., not in key order."""
    table = orders(rows)
    keys = pa.array([f"ORD-{key:08d}" for key in table.column("order_id").to_pylist()][::-1])
    return table.set_column(0, "order_id", keys)


@pytest.mark.parametrize(
    ("scenario", "writer"),
    [
        ("append", "pyiceberg-add-files"),
        ("replace", "pyiceberg-add-files"),
        ("replace", "pyiceberg-table"),
        ("upsert", "pyiceberg-rewrite-add-files"),
        ("upsert", "pyiceberg-table"),
    ],
)
def test_your_string_keyed_set_is_appended_replaced_and_upserted(
    cli_settings, tmp_path: Path, scenario: str, writer: str
):
    """No manifest, a string key, nested columns: the replacement and the change set are derived
    from your set (generators/your_changes.py), and each writer's table is judged by your key."""
    folder = tmp_path / "shop"
    folder.mkdir()
    pq.write_table(string_keyed(), folder / "orders.parquet", row_group_size=700)
    code = main(
        command(
            cli_settings, "run", "--scenario", scenario, "--writer", writer,
            "--source", str(folder), "--key", "order_id",
        )
    )  # fmt: skip
    record = newest_records(cli_settings)[-1]
    assert code == 0 and record.status == "ok" and record.verdict.passed, record.verdict
    assert record.selective_scan_rows  # a range of your keys, found by your key's order


def test_a_composite_key_and_your_own_change_set_upsert(cli_settings, tmp_path: Path):
    folder, mine = tmp_path / "lines", tmp_path / "changed"
    folder.mkdir()
    mine.mkdir()
    table = orders().append_column("line", pa.array([i % 3 for i in range(ROWS)], pa.int32()))
    table = table.set_column(0, "order_id", pa.array([1_000 + i // 3 for i in range(ROWS)], pa.int64()))
    pq.write_table(table, folder / "a.parquet")
    changed = table.slice(5, 20).set_column(1, "placed_at", table.column("placed_at").slice(100, 20))
    pq.write_table(
        pa.concat_tables([changed, table.slice(0, 2).set_column(0, "order_id", pa.array([7, 7]))]),
        mine / "c.parquet",
    )
    args = ["--source", str(folder), "--key", "order_id,line", "--changes", str(mine)]
    code = main(
        command(cli_settings, "run", "--scenario", "upsert", "--writer", "pyiceberg-rewrite-add-files", *args)
    )
    record = newest_records(cli_settings)[-1]
    assert code == 0 and record.status == "ok" and record.verdict.passed, record.verdict
    assert record.rows == 22  # the change set: 20 rows updated, 2 new keys (7, 0) and (7, 1)
    empty = tmp_path / "unchanged"
    empty.mkdir()
    pq.write_table(table.slice(0, 0), empty / "c.parquet")
    args[-1] = str(empty)  # an empty change set changes nothing: refused, not a writer's FAIL
    code = main(command(cli_settings, "run", "--scenario", "upsert", "--writer", "pyiceberg-table", *args))
    assert code == 2 and newest_records(cli_settings)[-1] == record
    checks = {check.name: check for check in record.verdict.checks}
    assert checks["row_count"].actual == ROWS + 2


def test_the_rounds_run_on_your_data(cli_settings, tmp_path: Path):
    """Each round your rows under keys of its own, its change set derived from it: every phase of
    every round judged by your string key."""
    folder = tmp_path / "shop"
    folder.mkdir()
    pq.write_table(string_keyed(600), folder / "orders.parquet")
    args = [
        "--source",
        str(folder),
        "--key",
        "order_id",
        "--rounds",
        "2",
        "--writers",
        "pyiceberg-txn-batches",
    ]
    assert main(command(cli_settings, "rounds", *args)) == 0
    records = newest_records(cli_settings)
    assert [(r.round, r.phase, r.preset) for r in records] == [
        (round_number, phase, "custom")
        for round_number in (1, 2)
        for phase in ("append", "upsert", "replace")
    ]
    assert all(r.status == "ok" and r.verdict.passed for r in records), [r.verdict for r in records]


def test_the_walkthroughs_stand_in_orders_are_taken_as_your_data(cli_settings, tmp_path: Path):
    """benchmarks/your_orders.py, docs/your-data.md's stand-in for a newcomer's parquet: files of a
    string key in no order and nested columns, no manifest, appended and judged by `order_id`."""
    script = Path(__file__).parents[1] / "benchmarks" / "your_orders.py"
    folder = tmp_path / "orders"
    made = subprocess.run(
        [sys.executable, str(script), str(folder), "--rows", "3000", "--files", "3"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert sorted(path.name for path in folder.iterdir()) == [f"orders-0{i}.parquet" for i in range(3)]
    keys = pq.read_table(folder, columns=["order_id"]).column("order_id").to_pylist()
    assert len(set(keys)) == 3000 and keys != sorted(keys)
    assert append(cli_settings, folder, "order_id") == 0
    record = newest_records(cli_settings)[-1]
    assert record.status == "ok" and record.verdict.passed, record.verdict
