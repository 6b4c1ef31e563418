"""The rounds workload: phases of N rounds by each writer on a table it wrote itself, the oracle
after every phase, degradation rates over the rounds, and the naive trap failing visibly."""

import pyarrow as pa
import pytest

from harness.base.errors import IcebenchError
from harness.base.results import ResultsStore, read_runs
from harness.cli.main import main
from harness.judge.oracle import capture_state, judge, replaced_files_deleted_check
from harness.model import Expectation
from harness.run.rounds import RoundsConfig, run_rounds
from harness.services.stacks import started
from harness.services.stacks.embedded import EmbeddedStack
from reports.report import write_report
from reports.rounds import degradation_rate, phase_series, rounds_rows
from scenarios.rounds import RoundsTable, subtract_ranges

ROUNDS = 2


@pytest.fixture(scope="module")
def rounds_records(settings):
    """Two rounds of append, upsert, replace by correct writers, the trap and an upserting one."""
    config = RoundsConfig(
        preset="tiny",
        writers=[
            "pyiceberg-add-files",
            "pyiceberg-fast-append-naive",
            "pyiceberg-txn-batches",
            "polars-sink",
        ],
        rounds=ROUNDS,
    )
    store = ResultsStore(settings.results_dir)
    return store, run_rounds(settings, config, store, EmbeddedStack(settings))


def by_phase(records, writer):
    return {(r.round, r.phase): r for r in records if r.writer == writer}


def failed_names(record):
    return {check.name for check in record.verdict.failed}


@pytest.mark.parametrize("writer", ["pyiceberg-add-files", "polars-sink"])
def test_every_phase_is_a_run_judged_on_the_writers_own_table(rounds_records, writer):
    _, records = rounds_records
    assert len(records) == 4 * ROUNDS * 3
    runs = by_phase(records, writer)
    for round_number in range(1, ROUNDS + 1):
        for phase in ("append", "replace"):
            record = runs[(round_number, phase)]
            assert record.status == "ok" and record.verdict.passed, record.verdict.failed
            assert record.scenario == "rounds" and record.peak_rss_bytes and record.write_s
        # neither has an upsert: recorded, and the table stays as it was for the next phase
        assert runs[(round_number, "upsert")].status == "unsupported"
    # The table grows within a round and restarts at each replace: round 2's append adds to
    # round 1's replacing set, so the table holds two sets' files.
    assert runs[(2, "append")].data_files == 2 * runs[(1, "append")].data_files


def test_upserts_apply_each_rounds_change_set(rounds_records):
    _, records = rounds_records
    runs = by_phase(records, "pyiceberg-txn-batches")
    for round_number in range(1, ROUNDS + 1):
        upsert = runs[(round_number, "upsert")]
        assert upsert.status == "ok" and upsert.verdict.passed, upsert.verdict.failed


def test_the_naive_trap_fails_visibly_its_replace_deletes_too_few_files(rounds_records):
    _, records = rounds_records
    runs = by_phase(records, "pyiceberg-fast-append-naive")
    append, replace = runs[(1, "append")], runs[(1, "replace")]
    assert append.status == "ok" and {"keys_unique", "data_files_listed_once"} <= failed_names(append)
    assert replace.status == "ok"
    assert {"replaced_files_deleted", "snapshot_summary_true"} <= failed_names(replace)
    checks = {c.name: c for c in replace.verdict.checks}
    deleted = checks["replaced_files_deleted"]
    assert deleted.actual < deleted.expected  # the dlt PR's "only 1-2 of 20 files deleted"
    assert "total-data-files" in checks["snapshot_summary_true"].reason
    assert replace.snapshot_summary["total-data-files"] != str(replace.data_files)


def test_the_rounds_table_rates_degradation_and_names_the_first_failure(rounds_records):
    _, records = rounds_records
    headers, rows, _ = rounds_rows(records)
    assert headers[:3] == ["writer", "phase", "passed"] and "Δ/round" in headers
    cells = {(row[0], row[1]): dict(zip(headers, row, strict=False)) for row in rows}
    assert cells[("pyiceberg-add-files", "append")]["passed"] == f"{ROUNDS}/{ROUNDS}"
    assert cells[("pyiceberg-add-files", "append")]["first failure"] == "-"
    assert cells[("pyiceberg-add-files", "upsert")]["first failure"].startswith("unsupported")
    naive = cells[("pyiceberg-fast-append-naive", "replace")]
    assert naive["passed"] == f"0/{ROUNDS}" and naive["first failure"].startswith("round 1:")
    series = {(s.writer, s.phase): s for s in phase_series(records)}
    appends = series[("pyiceberg-add-files", "append")]
    assert appends.rate("data_files") == pytest.approx(1.0)  # 1 set of files, then 2


def test_the_report_has_the_rounds_table_and_plot(rounds_records):
    store, _ = rounds_records
    report = write_report(store.folder)
    assert any(path.name == "rounds.png" for path in report.plots)
    assert "## Rounds" in report.markdown.read_text()
    assert {r.round for r in read_runs(store.folder) if r.scenario == "rounds"} == {1, 2}


