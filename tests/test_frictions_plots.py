"""The report's plots read alike from panel to panel and never hide a failed run: every panel of
a figure on the same kind of axis, and a run that did not pass drawn above the passes. Asserted
on matplotlib's artists, on synthetic records (nothing is run)."""

import matplotlib.colors
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure

from harness.model import Check, RunRecord, Verdict
from reports.fits import fits
from reports.plots import (
    FAIL_ZORDER,
    FAILED_RED,
    latency_figure,
    requests_figure,
    rounds_figure,
    scale_figure,
    timeline_figure,
    verdict_figure,
)

MIB = 2**20
CHECKS = ("row_count", "keys_unique", "content_checksum")


def record(scenario: str, writer: str, write_s: float, peak_mib: float, **fields) -> RunRecord:
    failing = fields.pop("failing", ())
    status = fields.pop("status", "ok")
    checks = [Check(name=name, passed=name not in failing, reason="wrong" if name in failing else None)
              for name in CHECKS]  # fmt: skip
    return RunRecord(**{
        "run_id": "synthetic", "scenario": scenario, "writer": writer, "preset": "tiny",
        "stack": "embedded", "operation": "upsert" if "upsert" in scenario else scenario,
        "status": status, "rows": 10_000, "batch_rows": 2_000, "batches": 5, "wall_s": write_s + 0.5,
        "write_s": write_s, "peak_memory_bytes": int(peak_mib * MIB * 1.5),
        "peak_rss_bytes": int(peak_mib * MIB), "isolation": "cgroup", "cap_bytes": 2**30,
        "verdict": Verdict(passed=not failing and status == "ok", checks=checks),
        "started_at": "2026-01-01T00:00:00+00:00", **fields,
    })  # fmt: skip


def panels(figure: Figure) -> list[Axes]:
    """The plotting panels (the verdict figure's ranked lists beside them are axes too, turned off)."""
    return [axis for axis in figure.axes if axis.axison]


def red(collection: PathCollection) -> bool:
    colours = collection.get_facecolor()
    return len(colours) > 0 and matplotlib.colors.to_hex(colours[0]) == FAILED_RED


def fail_and_pass_zorders(axis: Axes) -> tuple[list[float], list[float]]:
    """The z-orders of the red fail marks and of everything else drawn as a marker or a label."""
    fails = [c.get_zorder() for c in axis.collections if red(c)]
    others = [c.get_zorder() for c in axis.collections if not red(c)]
    others += [line.get_zorder() for line in axis.get_lines()]
    others += [text.get_zorder() for text in axis.texts if text.get_color() != FAILED_RED]
    return fails, others


def test_every_verdict_panel_has_a_log_time_axis_and_a_linear_memory_axis():
    """A narrow append (1.0-1.2 s) and a wide upsert (2-40 s) on the same kind of axis: the upsert
    panel once went log while the append panel stayed linear."""
    records = [
        record("append", "pyiceberg-table", 1.0, 200),
        record("append", "pyiceberg-add-files", 1.2, 150),
        record("upsert", "pyiceberg-table", 2.0, 300),
        record("upsert", "pyiceberg-commit-per-batch", 40.0, 250),
        record("schema-evolution-upsert", "pyiceberg-table", 3.0, 320),
    ]
    figure = verdict_figure(records)
    assert figure is not None
    shown = panels(figure)
    assert len(shown) == 3  # append, upsert, schema-evolution-upsert
    assert {axis.get_xscale() for axis in shown} == {"log"}
    assert {axis.get_yscale() for axis in shown} == {"linear"}
    for axis in shown:  # a narrow span still gets ticks either side of its points
        low, high = axis.get_xlim()
        assert high / low >= 6
        assert len([tick for tick in axis.get_xticks() if low <= tick <= high]) >= 2


def test_a_failed_run_at_the_same_spot_as_a_pass_is_drawn_above_it():
    records = [
        record("append", "pyiceberg-table", 1.0, 200),
        record("append", "pyiceberg-fast-append-naive", 1.0, 200, failing=("keys_unique",)),
        record("append", "dlt", 1.0, 200, status="oom", cap_bytes=2**30),
        record("append", "duckdb", 1.0, 200, status="error", error="worker died"),
    ]
    figure = verdict_figure(records)
    assert figure is not None
    (axis,) = panels(figure)
    fails, others = fail_and_pass_zorders(axis)
    assert len(fails) == 3  # FAIL, OOM and error, each a mark of its own
    assert min(fails) > max(others)
    marks = [c for c in axis.collections if red(c)]
    passes = [c for c in axis.collections if not red(c)]
    # A shape of its own (an X), not the pass's circle in another colour.
    assert {m.get_paths()[0].vertices.shape for m in marks}.isdisjoint(
        {p.get_paths()[0].vertices.shape for p in passes}
    )


