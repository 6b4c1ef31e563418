"""Matplotlib figures of a results folder: what a person would rather look at than read.

Each function takes run records (or the growth fits of their scale points) and returns a
Figure; reports/report.py embeds them. Repeated runs of one pair are shown once, by their
median-wall-time run.
"""

from __future__ import annotations

import hashlib
import io
import math
import statistics
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Sequence

import matplotlib
import matplotlib.colors
import matplotlib.lines
import matplotlib.patches
import matplotlib.patheffects
import matplotlib.ticker

matplotlib.use("Agg")  # files only, never a window

import matplotlib.pyplot as plt
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.base.caps import format_size
from harness.base.row_counts import rows_text
from harness.model import Metric, RunRecord, metrics, run_key
from reports.caps import CapFigure, cap_figures, table_text
from reports.fits import Fit, point_batches
from reports.rounds import followed_metrics, phase_series
from reports.rows import PROJECTED_ROWS, RowsFit, rows_metrics
from reports.summary import metric_text, writer_text
from reports.verdict import VerdictGroup, VerdictRow, cap_text, outcome_of, verdict_groups

MIB = 2**20
STATUS_COLOURS = {"ok": "#4c72b0", "oom": "#c44e52", "error": "#8c8c8c"}
FAILED_RED = "#c44e52"
# Every figure marks a run that did not pass (FAIL, OOM, error) the same way: a filled red X,
# outlined in white, drawn above the pass markers and their rank numbers, so that a failure at
# the same spot as a pass is never hidden under it.
PASS_ZORDER = 3
FAIL_ZORDER = 6
FAIL_MARKER = "X"
# Write times on a log axis must be positive: a failed run that ended at once is drawn here.
MIN_SECONDS = 0.01


