"""The verdict that answers "which writer should I use": ranked passes, the rest apart with their
reason, the plot that shows it, and the report's first screens as a browser shows them."""

import os
from pathlib import Path

import pytest
from matplotlib.colors import to_hex
from matplotlib.image import imread
from rich.console import Console

from harness.base.caps import cgroup_parent
from harness.base.errors import IcebenchError
from harness.base.results import ResultsStore
from harness.cli import main as cli
from harness.cli import output
from harness.engines.writers.dlt import DltWriter
from harness.judge.oracle import OPERATION_COMPLETED, failed_check
from harness.model import RunRecord, Verdict
from harness.run.runner import Runner, RunPlan
from harness.services.stacks.embedded import EmbeddedStack
from reports.plots import (
    FAILED_RED,
    latency_figure,
    metrics_figure,
    peak_memory_figure,
    png_bytes,
    scan_figure,
    timeline_figure,
    verdict_figure,
)
from reports.report import write_report
from reports.screenshot import SCREEN_HEIGHT, chromium, plot_positions, screenshot
from reports.summary import left_text, verdict_text
from reports.terminal import as_blocks, fitted, needed_width, rich_table
from reports.verdict import reason_of, verdict_groups, verdict_table

CAP = 2**30
# Below what a Python worker with pyarrow and pyiceberg needs at all (~100 MiB anonymous once its
# libraries are loaded): the kernel kills it as it starts, recorded as the run's OOM.
STARVING_CAP = 64 * 2**20
BATCH_ROWS = 2000  # tiny in several batches: the naive trap reuses file names and loses rows


@pytest.fixture(scope="module")
def verdict_runs(settings, tiny_sets) -> tuple[Path, list[RunRecord]]:
    """Real tiny runs into a results folder of their own: two writers that pass, the trap that
    fails a check, a writer that cannot write (unsupported), and one OOM-killed under a tiny cap."""
    store = ResultsStore(settings.results_dir)
    runner = Runner(settings, store, EmbeddedStack(settings))
    plans = [
        RunPlan("append", writer, "tiny", tiny_sets, BATCH_ROWS, CAP)
        for writer in ("pyiceberg-add-files", "pyiceberg-commit-per-batch", "pyiceberg-fast-append-naive",
                       "duckdb")
    ]  # fmt: skip
    plans.append(RunPlan("upsert", "pyiceberg-table", "tiny", tiny_sets, BATCH_ROWS, CAP))
    records = [runner.run(plan) for plan in plans]
    if cgroup_parent() is not None:
        runner.starved_is_oom = True
        records.append(
            runner.run(RunPlan("append", "pyiceberg-table", "tiny", tiny_sets, BATCH_ROWS, STARVING_CAP))
        )
    return store.folder, records


def test_passing_writers_are_ranked_by_write_time_and_the_rest_listed_apart(verdict_runs):
    _, records = verdict_runs
    by_writer = {(r.writer, r.cap_bytes): r for r in records if r.scenario == "append"}
    groups = {(g.operation, g.cap_bytes): g for g in verdict_groups(records)}
    append = groups[("append", CAP)]
    ranked = [row.writer for row in append.ranked]
    assert sorted(ranked) == ["pyiceberg-add-files", "pyiceberg-commit-per-batch"]
    times = {w: by_writer[(w, CAP)].write_s for w in ranked}
    assert ranked == sorted(ranked, key=times.__getitem__)  # the faster writer first
    assert [row.rank for row in append.ranked] == [1, 2]
    for row in append.ranked:  # what owning the table costs: the write and 10 of each scan
        record = by_writer[(row.writer, CAP)]
        owned = record.write_s + 10 * (record.full_scan_s + record.selective_scan_s)
        assert (record.reads, record.total_cost_s) == (10, pytest.approx(owned))
        assert row.total_cost == f"{owned:.1f} s"  # no dollars: nothing counts requests on embedded

    apart = {row.writer: row for row in append.apart}
    assert apart["pyiceberg-fast-append-naive"].outcome == "FAIL"
    assert apart["pyiceberg-fast-append-naive"].rank is None
    reason = apart["pyiceberg-fast-append-naive"].reason  # its first failed check, and how many more
    assert reason.startswith("keys_unique: ") and "keys repeated" in reason and "more:" in reason
    assert apart["duckdb"].outcome == "unsupported"  # REST catalogs only
    assert apart["duckdb"].reason == "does not support this catalog"
    assert verdict_text(by_writer[("duckdb", CAP)], markup=False) == "unsupported"  # not a FAIL of its own
    assert [row.outcome for row in append.rows] == ["pass", "pass", "FAIL", "unsupported"]

    upsert = groups[("upsert", CAP)]
    assert [(row.writer, row.rank) for row in upsert.rows] == [("pyiceberg-table", 1)]


@pytest.mark.skipif(cgroup_parent() is None, reason="the kernel OOM killer needs a cgroup memory cap")
def test_an_oom_is_listed_with_its_cap(verdict_runs):
    _, records = verdict_runs
    (starved,) = [g for g in verdict_groups(records) if g.cap_bytes == STARVING_CAP]
    (row,) = starved.rows
    assert (row.outcome, row.rank) == ("OOM", None)
    assert row.reason.startswith("OOM-killed at the cap 64.0 MiB")