def test_failed_scale_points_are_drawn_above_the_line_and_its_points():
    points = [
        record("append", "pyiceberg-txn-batches", 0.1 * n, 100, batch_rows=50, rows=50 * n, limit_rows=50 * n)
        for n in (50, 100, 200)
    ]
    points.append(
        record("append", "pyiceberg-txn-batches", 0.5, 1000, status="oom", batch_rows=50, rows=400 * 50,
               limit_rows=400 * 50)
    )  # fmt: skip
    figure = scale_figure(fits(points))
    assert figure is not None
    (axis,) = panels(figure)
    fails, others = fail_and_pass_zorders(axis)
    assert fails and min(fails) == FAIL_ZORDER > max(others)


def test_failed_rounds_and_a_failed_worker_timeline_end_above_the_lines():
    failing = {2: ("row_count",)}  # the second round's verdict failed
    rounds = [
        record("append", "pyiceberg-table", 1.0, 100, round=n, phase="append", failing=failing.get(n, ()))
        for n in (1, 2, 3)
    ]
    figure = rounds_figure(rounds)
    assert figure is not None
    with_values = [axis for axis in panels(figure) if axis.get_lines()[0].get_ydata()[1] > 0]
    marked = [fail_and_pass_zorders(axis) for axis in with_values]
    assert len(marked) == 2  # write time and resident peak: the metrics these records carry
    for fails, others in marked:
        assert len(fails) == 1 and min(fails) > max(others)
    timeline = [(0.1 * i, i * MIB, 0) for i in range(1, 20)]
    runs = [
        record("append", "pyiceberg-table", 1.0, 100, memory_timeline=timeline),
        record("append", "dlt", 1.0, 100, status="oom", memory_timeline=timeline),
    ]
    figure = timeline_figure(runs)
    assert figure is not None
    (axis,) = panels(figure)
    fails, others = fail_and_pass_zorders(axis)
    assert len(fails) == 1 and min(fails) > max(others)


@pytest.mark.parametrize("spread", [False, True])
def test_latency_panels_share_one_y_scale(spread):
    """One row's latencies spanning decades put every panel on a log axis, not that row's alone."""
    flat = [0.01] * 6
    rising = [0.01 * 30**i for i in range(6)] if spread else [0.011, 0.012, 0.013, 0.014, 0.015, 0.016]
    records = [
        record("append", "pyiceberg-table", 1.0, 100, step_latencies_s=flat, commit_latencies_s=flat),
        record("upsert", "pyiceberg-table", 1.0, 100, step_latencies_s=rising, commit_latencies_s=rising),
    ]
    figure = latency_figure(records)
    assert figure is not None
    scales = {axis.get_yscale() for axis in panels(figure) if axis.get_lines()}
    assert scales == ({"log"} if spread else {"linear"})


def test_the_requests_plot_stacks_each_writes_requests_by_kind():
    """A bar per write, its segments the kinds the counter saw, as long as all its requests; a kind
    the plot does not know is drawn as other, never dropped. Runs on a stack that counted nothing
    (embedded) make no figure."""
    assert requests_figure([record("append", "pyiceberg-table", 1.0, 200)]) is None
    counted = {"write_requests_usd": 0.001, "object_store_bytes": {"in": 5 * MIB, "out": 0}}
    records = [
        record("append", "spark", 2.0, 300, object_store_requests={"put": 6, "upload_part": 20, "head": 2},
               full_scan_requests=30, **counted),
        record("append", "duckdb", 3.0, 300, object_store_requests={"put": 4, "post_object": 3}, **counted),
    ]  # fmt: skip
    figure = requests_figure(records)
    assert figure is not None
    (axis,) = panels(figure)
    lengths: dict[float, float] = {}
    for bar in axis.patches:
        lengths[bar.get_y()] = max(lengths.get(bar.get_y(), 0), bar.get_x() + bar.get_width())
    assert sorted(lengths.values()) == [7, 28]  # duckdb's 4 + 3 other, spark's 6 + 20 + 2
    legend = {text.get_text() for legend in figure.legends for text in legend.get_texts()}
    assert legend == {"put", "upload_part", "head", "other"}
    assert any("full scan 30" in text.get_text() for text in axis.texts)