def representatives(records: Iterable[RunRecord], unsupported: bool = False) -> list[RunRecord]:
    """One run per pair: the one with the median wall time among its repeats (ran ones only, or
    the unsupported too where a figure shows their empty slot; the points of scale runs, fed
    prefixes of the source, are shown by the scale plots)."""
    groups: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        if (unsupported or record.status != "unsupported") and record.limit_rows is None:
            groups[run_key(record).text].append(record)
    chosen = []
    for group in groups.values():
        group.sort(key=lambda r: r.wall_s if r.wall_s is not None else float("inf"))
        chosen.append(group[(len(group) - 1) // 2])
    return chosen


def status_word(record: RunRecord) -> str | None:
    """FAIL, OOM, ERROR, UNSUPPORTED (or UNJUDGED) for a run that did not pass; None for a pass."""
    outcome = outcome_of(record)
    return None if outcome == "pass" else outcome.upper()


def _bar_style(record: RunRecord) -> dict[str, object]:
    """A run's bar: blue for a pass, red for an OOM, hatched for a failed check or an error
    (the figures of a table that is not what the run should have left)."""
    word = status_word(record)
    if word is None:
        return {"color": STATUS_COLOURS["ok"]}
    if word == "OOM":
        return {"color": FAILED_RED}
    return {"color": "#e8c4c5" if word == "FAIL" else "#d0d0d0", "hatch": "///", "edgecolor": "#7a3b3d"}


def _legend_outside(axis: Axes, **options: object) -> None:
    """The legend right of the panel, never over its data."""
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **options)


def fail_marks(
    axis: Axes, x: float | Sequence[float], y: float | Sequence[float], size: float = 90
) -> PathCollection:
    """The mark of a run that did not pass: FAIL_MARKER in red above every pass marker."""
    return axis.scatter(
        x, y, s=size, marker=FAIL_MARKER, color=FAILED_RED, edgecolor="white", linewidths=0.6,
        zorder=FAIL_ZORDER,
    )  # fmt: skip


def log_seconds_axis(axis: Axes, seconds: Sequence[float]) -> None:
    """Write time on a log x axis, labelled at 1-2-5 steps as plain numbers, spanning at least
    0.4x-2.5x of its points' geometric centre (a narrow span would have no tick at all)."""
    low, high = max(min(seconds), MIN_SECONDS), max(max(seconds), MIN_SECONDS)
    centre, half = math.sqrt(low * high), max(1.3 * math.sqrt(high / low), 2.5)
    axis.set_xscale("log")
    axis.set_xlim(centre / half, centre * half)
    # matplotlib's own labels every minor tick of a range under two decades, and they overlap.
    axis.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _not_run_note(axis: Axes, names: Iterable[str]) -> None:
    """Under a panel, below its x label whatever the panel's height: the writers it has nothing
    of, and why (unsupported, or the figure's reason)."""
    lines = [line for line in names if line]
    if lines:
        text = "\n".join(line for item in lines for line in _wrapped("", [item], width=90))
        axis.annotate(
            text,
            xy=(0, 0),
            xycoords=("axes fraction", axis.xaxis.label),  # x: the panel's left; y: the label's foot
            xytext=(0, -4),
            textcoords="offset points",
            va="top",
            fontsize=7,
            color="#555",
        )


def _unsupported_note(records: Sequence[RunRecord], scenario: str) -> str:
    names = sorted(
        {_label(r, False) for r in records if r.scenario == scenario and r.status == "unsupported"}
    )
    return "not run (unsupported): " + ", ".join(names) if names else ""


def png_bytes(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def _label(record: RunRecord, several_presets: bool) -> str:
    """The writer, with the library variant and the preset where they tell runs apart."""
    tags = [tag for tag in (record.variant, record.preset if several_presets else None) if tag]
    return f"{record.writer} [{', '.join(tags)}]" if tags else record.writer


def _fit_label(fit: Fit) -> str:
    return f"{fit.key.writer} [{fit.key.variant}]" if fit.key.variant else fit.key.writer


def _colours(labels: Iterable[str]) -> dict[str, str]:
    """A colour per label that stays the same from figure to figure and report to report: the
    palette slot a hash of the name picks, or the next free one when two names of a figure meet."""
    names = sorted(set(labels))
    # tab10 while it has a colour per label; tab20 (pairs of shades) beyond, so none share one.
    palette = plt.get_cmap("tab10" if len(names) <= 10 else "tab20").colors
    colours: dict[str, str] = {}
    used: set[int] = set()
    for label in names:
        slot = int(hashlib.sha256(label.encode()).hexdigest(), 16) % len(palette)
        while slot in used and len(used) < len(palette):  # more labels than colours: they share
            slot = (slot + 1) % len(palette)
        used.add(slot)
        colours[label] = matplotlib.colors.to_hex(palette[slot])
    return colours


def _by_scenario(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    panels: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        panels[record.scenario].append(record)
    return dict(sorted(panels.items()))


def _panels(count: int, width: float = 6.0, height: float = 3.6) -> tuple[Figure, list[Axes]]:
    columns = min(count, 2)
    rows = (count + columns - 1) // columns
    figure, axes = plt.subplots(
        rows, columns, figsize=(width * columns, height * rows), squeeze=False, layout="constrained"
    )
    flat = list(axes.flat)
    for unused in flat[count:]:
        unused.set_visible(False)
    return figure, flat[:count]


def latency_figure(records: Sequence[RunRecord]) -> Figure | None:
    """Step and commit latency against their index, per writer, side by side (commits never hidden
    under steps): flat is O(N) in total, a rising line O(N^2). A row per scenario and kind of run:
    whole-set runs of the matrix and the points of a scale axis are never on one axis (their batches
    differ); per writer the run with the most steps is shown. Writers without a curve are named."""
    rows: dict[tuple[str, bool], dict[str, RunRecord]] = defaultdict(dict)
    for record in records:
        if record.status == "unsupported" or record.round is not None:
            continue
        row = rows[(record.scenario, record.limit_rows is not None)]
        label = _label(record, several_presets=False)
        if label not in row or len(record.step_latencies_s) > len(row[label].step_latencies_s):
            row[label] = record
    drawn = {key: runs for key, runs in sorted(rows.items()) if any(_has_curve(r) for r in runs.values())}
    if not drawn:
        return None
    colours = _colours(label for runs in drawn.values() for label in runs)
    # The commits' panels only where a writer committed 3 times or more (else their room is empty).
    with_commits = any(len(r.commit_latencies_s) >= 3 for runs in drawn.values() for r in runs.values())
    columns = 2 if with_commits else 1
    figure, axes = plt.subplots(
        len(drawn),
        columns,
        figsize=(6.5 * columns + 3, 3.9 * len(drawn)),
        squeeze=False,
        layout="constrained",
    )
    drawn_axes: list[Axes] = []
    for panels, ((scenario, scale), runs) in zip(axes, drawn.items(), strict=True):
        steps_axis = panels[0]
        curves = {label: record for label, record in sorted(runs.items()) if _has_curve(record)}
        committed = {label: r for label, r in curves.items() if len(r.commit_latencies_s) >= 3}
        for label, record in curves.items():
            end = f" ({word})" if (word := status_word(record)) else ""
            _latency_line(
                steps_axis, record.step_latencies_s, colours[label], label + end + _step_caveat(record)
            )
            if label in committed:
                _latency_line(panels[1], record.commit_latencies_s, colours[label], label + end)
        shapes = sorted({_shape(r) for r in curves.values()})
        kind = "scale axis, largest point" if scale else "whole-set run"
        steps_axis.set_title(f"{scenario} ({kind}: {', '.join(shapes)}): each step (batch)")
        shown = [(steps_axis, "step")]
        if committed:
            panels[1].set_title(f"{scenario}: each catalog commit")
            shown.append((panels[1], "commit"))
        elif with_commits:
            panels[1].axis("off")  # another row has commit curves; this one none (said under it)
        for axis, what in shown:
            axis.set_xlabel(f"{what} index")
            axis.set_ylabel("ms")
            axis.grid(alpha=0.3)
            axis.xaxis.set_major_locator(MaxNLocator(integer=True))
            _legend_outside(axis)
        drawn_axes += [axis for axis, _ in shown]
        missing = [f"{label}: {_why_no_curve(record)}" for label, record in sorted(runs.items())
                   if label not in curves]  # fmt: skip
        notes = ["no curve: " + "; ".join(missing)] if missing else []
        if uncommitted := [label for label in curves if label not in committed]:
            notes.append("no commit curve (fewer than 3 commits): " + ", ".join(uncommitted))
        _not_run_note(steps_axis, [*notes, _unsupported_note(records, scenario)])
    _latency_scale(drawn_axes)
    kinds = {True: "scale points", False: "whole-set runs"}
    skipped = [
        f"{scenario} {kinds[scale]}" for scenario, scale in sorted(rows) if (scenario, scale) not in drawn
    ]
    if skipped:
        figure.text(
            0.01, -0.04, "No curve (fewer than 3 steps per run, e.g. a single commit and no batch steps): "
            + ", ".join(skipped), fontsize=8, color="#555", va="top", wrap=True,
        )  # fmt: skip
    figure.suptitle("Does each batch cost more than the last? (rising = O(N^2) in total)")
    return figure


def _latency_scale(axes: Sequence[Axes]) -> None:
    """One y scale for every panel of the figure, so that panels read alike: log where the
    latencies of any panel span a decade (a slow writer would flatten the others), else linear."""
    spans = [
        (min(values), max(values))
        for axis in axes
        if (values := [y for line in axis.get_lines() for y in line.get_ydata() if y > 0])
    ]
    if not any(high >= 10 * low for low, high in spans):
        return
    for axis in axes:
        axis.set_yscale("log")
        axis.yaxis.set_major_formatter(lambda value, _: f"{value:g}")  # 0.1, 10, not 10^-1
        axis.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _has_curve(record: RunRecord) -> bool:
    return len(record.step_latencies_s) >= 3


def _latency_line(axis: Axes, latencies: Sequence[float], colour: str, label: str) -> None:
    values = [value * 1000 for value in latencies]
    axis.plot(range(1, len(values) + 1), values, lw=1.2, color=colour, label=label)


def _shape(record: RunRecord) -> str:
    return f"{len(record.step_latencies_s)} x {record.batch_rows:,} rows"


def _step_caveat(record: RunRecord) -> str:
    """A writer that commits once after its steps: the commit's time beside its steps' (a stream
    handed to one call has steps that only hand batches over, the commit doing the writing)."""
    commits = record.commit_latencies_s
    if len(commits) == 1:
        return f" (+ 1 commit of {commits[0]:.2f} s; steps total {sum(record.step_latencies_s):.2f} s)"
    return ""


def _why_no_curve(record: RunRecord) -> str:
    steps, commits = len(record.step_latencies_s), len(record.commit_latencies_s)
    if steps <= 1:
        return f"single {'commit' if commits <= 1 else 'step'}, no batch steps"
    return f"{steps} steps (a curve needs 3)"


def scale_figure(fits: Sequence[Fit]) -> Figure | None:
    """Total write time against batch count on log-log axes, with the fitted exponent."""
    fitted = [fit for fit in fits if fit.growth_exponent is not None]
    if not fitted:
        return None
    figure, axis = plt.subplots(figsize=(8, 4.5), layout="constrained")
    colours = _colours(_fit_label(fit) for fit in fitted)
    counts_shown: set[int] = set()
    for fit in fitted:
        points = [(point_batches(p), p.write_s) for p in fit.points if p.status == "ok" and p.write_s]
        counts, totals = zip(*points, strict=True)
        counts_shown.update(counts)
        colour = colours[_fit_label(fit)]
        label = (
            f"{_fit_label(fit)} ({fit.key.scenario}, {fit.key.preset}, {fit.key.batch_rows:,} rows/batch): "
            f"exponent {fit.growth_exponent:.2f}"
        )
        axis.plot(counts, totals, "o", color=colour, label=f"{label}, {fit.growth_class}")
        # The fitted power law through the geometric centre of the points.
        centre_x = statistics.geometric_mean(counts)
        centre_y = statistics.geometric_mean(totals)
        exponent = fit.growth_exponent or 0.0
        line = sorted(set(counts))
        axis.plot(line, [centre_y * (count / centre_x) ** exponent for count in line], ls=":", color=colour)
        for point in fit.points:
            if point.status != "ok":
                fail_marks(axis, point_batches(point), min(totals), size=60)
                axis.annotate(
                    f" {point.status.upper()}", (point_batches(point), min(totals)), color=FAILED_RED
                )
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xticks(sorted(counts_shown), [str(count) for count in sorted(counts_shown)])
    axis.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    axis.set_xlabel("batches (same rows per batch)")
    axis.set_ylabel("total write time, s")
    axis.set_title("Growth of total write time (slope 1: linear, 2: quadratic)")
    axis.grid(alpha=0.3, which="both")
    figure.legend(loc="outside lower center", fontsize=7.5, ncols=1)
    return figure


UNIT_LABELS = {"bytes": "MiB", "s": "s", "count": "count"}


def rows_figure(fits: Sequence[RowsFit]) -> Figure | None:
    """Each metric of the rows axis against the rows fed, log-log, a line per pair with its
    exponent: the writer's time and peak beside the harness's judging time and peak."""
    shown = [found for found in rows_metrics() if any(fit.exponent(found) is not None for fit in fits)]
    if not shown:
        return None
    figure, axes = _panels(len(shown))
    colours = _colours(fit.label for fit in fits)
    for axis, found in zip(axes, shown, strict=True):
        rows_shown: set[int] = set()
        for fit in fits:
            if (exponent := fit.exponent(found)) is None:
                continue
            rows, values = zip(*fit.medians(found), strict=True)
            rows_shown.update(rows)
            scale = 2**20 if found.unit == "bytes" else 1
            axis.plot(
                rows,
                [v / scale for v in values],
                "o-",
                color=colours[fit.label],
                label=f"{fit.label}: n^{exponent:.2f}",
            )
            ahead = [(rows[-1], values[-1]), *((n, fit.projected(found, n) or 0) for n in PROJECTED_ROWS)]
            axis.plot(  # the fit carried on: what the exponent predicts, not what ran
                [n for n, _ in ahead], [v / scale for _, v in ahead], ":", color=colours[fit.label], alpha=0.6
            )
            rows_shown.update(PROJECTED_ROWS)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xticks(sorted(rows_shown), [rows_text(count) for count in sorted(rows_shown)])
        axis.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        axis.set_xlabel("rows fed (batches of the same size)")
        axis.set_ylabel(f"{found.label}, {UNIT_LABELS.get(found.unit, found.unit)}")
        axis.set_title(found.label)
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=7)
    figure.suptitle(
        "Growth in rows (slope 1: grows with the data; 0: flat); dotted: projected to 100M and 1B"
    )
    return figure


def _writer_bar_panels(
    runs: list[RunRecord], row_height: float
) -> tuple[Figure, list[tuple[Axes, str, list[RunRecord]]], bool]:
    """A panel per scenario for a bar per writer, tall enough for the most writers: (axis,
    scenario, its runs sorted by label) each, and whether labels name presets (several ran)."""
    several = len({r.preset for r in runs}) > 1
    by_scenario = _by_scenario(runs)
    figure, axes = _panels(
        len(by_scenario), width=7.5, height=row_height * max(len(v) for v in by_scenario.values()) + 1.4
    )
    panels = [
        (axis, scenario, sorted(group, key=lambda r: _label(r, several)))
        for axis, (scenario, group) in zip(axes, by_scenario.items(), strict=True)
    ]
    return figure, panels, several


def peak_memory_figure(records: Sequence[RunRecord]) -> Figure | None:
    """Resident peak per writer and scenario (the bar: what tells writers apart), the kernel's
    figure with page cache as a tick, against the cap; a run that did not pass is a bar of its
    own look with its status written on it, an unsupported writer an empty slot saying so."""
    runs = [
        r for r in representatives(records, unsupported=True)
        if r.status == "unsupported" or r.peak_memory_bytes is not None or r.peak_rss_bytes
    ]  # fmt: skip
    if not any(r.status != "unsupported" for r in runs):
        return None
    figure, panels, several = _writer_bar_panels(runs, row_height=0.45)
    for axis, scenario, group in panels:
        labels = [_label(r, several) for r in group]
        peaks = [(r.peak_rss_bytes or 0) / MIB for r in group]
        for index, record in enumerate(group):
            word = status_word(record)
            if record.status == "unsupported":
                axis.text(
                    0, index, " unsupported (not run)", va="center", color="#777", fontsize=8, style="italic"
                )
                continue
            axis.barh(index, peaks[index], **_bar_style(record))  # type: ignore[arg-type]
            if word:
                axis.text(peaks[index], index, f" {word}", va="center", color=FAILED_RED, fontweight="bold")
        axis.set_yticks(range(len(group)), labels)
        ran = [(i, r) for i, r in enumerate(group) if r.status != "unsupported"]
        axis.scatter(
            [(r.peak_memory_bytes or 0) / MIB for _, r in ran], [i for i, _ in ran], marker="|", s=200,
            color="black", zorder=3, label="kernel peak (incl. page cache)",
        )  # fmt: skip
        for cap in {r.cap_bytes for r in group if r.cap_bytes}:
            axis.axvline(cap / MIB, color=FAILED_RED, ls="--", lw=1, label=f"cap {cap / MIB:.0f} MiB")
        axis.set_ylim(len(group) - 0.5, -0.5)  # every slot, the empty ones too; the first on top
        axis.set_title(scenario)
        axis.set_xlabel("peak memory of the worker, MiB (bar: resident; tick: kernel, incl. page cache)")
        _legend_outside(axis)
    figure.suptitle(
        "Peak memory per writer (red: OOM-killed; hatched: failed a check or errored, its figure is no pass)"
    )
    return figure


def timeline_figure(records: Sequence[RunRecord]) -> Figure | None:
    """Memory of each worker over its run, per scenario; a run that did not pass says so in its
    label and ends in a red X."""
    runs = [r for r in representatives(records) if r.memory_timeline]
    if not runs:
        return None
    several = len({r.preset for r in runs}) > 1
    panels = _by_scenario(runs)
    colours = _colours(_label(r, several) for r in runs)
    figure, axes = _panels(len(panels), width=7.0)
    for axis, (scenario, group) in zip(axes, panels.items(), strict=True):
        named: set[str] = set()  # a legend entry per label: the rounds' steps are many runs of one writer
        for record in sorted(group, key=lambda r: r.writer):
            seconds = [sample[0] for sample in record.memory_timeline]
            usage = [sample[1] / MIB for sample in record.memory_timeline]
            label = _label(record, several)
            word = status_word(record)
            entry = label + (f" ({word})" if word else "")
            axis.plot(
                seconds, usage, lw=1.2, label="_nolegend_" if entry in named else entry, color=colours[label]
            )
            named.add(entry)
            if word:
                fail_marks(axis, seconds[-1:], usage[-1:], size=50)
        for cap in {r.cap_bytes for r in group if r.cap_bytes}:
            axis.axhline(cap / MIB, color=FAILED_RED, ls="--", lw=1, label=f"cap {cap / MIB:.0f} MiB")
        axis.set_title(f"{scenario}: worker memory over time")
        axis.set_xlabel("s since the worker started")
        axis.set_ylabel("MiB (cgroup usage)")
        axis.grid(alpha=0.3)
        _legend_outside(axis)
        _not_run_note(axis, [_unsupported_note(records, scenario)])
    return figure


def scan_figure(records: Sequence[RunRecord]) -> Figure | None:
    """Full and selective scan time per writer, a panel per scenario, each bar labelled with the
    files (and delete files) pyiceberg planned: the read cost each strategy leaves behind."""
    runs = [r for r in representatives(records) if r.full_scan_s is not None or r.scan_error is not None]
    if not runs:
        return None
    figure, panels, several = _writer_bar_panels(runs, row_height=0.6)
    for axis, scenario, group in panels:
        positions = range(len(group))
        for offset, (name, colour) in enumerate((("full", "#4c72b0"), ("selective", "#dd8452"))):
            seconds = [getattr(r, f"{name}_scan_s") or 0 for r in group]
            bars = [p + (offset - 0.5) * 0.4 for p in positions]
            axis.barh(bars, seconds, height=0.4, color=colour, label=f"{name} scan")
            for bar, value, record in zip(bars, seconds, group, strict=True):
                axis.text(value, bar, f" {_planned(record, name)}", va="center", fontsize=7)
        labels = [_label(r, several) + (f" ({word})" if (word := status_word(r)) else "") for r in group]
        axis.set_yticks(list(positions), labels)
        axis.invert_yaxis()
        axis.set_title(scenario)
        axis.set_xlabel("s (label: data files / delete files planned)")
        axis.margins(x=0.2)  # room for the labels right of the longest bar
        axis.grid(alpha=0.3, axis="x")
        _legend_outside(axis)
        _not_run_note(axis, [_unsupported_note(records, scenario)])
    figure.suptitle("Reading the table each writer left: full scan and first 1% of the keys")
    return figure


# The object store's request kinds (compose/s3-counter), stacked in this order: writes, reads,
# deletes; a kind not named here is drawn as "other".
REQUEST_KINDS = {
    "put": "#4c72b0", "upload_part": "#6f9bd1", "multipart_start": "#a3c1e6",
    "multipart_complete": "#2b4f80", "multipart_abort": "#9ab", "copy": "#8172b2",
    "get": "#55a868", "get_range": "#8cc79a", "head": "#c7a54a", "head_bucket": "#e0cc8a",
    "list": "#dd8452", "delete": "#c44e52", "delete_objects": "#e08a8c", "other": "#999",
}  # fmt: skip
PRICE: Metric = next(m for m in metrics("run") if m.name == "write_requests_usd")  # its unit: $


def requests_figure(records: Sequence[RunRecord]) -> Figure | None:
    """The object store's requests of each write by kind, a bar per writer and a panel per
    scenario, labelled with the bytes sent, the list-price cost and the full scan's requests: what
    a write costs on S3 (only runs whose stack counted requests)."""
    runs = [r for r in representatives(records) if r.object_store_requests]
    if not runs:
        return None
    figure, panels, several = _writer_bar_panels(runs, row_height=0.45)
    drawn: set[str] = set()
    for axis, scenario, group in panels:
        for index, record in enumerate(group):
            left = 0
            for kind, count in _request_stack(record.object_store_requests):
                axis.barh(index, count, left=left, color=REQUEST_KINDS[kind])
                drawn.add(kind)
                left += count
            sent = record.object_store_bytes.get("in", 0) / MIB
            cost = (
                f", {metric_text(PRICE, record.write_requests_usd)}"
                if record.write_requests_usd is not None
                else ""
            )
            scan = f", full scan {record.full_scan_requests}" if record.full_scan_requests is not None else ""
            status = status_word(record)  # FAIL, OOM, ...: said beside the bar, as no pass
            said = f" {status.upper()}" if status else ""
            axis.text(
                left, index, f" {left:,} ({sent:,.0f} MiB up{cost}{scan}){said}", va="center", fontsize=7
            )
        axis.set_yticks(range(len(group)), [_label(r, several) for r in group])
        axis.set_ylim(len(group) - 0.5, -0.5)
        axis.margins(x=0.7)  # room for the labels right of the longest bar
        axis.set_title(scenario)
        axis.set_xlabel("S3 requests of the write, by kind (counted by the stack's request counter)")
        axis.grid(alpha=0.3, axis="x")
    handles = [matplotlib.patches.Patch(color=REQUEST_KINDS[k], label=k) for k in REQUEST_KINDS if k in drawn]
    figure.legend(handles=handles, loc="outside right upper", fontsize=7.5)
    figure.suptitle("What each write cost the object store, in requests")
    return figure


def _request_stack(requests: dict[str, int]) -> list[tuple[str, int]]:
    """The write's requests in REQUEST_KINDS' order, unknown kinds summed as "other"."""
    other = sum(n for kind, n in requests.items() if kind not in REQUEST_KINDS)
    known = [(kind, requests[kind]) for kind in REQUEST_KINDS if requests.get(kind)]
    return known + ([("other", other)] if other else [])


def _planned(record: RunRecord, scan: str) -> str:
    files = getattr(record, f"{scan}_scan_files")
    if files is None:
        return "scan failed" if record.scan_error else ""
    return f"{files} / {getattr(record, f'{scan}_scan_delete_files')}"


def _plotted(record: RunRecord, metric: Metric) -> float:
    value = getattr(record, metric.name, None) or 0
    return value / 1024 if metric.unit == "bytes" else value  # metadata: KiB, not MiB


def metrics_figure(records: Sequence[RunRecord]) -> Figure | None:
    """The registry's plotted metrics (wall time, snapshots added, data files, metadata bytes, ...):
    writers side by side per scenario. A run that did not pass is hatched (its figures describe a
    table that is not what it should have left); a writer's unsupported scenario a grey dash on
    the baseline; writers that ran nothing are named under the figure, not given empty columns."""
    everything = representatives(records, unsupported=True)
    ran = {_label(r, False) for r in everything if r.status != "unsupported"}
    if not ran:
        return None
    runs = [r for r in everything if _label(r, False) in ran]
    several = len({r.preset for r in runs}) > 1
    scenario_names = sorted({r.scenario for r in runs})
    labels = sorted({_label(r, several) for r in runs})
    table = {(r.scenario, _label(r, several)): r for r in runs}
    colours = _colours(labels)
    plotted = [m for m in metrics("run") if m.plot]
    figure, axes = _panels(len(plotted), width=6.5, height=3.4)
    width = 0.8 / len(labels)
    for axis, metric in zip(axes, plotted, strict=True):
        for offset, label in enumerate(labels):
            for index, scenario in enumerate(scenario_names):
                record = table.get((scenario, label))
                position = index + offset * width
                if record is None or record.status == "unsupported":
                    if record is not None:
                        axis.scatter(position, 0, marker="_", s=30, color="#888", zorder=3, clip_on=False)
                    continue
                passed = status_word(record) is None
                style = {"color": colours[label]} if passed else _failed_bar(colours[label])
                axis.bar(position, _plotted(record, metric), width=width, **style)  # type: ignore[arg-type]
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(scenario_names))], scenario_names)
        unit = {"bytes": "KiB", "s": "s"}.get(metric.unit)
        axis.set_title(metric.label + (f" ({unit})" if unit else ""))
        axis.tick_params(axis="x", labelsize=8)
        axis.grid(alpha=0.3, axis="y")
        if metric.unit == "count":
            axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    handles: list[Artist] = [matplotlib.patches.Patch(color=colours[label], label=label) for label in labels]
    handles += [
        matplotlib.patches.Patch(**_failed_bar("#555"), label="did not pass (failed a check, errored, OOM)"),  # type: ignore[arg-type]
        matplotlib.lines.Line2D(
            [], [], ls="none", marker="_", color="#888", markersize=8, label="unsupported"
        ),
    ]
    figure.legend(handles=handles, loc="outside right upper", fontsize=7.5)
    if idle := sorted({_label(r, False) for r in everything} - ran):
        figure.text(0.01, -0.01, "Not run in any scenario (unsupported): " + ", ".join(idle), fontsize=8,
                    color="#555", va="top")  # fmt: skip
    figure.suptitle("What each writer cost and left behind")
    return figure