def test_degradation_rate_is_the_mean_change_between_consecutive_rounds():
    assert degradation_rate([1.0, 2.0, 4.0]) == pytest.approx(1.0)
    assert degradation_rate([4.0, 2.0]) == pytest.approx(-0.5)
    assert degradation_rate([2.0, None, 3.0]) is None  # no two consecutive rounds succeeded
    assert degradation_rate([2.0, 3.0, None, 1.0]) == pytest.approx(0.5)
    assert degradation_rate([0.0, 1.0]) is None and degradation_rate([5.0]) is None


def test_the_expected_table_follows_the_phases():
    table = RoundsTable().after("append", 1).after("upsert", 1).after("append", 2)
    assert table.blocks == {1: "upserted", 2: "set"}
    assert RoundsTable().after("upsert", 3).blocks == {3: "changes"}  # nothing to update: all new
    assert table.after("replace", 2).blocks == {2: "set"}
    assert subtract_ranges([(0, 9), (20, 29)], [(5, 22)]) == [(0, 4), (23, 29)]
    assert subtract_ranges([(0, 9)], [(0, 9)]) == []


def test_a_replace_that_leaves_files_behind_fails_the_check(runner, tmp_path):
    """Damage: a 'replace' that deletes one of the two files the table held, then appends."""
    catalog = runner.stack.catalog_for_run(tmp_path, "damage").open()
    catalog.create_namespace_if_not_exists("bench")
    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table("bench.replaced", schema=schema)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    table.append(pa.table({"id": pa.array([3, 4], pa.int64())}))
    before = capture_state(table)
    assert before.data_file_entries == 2
    with table.transaction() as txn:
        txn.delete("id <= 2")  # the first file only
        txn.append(pa.table({"id": pa.array([5], pa.int64())}))
    verdict, _ = judge(
        table.refresh(),
        expected=Expectation(rows=3, checksum="0", key_ranges=[(3, 5)]),
        error=None,
        before=before,
        single_commit=False,
        outcome_checks=lambda evidence: [replaced_files_deleted_check(evidence)],
    )
    check = {c.name: c for c in verdict.checks}["replaced_files_deleted"]
    assert not check.passed and (check.expected, check.actual) == (2, 1)
    assert "delete 1 of the 2 data files" in check.reason


def test_bad_rounds_config_is_one_line(capsys, cli_settings):
    with pytest.raises(ValueError, match="phases are names from"):
        RoundsConfig(phases=["append", "vacuum"])
    with pytest.raises(ValueError):
        RoundsConfig(rounds=1)  # no degradation from one round
    for phases in (["upsert", "append"], ["replace", "append"]):
        with pytest.raises(ValueError, match="appends first"):
            RoundsConfig(phases=phases)
    with pytest.raises(IcebenchError, match="unknown writer"):
        RoundsConfig(writers=["nope"]).resolved()
    code = main(["rounds", "--preset", "tiny", "--writers", "nope"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nope" in err


def test_duckdb_rounds_through_the_rest_catalog(services_settings):
    """DuckDB writes only through a REST catalog: its rounds on the local-services stack. Its
    deletes are position deletes, so a replace leaves the old files listed under deletes."""
    store = ResultsStore(services_settings.results_dir)
    config = RoundsConfig(preset="tiny", writers=["duckdb"], rounds=ROUNDS)
    with started(services_settings, store.folder / "services") as stack:
        records = run_rounds(services_settings, config, store, stack)
    assert len(records) == ROUNDS * 3
    for record in records:
        assert record.stack == "local-services"
        failed = [f"{c.name}: {c.reason}" for c in record.verdict.failed] if record.verdict else []
        assert record.status == "ok" and record.verdict.passed, (
            record.round,
            record.phase,
            record.error,
            failed,
        )
    replace = by_phase(records, "duckdb")[(ROUNDS, "replace")]
    checks = {c.name: c for c in replace.verdict.checks}
    assert checks["replaced_files_deleted"].actual == "delete files mask the old rows"


def test_library_variants_take_their_rounds_in_turn_each_on_a_table_of_its_own(settings):
    """--fileio (or --pyiceberg ...) in rounds: each variant's writer on a table of its own, the
    variants interleaved phase by phase; the rounds table tells them apart."""
    with_variants = settings.model_copy(update={"file_ios": ["pyarrow", "fsspec"]})
    config = RoundsConfig(
        preset="tiny", writers=["pyiceberg-add-files"], rounds=2, phases=["append", "replace"]
    )
    store = ResultsStore(settings.results_dir)
    records = run_rounds(with_variants, config, store, EmbeddedStack(settings))
    assert [(r.round, r.phase, r.variant) for r in records] == [
        (round_number, phase, f"fileio {name}")
        for round_number in (1, 2)
        for phase in ("append", "replace")
        for name in ("pyarrow", "fsspec")
    ]
    assert all(r.status == "ok" and r.verdict.passed for r in records), [r.error for r in records]
    assert {series.writer for series in phase_series(records)} == {
        "pyiceberg-add-files [fileio pyarrow]",
        "pyiceberg-add-files [fileio fsspec]",
    }


def test_a_variant_that_changes_none_of_the_writers_is_one_line(capsys, cli_settings):
    code = main(["rounds", "--preset", "tiny", "--writers", "duckdb", "--fileio", "fsspec"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == "icebench: error: --fileio fsspec: changes none of the writers here (duckdb)"
