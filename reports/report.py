"""`icebench report RESULTS_DIR`: report.html (plots embedded, nothing else needed to view it) and
report.md (the same tables, plots as PNG files under plots/) next to the results."""

from __future__ import annotations

import base64
import html
import struct
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from harness.base.results import read_environment, read_results_folder
from harness.model import RunRecord
from reports.caps import cap_figures, cap_lines, table_text
from reports.fits import Fit, fits
from reports.plots import (
    caps_figure,
    latency_figure,
    metrics_figure,
    peak_memory_figure,
    png_bytes,
    requests_figure,
    rounds_figure,
    rows_figure,
    scale_figure,
    scan_figure,
    timeline_figure,
    verdict_figure,
)
from reports.rounds import MAINTENANCE_NOTE, MAINTENANCE_TITLE, maintenance_rows, rounds_rows
from reports.rows import ROWS_NOTE, rows_fits, rows_rows, rows_title
from reports.summary import (
    FAILED_CHECK_HEADERS,
    UNSUPPORTED_HEADERS,
    failed_check_rows,
    fit_rows,
    fit_title,
    markdown_table,
    scan_rows,
    summary_rows,
    unsupported_rows,
    worker_rows,
)
from reports.variants import comparisons, variant_rows, variant_title
from reports.verdict import (
    VERDICT_HEADERS,
    VERDICT_NUMERIC,
    cap_text,
    outcome_of,
    shown_rows,
    verdict_groups,
    verdict_headline,
    verdict_rows,
)

# In the order of the page: the verdict's picture first, right under the verdict's tables.
PLOTS: list[tuple[str, str, Callable[[list[RunRecord], list[Fit]], Figure | None]]] = [
    ("verdict", "Write time against peak memory, per operation", lambda runs, _: verdict_figure(runs)),
    ("latency", "Step and commit latency per batch", lambda runs, _: latency_figure(runs)),
    ("scale", "Total write time against batch count", lambda _, found: scale_figure(found)),
    ("rows", "Time and memory against rows", lambda runs, _: rows_figure(rows_fits(runs))),
    ("peak-memory", "Peak memory against the cap", lambda runs, _: peak_memory_figure(runs)),
    ("memory-timeline", "Memory over each run", lambda runs, _: timeline_figure(runs)),
    ("metrics", "Wall time, snapshots, data files, metadata", lambda runs, _: metrics_figure(runs)),
    (
        "rounds",
        "Each metric over the rounds (x: a phase that did not pass)",
        lambda runs, _: rounds_figure(runs),
    ),
    ("scan-cost", "Full and selective scan of the table each writer left", lambda runs, _: scan_figure(runs)),
    ("s3-requests", "S3 requests of each write, by kind", lambda runs, _: requests_figure(runs)),
    ("caps", "The smallest memory cap each writer survives", lambda runs, _: caps_figure(runs)),
]

# The plots that draw find-cap's probes; the others draw the matrix's own runs (a probe OOM-killed
# by design is no finding, and dozens of them bury the runs).
PROBES_PLOTTED = {"caps"}


def _matrix_runs(runs: list[RunRecord]) -> list[RunRecord]:
    return [run for run in runs if not run.cap_probe]


PROFILE_HEADERS = ["scenario", "writer", "preset", "flame graph at peak memory"]


@dataclass(frozen=True)
class Section:
    """One part of the report, rendered alike to Markdown and HTML: a table, or one plot."""

    heading: str
    headers: Sequence[str] = ()
    rows: Sequence[Sequence[str]] = ()
    numeric: Collection[int] = ()
    link_column: int = -1  # cells that are paths to link to
    empty: str = "None."  # said when a table has no rows
    image: tuple[str, bytes] | None = None  # plot name, PNG
    level: int = 2  # the heading's: 3 for the verdict's groups
    note: str = ""  # a sentence under the heading
    row_classes: Sequence[str] = ()  # per row, the HTML class that colours it (fail, oom, ...)


@dataclass(frozen=True)
class Report:
    html: Path
    markdown: Path
    plots: list[Path]


def write_report(folder: Path) -> Report:
    """Renders every plot that has data and writes the two pages; returns their paths."""
    runs = read_results_folder(folder)
    scales = fits(runs)
    plot_dir = folder / "plots"
    plot_dir.mkdir(exist_ok=True)
    images: list[tuple[str, str, bytes]] = []
    for name, title, build in PLOTS:
        figure = build(runs if name in PROBES_PLOTTED else _matrix_runs(runs), scales)
        if figure is not None:
            images.append((name, title, png_bytes(figure)))
    paths = []
    for name, _, data in images:
        path = plot_dir / f"{name}.png"
        path.write_bytes(data)
        paths.append(path)
    title = f"icebench {folder.name}"
    sections = _sections(runs, scales, images, folder)
    markdown = folder / "report.md"
    markdown.write_text(_markdown(title, _environment_line(folder), sections))
    page = folder / "report.html"
    page.write_text(_html(title, _environment_line(folder), sections))
    return Report(html=page, markdown=markdown, plots=paths)