def _failed_bar(colour: str) -> dict[str, object]:
    """A bar whose run did not pass: hatched in the writer's colour, no fill."""
    return {"facecolor": "white", "hatch": "////", "edgecolor": colour, "linewidth": 0.8}


def _step_positions(records: Sequence[RunRecord]) -> dict[int, float]:
    """Each round's record at its step within the round: a round's phases (which may repeat, as
    three appends a day) spread over [round, round + 1), in the order they ran."""
    steps: dict[tuple[str, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        if record.round is not None:
            steps[(writer_text(record), record.round)].append(record)
    positions = {}
    for (_, round_number), found in steps.items():
        for index, record in enumerate(sorted(found, key=lambda r: r.started_at)):
            positions[id(record)] = round_number + index / len(found)
    return positions


def rounds_figure(records: Sequence[RunRecord]) -> Figure | None:
    """A panel per followed metric against the round, a line per writer and phase that ran (an
    unsupported phase has none); a phase whose verdict failed is marked with a red X on its round."""
    found = [
        series for series in phase_series(records) if any(r.status != "unsupported" for r in series.records)
    ]
    if not found:
        return None
    followed = followed_metrics()
    figure, axes = _panels(len(followed))
    palette = _colours(series.writer for series in found)
    styles = dict(zip(sorted({s.phase for s in found}), ["-", "--", ":", "-."], strict=False))
    at = _step_positions(records)
    for axis, shown in zip(axes, followed, strict=True):
        for series in found:
            rounds = [at[id(r)] for r in series.records]
            values = [getattr(r, shown.name) for r in series.records]
            axis.plot(
                rounds, [float("nan") if v is None else v for v in values],
                color=palette[series.writer], linestyle=styles[series.phase], marker="o", markersize=3,
                label=f"{series.writer} {series.phase}",
            )  # fmt: skip
            failed = [(at[id(r)], v) for r, v in zip(series.records, values, strict=True)
                      if v is not None and not (r.verdict and r.verdict.passed)]  # fmt: skip
            if failed:  # on its writer's line, above its markers
                fail_marks(axis, *zip(*failed, strict=True), size=60)
        axis.set_title(shown.label)
        axis.set_xlabel("round")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        if shown.unit == "count":
            axis.yaxis.set_major_locator(MaxNLocator(integer=True))
        if shown.unit == "bytes":
            axis.yaxis.set_major_formatter(lambda value, _: format_size(int(value)))
    figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize="small")
    return figure


def verdict_figure(records: Sequence[RunRecord]) -> Figure | None:
    """Write time against resident peak, a panel per operation (and preset, cap): a point per
    writer that passed, a red X per failed one (an OOM on the cap line, at the time it was killed),
    the cap as a line; the writers that did not run, or left no figure, named under the panel."""
    groups = [
        group for group in verdict_groups(records) if any(_verdict_point(row, group) for row in group.rows)
    ]
    if not groups:
        return None
    columns = min(len(groups), 2)  # two across: legible at a page's width
    rows = -(-len(groups) // columns)
    figure = plt.figure(figsize=(7.0 * columns, 3.6 * rows + 0.7))
    # Per group a panel and, right of it, the room for its list of writers, then a gap (laid out
    # by hand: the list is text beside the panel, which a constrained layout squeezes the panel for).
    ratios = [
        ratio for column in range(columns) for ratio in (1.0, 1.05, 0.25 if column < columns - 1 else 0)
    ]
    height = figure.get_figheight()
    grid = figure.add_gridspec(
        rows, len(ratios), width_ratios=ratios, wspace=0.05, hspace=0.45,
        left=0.06, right=0.99, top=1 - 0.75 / height, bottom=0.45 / height,
    )  # fmt: skip
    colours = _colours(row.writer for group in groups for row in group.rows)
    for index, group in enumerate(groups):
        row, column = divmod(index, columns)
        listing = figure.add_subplot(grid[row, 3 * column + 1])
        listing.axis("off")
        _verdict_panel(figure.add_subplot(grid[row, 3 * column]), listing, group, colours)
    figure.suptitle(
        "Which writer? Lower left is better (X: did not pass; red line: the memory cap; time on a log axis)",
        y=1 - 0.2 / height, fontsize=12,
    )  # fmt: skip
    return figure


def _verdict_point(row: VerdictRow, group: VerdictGroup) -> tuple[float, float] | None:
    """Where a writer's row is drawn: (seconds, MiB); an OOM at the cap, at the time it was killed."""
    seconds = row.write_s if row.write_s is not None else row.wall_s
    if seconds is None or row.outcome in ("unsupported", "unjudged"):
        return None
    seconds = max(seconds, MIN_SECONDS)  # on the log axis, not masked out
    if row.outcome == "OOM" and group.cap_bytes:
        return seconds, group.cap_bytes / MIB
    if row.peak_rss_bytes is None:
        return None
    return seconds, row.peak_rss_bytes / MIB


def _verdict_panel(axis: Axes, listing: Axes, group: VerdictGroup, colours: dict[str, str]) -> None:
    """The points (a passed writer's marker carries its rank; a failed one is a red X with its
    name), the cap line, the ranked list right of the panel and the absent writers under it."""
    drawn = [(row, point) for row in group.rows if (point := _verdict_point(row, group)) is not None]
    for row, (x, y) in reversed(drawn):  # rank 1 drawn last: on top where points meet
        if row.outcome == "pass":
            axis.scatter(
                x, y, s=190, color=colours[row.writer], edgecolor="black", lw=0.6, zorder=PASS_ZORDER
            )
            axis.text(x, y, str(row.rank), ha="center", va="center", fontsize=7, fontweight="bold",
                      color=_ink_on(colours[row.writer]), zorder=PASS_ZORDER + 1)  # fmt: skip
        else:
            fail_marks(axis, x, y, size=110)
            # Its name is in the list beside the panel; at the point only the outcome, kept inside,
            # edged in white to stay readable over a pass marker it overlaps.
            axis.annotate(
                row.outcome, (x, y), xytext=(5, 5), textcoords="offset points", fontsize=7.5,
                color=FAILED_RED, fontweight="bold", zorder=FAIL_ZORDER, annotation_clip=True, clip_on=True,
                path_effects=[matplotlib.patheffects.withStroke(linewidth=2, foreground="white")],
            )  # fmt: skip
    if group.cap_bytes:
        axis.axhline(group.cap_bytes / MIB, color=FAILED_RED, ls="--", lw=1.2)
        axis.text(0.01, group.cap_bytes / MIB, f"{cap_text(group.cap_bytes)}", color=FAILED_RED,
                  va="bottom", fontsize=8, transform=axis.get_yaxis_transform())  # fmt: skip
    # Every panel on a log time axis, like the scale plot: writers differ by ratios (an O(N^2)
    # one is 10-50x slower), which a linear axis shows by crowding the fast ones into one spot.
    log_seconds_axis(axis, [x for _, (x, _) in drawn])
    heights = [y for _, (_, y) in drawn] + [group.cap_bytes / MIB if group.cap_bytes else 0]
    axis.set_ylim(0, max(heights) * 1.1)
    axis.set_title(f"{group.operation} ({group.preset}, {cap_text(group.cap_bytes)})", fontweight="bold")
    axis.set_xlabel("write time, s (failed: until it ended)")
    axis.set_ylabel("peak resident memory, MiB")
    axis.grid(alpha=0.3, which="both")
    _ranked_list(listing, [row for row, _ in drawn], colours, _absent_notes(group))


def _ink_on(colour: str) -> str:
    """Black on a light marker, white on a dark one (tab20's pale shades take black)."""
    red, green, blue = matplotlib.colors.to_rgb(colour)
    return "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.6 else "white"


def _ranked_list(
    listing: Axes, rows: Sequence[VerdictRow], colours: dict[str, str], notes: list[str]
) -> None:
    """Beside the panel, top down: the passed writers by rank, each with its marker, time and
    peak; then the failed ones in red; then the notes on the writers without a point."""
    step = min(0.085, 0.95 / max(len(rows) + len(notes), 1))
    for index, row in enumerate(rows):
        height = 0.97 - index * step
        passed = row.outcome == "pass"
        if passed:
            listing.scatter(0.03, height, s=120, color=colours[row.writer], edgecolor="black", lw=0.5)
            listing.text(0.03, height, str(row.rank), ha="center", va="center", fontsize=6.5,
                         fontweight="bold", color=_ink_on(colours[row.writer]))  # fmt: skip
        else:
            listing.scatter(
                0.03, height, s=60, marker=FAIL_MARKER, color=FAILED_RED, edgecolor="white", lw=0.6
            )
        seconds = row.write_s if row.write_s is not None else row.wall_s
        figures = f"{seconds:.2f} s, {(row.peak_rss_bytes or 0) / MIB:.0f} MiB" if passed else row.outcome
        listing.text(0.08, height, f"{row.writer}  ({figures})", va="center", fontsize=8,
                     color="black" if passed else FAILED_RED)  # fmt: skip
    if notes:
        listing.text(0.0, 0.97 - (len(rows) + 0.4) * step, "\n".join(notes), va="top", fontsize=7.5,
                     color="#444", linespacing=1.5)  # fmt: skip
    listing.set_xlim(0, 1)
    listing.set_ylim(0, 1)


def _absent_notes(group: VerdictGroup) -> list[str]:
    """The writers a panel has no point for, and why: unsupported, or no figure recorded."""
    unsupported = [row.writer for row in group.rows if row.outcome == "unsupported"]
    unplotted = [
        row for row in group.rows if row.outcome != "unsupported" and _verdict_point(row, group) is None
    ]
    notes = _wrapped("not supported: ", unsupported)
    for row in unplotted:
        notes += _wrapped(f"{row.outcome}, no figure: ", [row.writer])
    return notes


def _wrapped(prefix: str, names: Sequence[str], width: int = 58) -> list[str]:
    if not names:
        return []
    return textwrap.wrap(
        prefix + ", ".join(names), width=width, subsequent_indent="    ", break_on_hyphens=False
    )


def caps_figure(records: Sequence[RunRecord]) -> Figure | None:
    """find-cap's answer: per table (operation, preset, layout) a bar per writer to the smallest
    cap it survived, a whisker down to the largest it was OOM-killed under; a writer that
    survived no cap tried is a red mark at the largest."""
    figures = cap_figures(records)
    if not figures:
        return None
    by_table: dict[tuple[str, str, str, str], list[CapFigure]] = defaultdict(list)
    for figure in figures:
        by_table[figure.table].append(figure)
    plot, axes = _panels(len(by_table), width=7.5, height=0.45 * max(len(v) for v in by_table.values()) + 1.4)
    for axis, (table, group) in zip(axes, by_table.items(), strict=True):
        group = sorted(group, key=lambda f: (f.smallest_bytes is None, f.smallest_bytes or 0, f.writer))
        for index, figure in enumerate(group):
            if figure.smallest_bytes is None:
                fail_marks(axis, [(figure.failed_below_bytes or 0) / MIB], [index], size=80)
                axis.text((figure.failed_below_bytes or 0) / MIB, index, "  OOM at every cap", va="center")
                continue
            axis.barh(index, figure.smallest_bytes / MIB, color="#4c72b0", zorder=PASS_ZORDER - 1)
            if figure.failed_below_bytes:
                axis.plot(
                    [figure.failed_below_bytes / MIB] * 2, [index - 0.3, index + 0.3], color=FAILED_RED, lw=2
                )
            smallest = figure.smallest_bytes / MIB
            axis.text(smallest, index, f" {format_size(figure.smallest_bytes)}", va="center")
        axis.set_yticks(range(len(group)), [figure.writer for figure in group])
        axis.set_ylim(len(group) - 0.5, -0.5)
        axis.set_xlim(0, max((f.smallest_bytes or f.failed_below_bytes or 0) for f in group) / MIB * 1.3)
        axis.set_title(table_text(table))
        axis.set_xlabel("smallest memory cap survived, MiB (red tick: OOM-killed there)")
    plot.suptitle("The smallest cap each writer survives (find-cap, to ~10%)")
    return plot
