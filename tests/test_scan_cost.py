"""The downstream scans after every write (harness/judge/scan_cost.py): what they plan and return
tells write strategies apart, a table the readers cannot plan is a recorded failure, the full
scan times its reader and not the oracle, and the setting turns them off. No test holds a
time beyond that."""

import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent, ManifestWriterV2
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.typedef import Record

from generators.keys import KeySpace
from generators.schema import KEY_COLUMN
from harness.base.results import ResultsStore, read_report
from harness.base.settings import load_settings
from harness.cli.main import build_parser
from harness.engines.spark import missing_jars
from harness.judge.readback import _Clock, _prefetched, _read_ahead, _timed, read_content
from harness.judge.scan_cost import (
    FULL_SCAN_ERROR,
    SCAN_PROGRAM,
    SELECTIVE_FRACTION,
    ScanReport,
    ScanSpec,
    both_scans,
    full_scan_figures,
    key_span,
)
from harness.run.classify import scan_figures
from harness.run.runner import Runner, RunPlan
from harness.services.launcher import Launch
from harness.services.stacks.embedded import EmbeddedStack

READS_SCANS = True  # tests/conftest.py's runner keeps the downstream scans

SPARK_CAP = 2 << 30  # Spark's driver heap is 60% of the cap (tests/test_spark.py)


def plan(runner: Runner, scenario: str, writer: str, sets, cap_bytes: int = 1 << 30) -> RunPlan:
    return RunPlan(scenario, writer, "tiny", sets, runner.settings.batch_rows, cap_bytes=cap_bytes)


def test_small_files_plan_more_files_and_a_key_range_prunes_them(runner, tiny_sets):
    """A commit per 2,000-row batch leaves 5 files of disjoint keys; the materialising writer
    one. (pyiceberg-add-files also writes a file per batch, so it is not the contrast here.)"""
    per_batch = runner.run(plan(runner, "append", "pyiceberg-commit-per-batch", tiny_sets))
    one_file = runner.run(plan(runner, "append", "pyiceberg-table", tiny_sets))
    for record in (per_batch, one_file):
        assert record.scan_error is None and record.full_scan_rows == record.rows == 10_000
        assert record.selective_scan_rows == 100  # the first 1% of keys 0..9,999
        assert record.full_scan_delete_files == record.selective_scan_delete_files == 0
        assert record.scan_peak_rss_bytes and record.full_scan_s and record.selective_scan_s
    assert (per_batch.full_scan_files, one_file.full_scan_files) == (5, 1)
    assert per_batch.full_scan_files == per_batch.data_files  # what the oracle counted
    assert per_batch.selective_scan_files == 1  # its files' key statistics prune the other 4
    assert one_file.selective_scan_files == 1


def test_the_scan_reads_the_table_a_failed_write_left(runner, tiny_sets):
    """pyiceberg's upsert after a schema change fails (#2467): the table is at its previous
    snapshot, and the scan reads that."""
    record = runner.run(plan(runner, "schema-evolution-upsert", "pyiceberg-txn-batches", tiny_sets))
    assert record.status == "error" and record.scan_error is None
    assert record.full_scan_rows == tiny_sets["base"].manifest.rows
    assert record.selective_scan_rows and record.selective_scan_rows < record.full_scan_rows


def test_scan_cost_off_measures_nothing(settings, tiny_sets):
    writes_only = settings.model_copy(update={"scan_cost": False})
    runner = Runner(writes_only, ResultsStore(writes_only.results_dir), EmbeddedStack(writes_only))
    record = runner.run(plan(runner, "append", "pyiceberg-fast-append", tiny_sets))
    assert record.status == "ok" and record.verdict.passed
    scan = {name: value for name, value in record.model_dump().items() if "scan" in name}
    assert scan and all(value is None for value in scan.values()), scan
    assert not list((runner.store.folder / "work").glob("*/scan-spec.json"))


def selective(ranges: list[tuple[int, int]]) -> tuple[int, int]:
    (bounds,) = KeySpace().selective(key_span(ranges), SELECTIVE_FRACTION).bounds
    return bounds[1], bounds[2]


def test_selective_keys_are_the_first_percent_of_the_span():
    assert selective([(0, 9_999)]) == (0, 99)
    assert selective([(0, 9_999), (10_000, 10_999)]) == (0, 109)  # base and inserted keys
    assert selective([(5, 7)]) == (5, 5)  # at least one key
    assert selective([]) == (0, 0)  # an empty table: one key, none found


# --- A table pyiceberg 0.12 cannot plan: an equality delete file -----------------------------


class _DeleteManifestWriter(ManifestWriterV2):
    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _EqualityDeleteCommit(_FastAppendFiles):
    """Commits its files in a delete manifest: pyiceberg writes no equality deletes itself, so
    the test adds one entry the way a writer that does (Flink, the sidequery fork) leaves it."""

    def new_manifest_writer(self, spec):
        return _DeleteManifestWriter(
            spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression
        )


