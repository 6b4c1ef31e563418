"""Tables at 80 columns keep their headers: `icebench writers` and `icebench summary` narrowed by
priority (headers wrapped, a repeating column folded, columns dropped and named) instead of one
block per row, and the summary stays about as long as at 160 columns. Rendered with rich
Consoles of a fixed width, on synthetic records (nothing is run)."""

import pytest
from rich.console import Console
from rich.table import Table

from harness.base.results import ResultsStore
from harness.cli import main as cli
from harness.cli import output
from harness.engines.writers import writers
from harness.model import Check, RunRecord, Verdict, metrics
from reports.summary import summary_table
from reports.terminal import fitted, keep_first, rich_table

SCENARIOS = ("append", "replace", "upsert", "schema-evolution-upsert", "upsert-racing-append")
NAMES = (
    "daft", "dlt", "dlt-iceberg", "duckdb", "iceberg-rust", "polars-sink", "polars-write",
    "pyiceberg-add-files", "pyiceberg-commit-per-batch", "pyiceberg-delete-add-files",
    "pyiceberg-equality-delete", "pyiceberg-fast-append", "pyiceberg-fast-append-naive",
    "pyiceberg-reader", "pyiceberg-rewrite-add-files", "pyiceberg-table", "pyiceberg-txn-batches",
)  # fmt: skip


def record(scenario: str, writer: str, index: int) -> RunRecord:
    """A run as a matrix leaves it: most pass; the naive trap fails checks, duckdb cannot write."""
    unsupported = writer == "duckdb"
    failing = ("keys_unique", "key_set", "content_checksum", "row_count") if "naive" in writer else ()
    checks = [Check(name=name, passed=name not in failing, reason="wrong" if name in failing else None)
              for name in ("row_count", "keys_unique", "key_set", "content_checksum")]  # fmt: skip
    return RunRecord(
        run_id="synthetic", scenario=scenario, writer=writer, preset="small", stack="embedded",
        operation="upsert" if "upsert" in scenario else scenario,
        status="unsupported" if unsupported else "ok",
        error=f"{writer} does not support writing" if unsupported else None,
        rows=200_000, batch_rows=10_000, batches=20, wall_s=3.0 + index, write_s=2.0 + index,
        verify_s=1.2, late_early_ratio=1.1, snapshots_added=3, data_files=12, manifests=3,
        metadata_files=5, metadata_bytes=123_456, orphan_files=0, full_scan_s=0.8,
        peak_memory_bytes=(400 + index) * 2**20, peak_rss_bytes=(300 + index) * 2**20,
        isolation="cgroup", cap_bytes=2**31,
        verdict=None if unsupported else Verdict(passed=not failing, checks=checks),
        started_at="2026-01-01T00:00:00+00:00",
    )  # fmt: skip


@pytest.fixture(scope="module")
def matrix_folder(tmp_path_factory):
    store = ResultsStore(tmp_path_factory.mktemp("results"), run_id="20260101-000000-aaaaaa")
    for scenario in SCENARIOS:
        for index, writer in enumerate(NAMES):
            store.append(record(scenario, writer, index))
    return store.folder


def printed(monkeypatch, width: int, *args: str) -> list[str]:
    console = Console(width=width, record=True)
    monkeypatch.setattr(output, "console", console)
    assert cli.main(list(args)) == 0
    return console.export_text().splitlines()


def headed(lines: list[str], *headers: str) -> list[str]:
    """The header lines (those above a table's rule, wrapped headers being several) of the first
    table whose headers hold every one of `headers` as a word."""
    for index, line in enumerate(lines):
        if line.startswith("─"):
            above = lines[max(index - 3, 0) : index]
            if set(headers) <= {word for line in above for word in line.split()}:
                return above
    raise AssertionError(f"no table has the headers {headers}")


def test_writers_at_80_columns_keep_their_headers_and_every_name(monkeypatch):
    lines = printed(monkeypatch, 80, "writers")
    assert max(len(line) for line in lines) <= 80
    expected = ["writer", "append", "replace", "upsert", "commits"]
    assert headed(lines, "writer", "commits")[-1].split()[: len(expected)] == expected
    words = {word for line in lines for word in line.split()}
    assert set(writers()) <= words  # every name whole, never cut at the edge
    # The descriptions follow the table, a line per writer, under their own header.
    assert "what it does" in [line.strip() for line in lines]
    daft = [line for line in lines if line.startswith("daft ") and "yes" in line.split()]
    assert daft, "daft's row of the table"
    assert not any(line.startswith("    what it does") for line in lines)  # no block per row