def _environment_line(folder: Path) -> str:
    env = read_environment(folder)
    if env is None:
        return ""
    machine, settings = env.machine, env.settings
    git = env.icebench_git
    code = f"icebench {git.text}; " if git else ""
    where = (
        f"{machine.cpus} CPUs, {machine.memory_bytes / 2**30:.0f} GiB, Python {machine.python}; "
        if machine
        else ""
    )
    ran = f"isolation {env.isolation}, stack {settings.get('stack')}, cap {settings.get('memory')}; "
    return code + where + ran + ", ".join(f"{k} {v}" for k, v in env.versions.items())


def _profiles(runs: Sequence[RunRecord], folder: Path) -> list[list[str]]:
    return [
        [r.scenario, r.writer, r.preset, _relative(Path(r.profile_flamegraph), folder)]
        for r in runs
        if r.profile_flamegraph
    ]


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def _sections(
    runs: list[RunRecord], scales: list[Fit], images: list[tuple[str, str, bytes]], folder: Path
) -> list[Section]:
    """The verdict and its picture, the other plots, then the tables behind them."""
    plots = [Section(caption, image=(name, data)) for name, caption, data in images]
    verdict_plots = [section for section in plots if section.image and section.image[0] == "verdict"]
    sections = _verdict_sections(runs) + verdict_plots
    sections += [section for section in plots if section not in verdict_plots]
    sections.append(Section("Runs", *summary_rows(runs), row_classes=[_run_class(r) for r in runs]))
    runs = _matrix_runs(runs)  # find-cap's probes: in the runs above and the cap sections only
    sections.append(Section("Failed checks", FAILED_CHECK_HEADERS, failed_check_rows(runs)))
    if unsupported := unsupported_rows(runs):
        sections.append(Section("Not run (unsupported)", UNSUPPORTED_HEADERS, unsupported))
    headers, rows, numeric = scan_rows(runs)
    if rows:
        sections.append(Section("Downstream scan cost (one fixed reader)", headers, rows, numeric))
    if any(run.workers for run in runs):
        sections.append(Section("Concurrent workers", *worker_rows(runs)))
    if scales:
        sections.append(Section("Scale axis: the points of each fit", note=SCALE_NOTE))
        sections += [Section(fit_title(fit), *fit_rows(fit), level=3) for fit in scales]
    if found_rows := rows_fits(runs):
        sections.append(Section("Rows axis: the points of each fit", note=ROWS_NOTE))
        sections += [Section(rows_title(fit), *rows_rows(fit), level=3) for fit in found_rows]
    for base, current, pairs in comparisons(runs):
        sections.append(Section(variant_title(base, current), *variant_rows(pairs)))
    if any(run.round is not None for run in runs):
        sections.append(
            Section("Rounds: first round → last, Δ/round the degradation rate", *rounds_rows(runs))
        )
        if (maintained := maintenance_rows(runs))[1]:
            sections.append(Section(MAINTENANCE_TITLE, *maintained, note=MAINTENANCE_NOTE))
    if profiles := _profiles(runs, folder):
        sections.append(Section("Allocation profiles (memray)", PROFILE_HEADERS, profiles, link_column=3))
    return sections


VERDICT_NOTE = (
    "Writers that passed every check, fastest write first (then lower resident peak); below, the "
    "rest with why. growth: last commits' latency over the first (1x flat); n^k: total write time "
    "~ batches^k on the scale axis. total cost: what owning the table costs, the write, the "
    "maintenance steps after it (--maintenance) and N full and N selective scans of the table they "
    "left (--reads, default 10), in seconds and, where the stack counts "
    "requests, in dollars at S3's list prices (the full scan's: the oracle's whole read-back, an "
    "upper bound). schema-evolution-upsert (an upsert after a column was added) "
    "has its own group; traps, faults and concurrency: see Runs."
)


SCALE_NOTE = (
    "Each writer fed growing prefixes of the source in batches of the same size: total write time "
    "against the batch count, fitted as a power law (1: linear, 2: quadratic)."
)


def _verdict_sections(runs: list[RunRecord]) -> list[Section]:
    groups = verdict_groups(runs)
    if not groups:
        return []
    sections = [Section("Verdict: which writer to use", note=VERDICT_NOTE)]
    for group in groups:
        sections.append(
            Section(
                verdict_headline(group),
                VERDICT_HEADERS,
                verdict_rows(group),
                VERDICT_NUMERIC,
                level=3,
                row_classes=[row.outcome.lower() for row in shown_rows(group)],
            )
        )
    return sections + _cap_sections(runs)


CAP_HEADERS = ["table", "cap", "fits (passed)", "fits, table FAIL", "OOM-killed", "error"]
CAP_FIGURE_HEADERS = ["table", "writer", "smallest cap survived"]