def _with_equality_delete(tmp_path) -> tuple[dict[str, str], str]:
    properties = {
        "type": "sql",
        "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"file://{tmp_path}/w",
    }
    catalog = SqlCatalog("icebench", **properties)
    catalog.create_namespace("scan")
    rows = pa.table({KEY_COLUMN: pa.array(range(1_000), pa.int64()), "value": pa.array(["x"] * 1_000)})
    table: Table = catalog.create_table("scan.equality", schema=rows.schema)
    table.append(rows)
    deleted = f"{table.location()}/data/equality-delete.parquet"
    pq.write_table(rows.select([KEY_COLUMN]).slice(0, 10), deleted.removeprefix("file://"))
    delete_file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=deleted,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=10,
        file_size_in_bytes=len(table.io.new_input(deleted)),
        equality_ids=[table.schema().find_field(KEY_COLUMN).field_id],
    )
    delete_file.spec_id = table.spec().spec_id
    with (
        table.transaction() as transaction,
        _EqualityDeleteCommit(Operation.DELETE, transaction, table.io) as commit,
    ):
        commit.append_data_file(delete_file)
    return properties, "scan.equality"


def test_an_equality_delete_is_a_recorded_scan_failure_not_a_crash(tmp_path):
    catalog, table = _with_equality_delete(tmp_path)
    spec = ScanSpec(catalog=catalog, table=table, keys=(0, 9), result_path=tmp_path / "scan-result.json")
    spec_path = tmp_path / "scan-spec.json"
    spec_path.write_text(spec.model_dump_json())
    done = subprocess.run([sys.executable, *SCAN_PROGRAM, str(spec_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr  # it reports the failure; it does not die of it
    report = read_report(spec.result_path, ScanReport)
    assert report is not None and report.status == "error" and report.selective is None
    assert (
        report.error.startswith("selective scan: ")
        and "does not yet support equality deletes" in report.error
    )

    # The full scan is the oracle's read, which sets the deletes aside: pyiceberg's refusal instead.
    loaded = SqlCatalog("icebench", **catalog).load_table(table)
    full = full_scan_figures(loaded, read_content(loaded))
    assert (
        list(full) == [FULL_SCAN_ERROR] and "does not yet support equality deletes" in full[FULL_SCAN_ERROR]
    )

    launched = Launch(returncode=0, wall_s=1.0, peak_memory_bytes=None, oom_kills=0, timed_out=False)
    figures = both_scans(
        full, scan_figures(launched, report, tmp_path / "scan.log", isolation="none", timeout_s=60)
    )
    assert figures["scan_error"].startswith("full scan: ") and "; selective scan: " in figures["scan_error"]
    assert "full_scan_s" not in figures and "selective_scan_s" not in figures


def test_read_ahead_asks_only_for_local_files_that_are_there(tmp_path):
    for path in ("s3://bucket/data.parquet", f"file://{tmp_path}/missing.parquet", str(tmp_path)):
        _read_ahead(path)  # nothing to ask, or nothing to read: the read itself will say why


def test_the_full_scan_times_its_reader_not_the_oracle_behind_it():
    """The reader's own time counts; while it waits for a slower consumer (the hashing), not."""
    clock = _Clock()

    def reader():
        for item in range(4):
            time.sleep(0.05)
            yield item

    for _ in _prefetched(_timed(reader(), clock), 1):
        time.sleep(0.25)  # the oracle is the slower side: the reader waits 0.6 s in all
    assert 0.2 <= clock.seconds < 0.5, clock.seconds


def test_a_scan_process_that_died_is_its_recorded_error(tmp_path):
    killed = Launch(returncode=-9, wall_s=1.0, peak_memory_bytes=2**30, oom_kills=1, timed_out=False)
    figures = scan_figures(killed, None, tmp_path / "scan.log", isolation="cgroup", timeout_s=60)
    assert figures["scan_error"].startswith("scan process: OOM-killed by the kernel")


# --- Spark merge-on-read: position delete files the scan must apply --------------------------


@pytest.mark.skipif(bool(missing_jars()), reason="Spark jars missing: run make spark-jars")
def test_after_a_merge_on_read_upsert_the_scan_counts_and_applies_delete_files(runner, tiny_sets):
    pytest.importorskip("pyspark")
    record = runner.run(plan(runner, "upsert", "spark-mor", tiny_sets, cap_bytes=SPARK_CAP))
    assert record.status == "ok" and record.verdict.passed, record.error
    assert record.scan_error is None
    assert record.full_scan_delete_files and record.full_scan_delete_files >= 1
    expected = tiny_sets["changes"].manifest.expected_after_upsert
    assert record.full_scan_rows == expected.rows  # the deletes applied: no row twice
    assert record.selective_scan_rows and record.selective_scan_rows < record.full_scan_rows


def test_no_scan_cost_is_a_flag_and_a_setting(monkeypatch):
    parse = build_parser().parse_args
    assert parse(["run", "--scenario", "append", "--writer", "pyiceberg-table"]).scan_cost is None
    flagged = parse(["matrix", "--no-scan-cost"])
    assert flagged.scan_cost is False
    assert load_settings(None, scan_cost=None).scan_cost is True  # on by default
    assert load_settings(None, scan_cost=flagged.scan_cost).scan_cost is False
    monkeypatch.setenv("ICEBENCH_SCAN_COST", "false")
    assert load_settings(None).scan_cost is False