def test_the_summary_at_80_columns_keeps_headers_and_stays_compact(monkeypatch, matrix_folder):
    narrow = printed(monkeypatch, 80, "summary", str(matrix_folder))
    wide = printed(monkeypatch, 160, "summary", str(matrix_folder))
    assert max(len(line) for line in narrow) <= 80
    assert len(narrow) <= 3 * len(wide), (len(narrow), len(wide))
    # The summary's headers (its scenario column folded into heading rows at this width) ...
    headed(narrow, "writer", "status", "verdict")
    # ... and the verdict table's.
    headed(narrow, "#", "writer", "result")
    assert "pyiceberg-fast-append-naive" in {word for line in narrow for word in line.split()}
    assert any("FAIL row_count," in line for line in narrow)
    assert any(line.startswith("not shown in 80 columns: ") for line in narrow)
    # The verdict and the summary together under three lines a run (a block per run took 5 or more).
    runs = len(SCENARIOS) * len(NAMES)
    assert len(narrow) < 3 * runs


def test_a_summary_too_wide_drops_metrics_from_the_right_and_keeps_the_verdict():
    records = [record("append", writer, index) for index, writer in enumerate(NAMES[:4])]
    console = Console(width=100, record=True)
    console.print(fitted(summary_table(records, title="t"), console))
    lines = console.export_text().splitlines()
    header = " ".join(headed(lines, "writer", "status", "peak", "rss", "verdict"))
    rightmost = [metric.label for metric in metrics("run") if metric.summary][-1]
    assert rightmost not in header  # the rightmost metric went first
    hidden = " ".join(lines[next(i for i, line in enumerate(lines) if line.startswith("not shown in 100")) :])
    assert hidden.split()[-len(rightmost.split()) :] == rightmost.split()
    assert lines[4].strip() == "append"  # the scenario, folded into a heading row


def test_a_repeating_first_column_becomes_heading_rows():
    rows = [
        [scenario, f"writer-{i}", f"{i}.0", "x" * 40] for scenario in ("append", "upsert") for i in range(3)
    ]
    table = rich_table("runs", ["scenario", "writer", "wall s", "note"], rows, {2})
    console = Console(width=60, record=True)
    console.print(fitted(table, console))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert "append" in lines and "upsert" in lines  # heading rows of their own
    assert headed(lines, "writer", "wall", "note")[-1].split()[0] == "writer"  # scenario is no column


def test_columns_named_to_keep_are_dropped_last():
    """The middle column named: the two others go (the rightmost first), it stays."""
    rows = [["name-1", "1.0", "2.0", "3.0"]]
    table = rich_table("t", ["name", "aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"], rows, {1, 2, 3})
    console = Console(width=20, record=True)
    console.print(fitted(keep_first(table, "bbbbbbbbbb"), console))
    lines = console.export_text().splitlines()
    assert lines[1].split() == ["name", "bbbbbbbbbb"] and lines[3].split() == ["name-1", "2.0"]
    assert " ".join(" ".join(lines[4:]).split()) == "not shown in 20 columns: aaaaaaaaaa, cccccccccc"


def test_a_dropped_text_column_follows_the_table_row_by_row():
    table = Table(title="writers")
    for header in ("writer", "append", "upsert"):
        table.add_column(header, no_wrap=True)
    table.add_column("what it does")
    table.add_row("pyiceberg-table", "yes", "unsupported", "whole source as one pa.Table; table.append")
    table.add_row("dlt", "yes", "yes", "a_very_long_identifier_that_cannot_wrap_anywhere_at_all")
    console = Console(width=50, record=True)
    console.print(fitted(table, console))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert headed(lines, "writer", "append", "upsert")
    assert "unsup." in lines[3]  # abbreviated to fit
    listed = lines[lines.index("what it does") + 1 :]
    assert listed[0].startswith("pyiceberg-table") and "whole source" in listed[0]
    assert any(line.startswith("dlt ") for line in listed)


def test_a_table_that_fits_is_left_alone_and_one_too_narrow_for_its_names_is_blocks():
    table = rich_table("t", ["name", "value"], [["x" * 30, "1.0"]], {1})
    assert fitted(table, Console(width=80)) is table
    console = Console(width=20, record=True)
    console.print(fitted(table, console))
    lines = console.export_text().splitlines()
    assert lines[0] == "t" and lines[-1] == "    value 1.0"  # a block: the name, then its figures