def test_an_oom_with_a_known_cause_links_its_issue():
    """dlt at `wide`: killed once every row was fed, its known cause linked in the verdict row."""
    error = (
        "OOM-killed by the kernel at a 4.0 GiB cap (oom_kill count 1), after all 1,000,000 rows were fed "
        f"to the writer: {DltWriter.oom_after_feed_cause.named()}"
    )
    record = RunRecord(
        run_id="synthetic", scenario="append", writer="dlt", preset="wide", stack="embedded",
        operation="append", status="oom", error=error, rows=1_000_000, batch_rows=10_000,
        isolation="cgroup", started_at="2026-01-01T00:00:00+00:00", cap_bytes=4 << 30,
        peak_memory_bytes=4_110_233_600,
        verdict=Verdict(passed=False, checks=[failed_check(OPERATION_COMPLETED, error)]),
    )  # fmt: skip
    assert reason_of(record) == "OOM-killed at the cap 4.0 GiB, peak 3.8 GiB [dlt-hub/dlt#3752]"


def synthetic_oom(**fields) -> RunRecord:
    return RunRecord(**{
        "run_id": "synthetic", "scenario": "append", "writer": "duckdb", "preset": "wide",
        "stack": "embedded", "operation": "append", "status": "oom", "error": "OOM-killed",
        "rows": 1_000_000, "batch_rows": 10_000, "isolation": "cgroup", "cap_bytes": 4 << 30,
        "started_at": "2026-01-01T00:00:00+00:00", "peak_memory_bytes": 3_970_000_000,
        "verdict": Verdict(passed=False, checks=[failed_check(OPERATION_COMPLETED, "OOM-killed")]),
        **fields,
    })  # fmt: skip


def test_an_oom_where_the_box_filled_names_the_box_and_what_the_write_left():
    """At `wide` in the 4 GiB box: the worker under its own cap, the box full (harness, oracle and
    worker); DuckDB's OOM left 4 files of 914 MB no metadata reaches."""
    record = synthetic_oom(
        oom_limit="harness box", box_cap_bytes=4 << 30, box_rss_at_kill_bytes=4_200_000_000,
        orphan_files=4, orphan_bytes=914_000_000,
    )  # fmt: skip
    assert reason_of(record) == (
        "OOM-killed when the 4.0 GiB harness box filled (rss 3.9 GiB), peak 3.7 GiB; left 4 files, 871.7 MiB"
    )
    assert verdict_text(record, markup=False) == "FAIL operation_completed; left 4 files, 871.7 MiB"
    worker_cap = synthetic_oom(oom_limit="worker cap", box_cap_bytes=4 << 30)
    assert reason_of(worker_cap) == "OOM-killed at the cap 4.0 GiB, peak 3.7 GiB"


def test_a_failed_write_shows_what_it_left_first_and_a_success_shows_nothing():
    error = synthetic_oom(
        status="error", error="worker died with exit code 1", orphan_files=1, orphan_bytes=2048
    )
    assert reason_of(error) == "left 1 file, 2.0 KiB; worker died with exit code 1"
    clean = synthetic_oom(
        status="error", error="worker died with exit code 1", orphan_files=0, orphan_bytes=0
    )
    assert reason_of(clean) == "worker died with exit code 1"
    assert left_text(synthetic_oom(status="ok", orphan_files=3, orphan_bytes=10)) == ""


def test_the_terminal_verdict_fits_100_columns(verdict_runs):
    _, records = verdict_runs
    console = Console(width=100, record=True)
    table = verdict_table(records)
    assert needed_width(table, console) <= 100  # rich would otherwise crop its right edge
    console.print(table)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 100
    for word in ("1 │ pyiceberg-", "pyiceberg-fast-append-naive", "FAIL: keys_unique", "unsupported:"):
        assert word in text, word


def test_the_terminal_summary_fits_100_columns_with_its_headers(verdict_runs, monkeypatch):
    """`icebench summary` in 100 columns: the summary too wide for a table narrowed to fit with
    its headers kept (the scenario folded into heading rows, metrics dropped from the right and
    named), every writer name whole (fast-append vs fast-append-naive), then the verdict."""
    folder, _ = verdict_runs
    console = Console(width=100, record=True)
    monkeypatch.setattr(output, "console", console)
    assert cli.main(["summary", str(folder)]) == 0
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= 100
    rule = next(i for i, line in enumerate(lines) if line.startswith("─") and "writer" in lines[i - 1])
    assert lines[rule - 1].split()[:2] == ["writer", "status"]  # the summary's headers, kept
    naive = [line for line in lines if line.startswith("pyiceberg-fast-append-naive ")]
    assert naive and naive[0].split()[1] == "ok" and "FAIL keys_unique" in naive[0]
    assert {"append", "upsert"} <= {line.strip() for line in lines}  # the scenarios as heading rows
    assert any(line.startswith("not shown in 100 columns: ") for line in lines)
    assert any("verdict" in line for line in lines[-40:])  # the terminal ends on the verdict

    wide = Console(width=400, record=True)
    monkeypatch.setattr(output, "console", wide)
    assert cli.main(["summary", str(folder)]) == 0
    assert "┃ scenario" in wide.export_text()  # room enough: the table itself