def _cap_sections(runs: list[RunRecord]) -> list[Section]:
    """What fits in each cap (a matrix under several), and the smallest cap of each pair (find-cap)."""
    sections = []
    if lines := cap_lines(runs):
        rows = [
            [
                table_text(line.table),
                cap_text(line.cap_bytes),
                *(", ".join(names) or "-" for names in line.groups),
            ]
            for line in lines
        ]
        sections.append(Section("Verdict per memory cap", CAP_HEADERS, rows, level=3))
    if figures := cap_figures(runs):
        rows = [[table_text(figure.table), figure.writer, figure.text] for figure in figures]
        sections.append(
            Section("The smallest cap each writer survives (find-cap)", CAP_FIGURE_HEADERS, rows, level=3)
        )
    return sections


def _run_class(record: RunRecord) -> str:
    """The row colour of a run: its outcome where it did not pass; a scale point marked as one."""
    outcome = outcome_of(record)
    if outcome != "pass":
        return outcome.lower()
    return "scale" if record.limit_rows is not None else ""


def _markdown(title: str, environment: str, sections: list[Section]) -> str:
    parts = [f"# {title}", environment]
    for section in sections:
        parts.append(f"{'#' * section.level} {section.heading}")
        if section.note:
            parts.append(section.note)
        if section.image:
            parts.append(f"![{section.heading}](plots/{section.image[0]}.png)")
        elif section.rows:
            rows = [
                [f"[{cell}]({cell})" if i == section.link_column else cell for i, cell in enumerate(row)]
                for row in section.rows
            ]
            parts.append(markdown_table(section.headers, rows, section.numeric))
        elif section.headers:
            parts.append(section.empty)
    return "\n\n".join(parts) + "\n"


def _html_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric: Collection[int] = (),
    link_column: int = -1,
    row_classes: Sequence[str] = (),
) -> str:
    """Escaped cells, `numeric` columns right-aligned; the cells of `link_column` link to themselves;
    each row of the class `row_classes` gives it (the colour of its outcome)."""

    def cell(text: str, column: int) -> str:
        escaped = html.escape(text)
        inner = f'<a href="{escaped}">{escaped}</a>' if column == link_column else escaped
        return f'<td class="{"num" if column in numeric else ""}">{inner}</td>'

    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    classes = list(row_classes) + [""] * (len(rows) - len(row_classes))
    body = "".join(
        (f'<tr class="{html.escape(name)}">' if name else "<tr>")
        + "".join(cell(c, i) for i, c in enumerate(row))
        + "</tr>"
        for row, name in zip(rows, classes, strict=True)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; font-size: 0.85rem; margin-bottom: 1.5rem; }
th, td { border: 1px solid #ccc; padding: 0.1rem 0.5rem; }
th { background: #f2f2f2; } td.num { text-align: right; white-space: nowrap; }
img { max-width: 100%; height: auto; border: 1px solid #eee; margin-bottom: 1.5rem; }
tr.fail td, tr.oom td { background: #fbe3e4; } tr.error td { background: #f3e6e6; }
tr.unsupported td, tr.unjudged td { color: #777; background: #f7f7f7; }
tr.scale td { background: #eef3fb; } tr.scale td:first-child { font-style: italic; }
p.note { max-width: 60rem; } nav { font-size: 0.85rem; margin-bottom: 1rem; }
h3 { margin: 0.8rem 0 0.3rem; font-size: 1rem; }
"""


def _html(title: str, environment: str, sections: list[Section]) -> str:
    """The page: a line of links to the level-2 sections, then each section in turn."""
    anchors = {id(section): f"s{index}" for index, section in enumerate(sections)}
    links = " · ".join(
        f'<a href="#{anchors[id(section)]}">{html.escape(section.heading)}</a>'
        for section in sections
        if section.level == 2
    )
    parts = [f"<h1>{html.escape(title)}</h1>", f"<p>{html.escape(environment)}</p>", f"<nav>{links}</nav>"]
    for section in sections:
        level = section.level
        parts.append(f'<h{level} id="{anchors[id(section)]}">{html.escape(section.heading)}</h{level}>')
        if section.note:
            parts.append(f'<p class="note">{html.escape(section.note)}</p>')
        if section.image:
            encoded = base64.b64encode(section.image[1]).decode()
            name, alt = section.image[0], html.escape(section.heading)
            source = f"data:image/png;base64,{encoded}"
            width, height = _png_size(section.image[1])
            size = f'width="{width}" height="{height}"'
            parts.append(f'<img class="plot" id="plot-{name}" alt="{alt}" {size} src="{source}">')
        elif section.rows:
            parts.append(
                _html_table(
                    section.headers, section.rows, section.numeric, section.link_column, section.row_classes
                )
            )
        elif section.headers:
            parts.append(f"<p>{html.escape(section.empty)}</p>")
    body = "\n".join(parts)
    head = f"<meta charset='utf-8'><title>{html.escape(title)}</title><style>{STYLE}</style>"
    return f"<!doctype html><html><head>{head}</head><body>\n{body}\n</body></html>\n"


def _png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height (its IHDR chunk): the page reserves the plot's room before it loads."""
    width, height = struct.unpack(">II", data[16:24])
    return width, height