def test_a_narrow_table_keeps_its_headers_and_names_what_it_dropped():
    table = rich_table("t", ["name", "a long figure header", "another"], [["x" * 30, "1.0", "2"]], {1, 2})
    console = Console(width=40, record=True)
    console.print(fitted(table, console))
    assert [line.rstrip() for line in console.export_text().splitlines()] == [
        "                  t",
        "                                a long",
        "                                figure",
        "name                            header",
        "─" * 38,
        "x" * 30 + "     1.0",
        "not shown in 40 columns: another",
    ]
    assert fitted(table, Console(width=80)) is table
    console = Console(width=20, record=True)  # narrower than the name itself: a block per row
    console.print(fitted(table, console))
    assert console.export_text().splitlines()[0] == "t"
    two_lines = rich_table("c", ["key", "wall s"], [["append", "1.0 → 2.0\n[red]2.00x[/]"]], {1}, markup=True)
    console = Console(width=40, record=True)
    console.print(as_blocks(two_lines, console.width))
    assert console.export_text().splitlines()[-1] == "    wall s 1.0 → 2.0 2.00x"  # a cell is one line


def test_plots_mark_failed_runs(verdict_runs, tmp_path):
    """The verdict plot draws the failed writer as a red x with its name; bar plots hatch it."""
    _, records = verdict_runs
    figure = verdict_figure(records)
    assert figure is not None
    texts = [text.get_text() for axis in figure.axes for text in axis.texts]
    assert "FAIL" in texts and "pyiceberg-fast-append-naive  (FAIL)" in texts
    assert any(text.startswith("not supported: duckdb") for text in texts)
    colours = {
        to_hex(c) for axis in figure.axes for points in axis.collections for c in points.get_facecolor()
    }
    assert FAILED_RED in colours  # the red x of the failed run
    png = png_bytes(figure)
    assert png.startswith(b"\x89PNG")

    memory = peak_memory_figure(records)
    assert memory is not None
    bars = [patch for axis in memory.axes for patch in axis.patches]
    assert any(patch.get_hatch() for patch in bars)  # the failed run's bar
    labels = [text.get_text() for axis in memory.axes for text in axis.texts]
    assert " FAIL" in labels and " unsupported (not run)" in labels
    metrics = metrics_figure(records)
    assert metrics is not None
    assert any(patch.get_hatch() for axis in metrics.axes for patch in axis.patches)


@pytest.mark.parametrize("draw", [latency_figure, timeline_figure, scan_figure])
def test_a_panels_not_run_note_sits_below_its_x_label(verdict_runs, draw):
    """The note naming the writers a panel lacks (duckdb: unsupported) stands under the
    panel's x label, clear of it, whatever the panel's height (the scan plot's note once overlapped
    its label)."""
    _, records = verdict_runs
    figure = draw(records)
    assert figure is not None
    renderer = figure.canvas.get_renderer()
    figure.canvas.draw()
    notes = [
        (axis, text)
        for axis in figure.axes
        for text in axis.texts
        if "not run (unsupported): duckdb" in text.get_text()
    ]
    assert notes
    for axis, note in notes:
        label = axis.xaxis.label.get_window_extent(renderer)
        placed = note.get_window_extent(renderer)
        assert placed.y1 <= label.y0 and not placed.overlaps(label), (placed, label)
        assert abs(placed.x0 - axis.get_window_extent(renderer).x0) < 2  # flush with the panel


def _chromium_or_skip() -> None:
    """Under `make test` (ICEBENCH_REQUIRE_DOCKER=1: everything make installs is there) a missing
    browser fails the test; elsewhere it is skipped with how to install it."""
    try:
        chromium()
    except IcebenchError as missing:
        if os.environ.get("ICEBENCH_REQUIRE_DOCKER"):
            pytest.fail(f"{missing}: make test installs it (make browser)")
        pytest.skip(str(missing))


def test_the_report_shows_its_plots_within_the_first_screens(verdict_runs, tmp_path):
    """Rendered by headless Chromium at 1280 px wide: the verdict's plot starts within two
    screens of 800 px, and the screenshot of the first screens is not blank."""
    _chromium_or_skip()
    folder, _ = verdict_runs
    report = write_report(folder)
    page = report.html.read_text()
    verdict_plot = page.index('id="plot-verdict"')
    assert page.index("Verdict: which writer to use") < verdict_plot < page.index("<h2", verdict_plot)

    positions = plot_positions(report.html)
    top, height = positions["plot-verdict"]
    assert 0 < top < 2 * SCREEN_HEIGHT
    assert height > 200  # drawn at its size, not a broken image
    assert min(top for top, _ in positions.values()) == top  # the first plot of the page

    png = screenshot(report.html, tmp_path / "report.png")
    pixels = imread(png)
    assert pixels.shape[:2] == (2400, 1280)
    assert pixels[..., :3].std() > 0.05  # text, tables and plots, not a blank page
