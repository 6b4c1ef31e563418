"""The verdict: which writer to use for append, replace and upsert at the cap that ran.

Per verdict scenario (the plain `append`, `replace` and `upsert`, and `schema-evolution-upsert`:
an upsert into a table that gained a column, which a writer may fail where the plain upsert
passes; traps, faults and concurrency are judged in their own tables, not ranked), preset, cap
and stack: the writers whose runs passed, ranked by write time and then resident peak, and apart
from them the failing, OOM-killed, errored and unsupported ones with a one-line reason. Pure
functions returning rows; the report and the terminal summary render them.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.markup import escape
from rich.table import Table

from harness.base.caps import format_size
from harness.base.errors import IcebenchError
from harness.base.growth import late_early_ratio
from harness.base.reasons import clipped
from harness.model import Operation, RunRecord
from reports.fits import Fit, fits
from reports.rounds import owned_cost
from reports.summary import left_text, scenario_text, verdict_text, writer_text
from reports.terminal import keep_first

Outcome = Literal["pass", "FAIL", "OOM", "error", "unsupported", "unjudged"]
# The order of the rows listed apart: what a reader must know first (the table was wrong) first.
APART_ORDER: tuple[Outcome, ...] = ("FAIL", "OOM", "error", "unjudged", "unsupported")
REASON_CHARS = 110  # a reason is one line of a table cell
TERMINAL_REASON_CHARS = 72  # two or three lines of the result column at 100 columns
OUTCOME_STYLE = {"pass": "green", "FAIL": "bold red", "OOM": "bold red", "error": "red"}
# The scenario after the plain operations whose runs the verdict holds (by name: the report
# layer does not import the scenarios). Without it a writer whose upsert breaks once the schema
# evolved (pyiceberg's #2467) would look fine in the verdict.
SCHEMA_EVOLUTION_UPSERT = "schema-evolution-upsert"
VERDICT_SCENARIOS: tuple[str, ...] = (*(operation.value for operation in Operation), SCHEMA_EVOLUTION_UPSERT)


@dataclass(frozen=True)
class VerdictRow:
    """One writer in one group: its rank when it passed (1 = fastest), its figures and why not."""

    writer: str  # with its library variant, e.g. `pyiceberg-table [pyiceberg 0.9.1]`
    outcome: Outcome
    rank: int | None
    write_s: float | None  # median over the repeats
    wall_s: float | None
    peak_rss_bytes: int | None  # the largest over the repeats
    growth: str  # late/early of commits (or steps) and the scale fit's exponent, where recorded
    reason: str  # one line; empty for a pass
    repeats: int
    total_cost: str = "-"  # the table's cost to own: the write and `reads` scans (medians), s and $


@dataclass(frozen=True)
class VerdictGroup:
    operation: str  # the verdict scenario: append, replace, upsert or schema-evolution-upsert
    preset: str
    cap_bytes: int | None
    stack: str
    layout: str  # TableLayout.label; "" for the plain table
    rows: list[VerdictRow]
    reads: frozenset[int | None] = frozenset()  # the runs' --reads: what their total costs count

    @property
    def title(self) -> str:
        table = f", {self.layout}" if self.layout else ""
        return f"{self.operation} ({self.preset}{table}, {cap_text(self.cap_bytes)}, stack {self.stack})"

    @property
    def ranked(self) -> list[VerdictRow]:
        return [row for row in self.rows if row.rank is not None]

    @property
    def apart(self) -> list[VerdictRow]:
        return [row for row in self.rows if row.rank is None]


def cap_text(cap_bytes: int | None) -> str:
    return "no cap" if cap_bytes is None else f"cap {format_size(cap_bytes)}"


def _reason_line(text: str) -> str:
    return clipped(text, REASON_CHARS)


def is_ranked(record: RunRecord) -> bool:
    """A whole-set write of a verdict scenario (not a scale point, round, maintenance step or trap)."""
    return (
        record.scenario in VERDICT_SCENARIOS
        and record.limit_rows is None
        and record.round is None
        and record.phase is None
    )


PairKey = tuple[str, str, str, object, int | None, str, int]


def _pair(record: RunRecord) -> PairKey:
    """A matrix pair's one run: its write and the maintenance steps that followed it share this."""
    return (
        record.scenario, writer_text(record), record.preset, record.layout, record.cap_bytes, record.stack,
        record.repeat,
    )  # fmt: skip


def maintenance_after(records: Iterable[RunRecord]) -> dict[PairKey, list[RunRecord]]:
    """The maintenance steps (matrix --maintenance) that followed each write, in order."""
    steps: dict[PairKey, list[RunRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: r.started_at):
        if record.phase is not None and record.round is None:
            steps[_pair(record)].append(record)
    return steps


def outcome_of(record: RunRecord) -> Outcome:
    if record.status == "ok":
        if record.verdict is None or record.verdict.unjudged:  # the harness's limit, not the writer's
            return "unjudged"
        return "pass" if record.verdict.passed else "FAIL"
    return {"oom": "OOM", "error": "error", "unsupported": "unsupported"}[record.status]


class VerdictsFailed(IcebenchError):
    """`--fail-on-verdict` and a run that did not pass: the CLI prints one line and exits 3."""

    exit_code = 3


RUNS_NAMED = 3  # in VerdictsFailed's one line, before "and N more"


def require_passed(records: Sequence[RunRecord]) -> None:
    """Raise VerdictsFailed unless every run that could run passed: a failed check, an OOM, an
    error (a timeout is one) or a run the oracle did not judge fails; an unsupported pair does not."""
    ran = [record for record in records if outcome_of(record) != "unsupported"]
    failed = [record for record in ran if outcome_of(record) != "pass"]
    if not failed:
        return
    named = ", ".join(
        f"{scenario_text(r)} x {writer_text(r)} ({_failure_word(r)})" for r in failed[:RUNS_NAMED]
    )
    more = f" and {len(failed) - RUNS_NAMED} more" if len(failed) > RUNS_NAMED else ""
    raise VerdictsFailed(f"{len(failed)} of {len(ran)} runs did not pass: {named}{more}")


def _failure_word(record: RunRecord) -> str:
    """`FAIL keys_unique, key_set, content_checksum +2` (as the summary's verdict), `OOM`, `error`."""
    outcome = outcome_of(record)
    return verdict_text(record, markup=False) if outcome == "FAIL" else outcome


def reason_of(record: RunRecord) -> str:
    """Why a run did not pass, in one line: the first failed checks, the OOM at its cap, the error."""
    outcome = outcome_of(record)
    if outcome == "FAIL" and record.verdict is not None:
        failed = record.verdict.failed
        first = failed[0]
        upstream = f" [{first.upstream}]" if first.upstream else ""
        more = (
            f" (+{len(failed) - 1} more: {', '.join(c.name for c in failed[1:])})" if len(failed) > 1 else ""
        )
        return _reason_line(f"{first.name}: {first.reason or 'failed'}{upstream}{more}")
    if outcome == "OOM":
        peak = f", peak {format_size(record.peak_memory_bytes)}" if record.peak_memory_bytes else ""
        failed = record.verdict.failed if record.verdict else []
        known = next((check.upstream for check in failed if check.upstream), None)
        upstream = f" [{known}]" if known else ""  # the writer's known cause (harness/run/classify.py)
        left = f"; {left}" if (left := left_text(record)) else ""
        return _reason_line(f"{_oom_where(record)}{peak}{left}{upstream}")
    if outcome == "unjudged":
        limits = record.verdict.failed if record.verdict else []
        why = f": {limits[0].name}: {limits[0].reason}" if limits else ""
        return _reason_line(f"the harness could not judge the table{why}")
    if outcome == "unsupported":  # "<writer> does not support this catalog: <why>": the gist; the
        # whole reason is in the report's and the summary's table of writers that did not run.
        gist = (record.error or "").removeprefix(f"{record.writer} ").split(": ", 1)[0]
        return _reason_line(gist)
    if outcome == "pass":
        return ""
    left = left_text(record)  # first: what a failed write left must survive the clipping
    return _reason_line(f"{left}; {record.error}" if left else record.error or "")


def _oom_where(record: RunRecord) -> str:
    """Whose limit the kill hit: the worker's cap, or the harness box around it (then the worker
    was not the only one in it: the box's rss at the kill says how full it was)."""
    if record.oom_limit != "harness box":
        return f"OOM-killed at the {cap_text(record.cap_bytes)}"
    at_kill = f" (rss {format_size(record.box_rss_at_kill_bytes)})" if record.box_rss_at_kill_bytes else ""
    return f"OOM-killed when the {format_size(record.box_cap_bytes)} harness box filled{at_kill}"


def growth_text(record: RunRecord, fit: Fit | None) -> str:
    """`1.8x`: the last commits' latency over the first (the steps' where a run committed fewer
    than 3 times); `n^1.02`: the exponent of total write time against batch count n, where a
    scale axis ran. 1x and n^1 are linear in total, 2 quadratic."""
    parts = []
    commits = late_early_ratio(record.commit_latencies_s) if len(record.commit_latencies_s) >= 3 else None
    ratio = commits if commits is not None else record.late_early_ratio
    if ratio is not None:
        parts.append(f"{ratio:.1f}x")
    if fit is not None and fit.growth_exponent is not None:
        parts.append(f"n^{fit.growth_exponent:.2f}")
    return ", ".join(parts) or "-"


GroupKey = tuple[str, str, int | None, str, str]


def _group_key(record: RunRecord) -> GroupKey:
    return (
        record.scenario,
        record.preset,
        record.cap_bytes,
        record.stack,
        "" if record.layout.plain else record.layout.label,
    )


# The fields a record's scale fit shares with it (its key's of these names).
FIT_OF_RECORD = ("scenario", "writer", "variant", "preset", "cap_bytes", "stack")


def _fit_of(record: RunRecord, found: Sequence[Fit]) -> Fit | None:
    for fit in found:
        if all(getattr(fit.key, name) == getattr(record, name) for name in FIT_OF_RECORD):
            return fit
    return None


def _median_run(runs: Sequence[RunRecord]) -> RunRecord:
    ordered = sorted(runs, key=lambda r: r.write_s if r.write_s is not None else float("inf"))
    return ordered[(len(ordered) - 1) // 2]


def _writer_row(
    runs: Sequence[RunRecord], found: Sequence[Fit], steps: dict[PairKey, list[RunRecord]]
) -> VerdictRow:
    """The repeats of one writer as one row: passed when every repeat passed; otherwise the worst
    repeat's outcome and reason, with how many repeats it was. `steps`: the maintenance after each
    write, which its total cost includes."""
    outcomes = [outcome_of(r) for r in runs]
    shown = _median_run(runs)
    worst = next((o for o in APART_ORDER if o in outcomes), "pass")
    reason = ""
    if worst != "pass":
        failing = [r for r in runs if outcome_of(r) == worst]
        shown = failing[0]
        reason = reason_of(shown)
        if len(runs) > 1:
            reason = _reason_line(f"{len(failing)} of {len(runs)} repeats: {reason}")
    times = [r.write_s for r in runs if r.write_s is not None]
    walls = [r.wall_s for r in runs if r.wall_s is not None]
    peaks = [r.peak_rss_bytes for r in runs if r.peak_rss_bytes is not None]
    return VerdictRow(
        total_cost=total_cost_text(runs, steps) if worst == "pass" else "-",
        writer=writer_text(shown),
        outcome=worst,
        rank=None,
        write_s=statistics.median(times) if times else None,
        wall_s=statistics.median(walls) if walls else None,
        peak_rss_bytes=max(peaks) if peaks else None,
        growth=growth_text(shown, _fit_of(shown, found)) if worst == "pass" else "-",
        reason=reason,
        repeats=len(runs),
    )


def total_cost_text(runs: Sequence[RunRecord], steps: dict[PairKey, list[RunRecord]] | None = None) -> str:
    """The medians of the runs' total costs (their write, the maintenance steps after it, and
    `reads` full and selective scans of the table as the last left it): `41.2 s, $0.0042`, the
    dollars where requests were counted; "-" where unmeasured."""
    costs = [_owned(run, (steps or {}).get(_pair(run), [])) for run in runs]
    seconds = [cost[0] for cost in costs if cost[0] is not None]
    if not seconds:
        return "-"
    dollars = [cost[1] for cost in costs if cost[1] is not None]
    price = f", ${statistics.median(dollars):.4f}" if dollars else ""
    return f"{statistics.median(seconds):.1f} s{price}"


def _owned(write: RunRecord, steps: list[RunRecord]) -> tuple[float | None, float | None]:
    if not steps:
        return write.total_cost_s, write.total_cost_usd
    return owned_cost([write, *steps], steps[-1])


def _reads(groups: Sequence[VerdictGroup]) -> str:
    counts = sorted({reads for group in groups for reads in group.reads if reads is not None})
    return f"{'/'.join(map(str, counts)) or 'N'} full and selective scans (--reads)"


def _pass_order(row: VerdictRow) -> tuple[float, float, str]:
    write = row.write_s if row.write_s is not None else float("inf")
    return write, float(row.peak_rss_bytes or 0), row.writer


def _apart_order(row: VerdictRow) -> tuple[int, str]:
    return APART_ORDER.index(row.outcome) if row.outcome in APART_ORDER else 0, row.writer


def verdict_groups(records: Iterable[RunRecord]) -> list[VerdictGroup]:
    """A group per verdict scenario, preset, table layout, cap and stack (VERDICT_SCENARIOS'
    order): the passing writers ranked (fastest write first, then the lower resident peak), then the
    others apart."""
    records = list(records)
    found = fits(records)
    steps = maintenance_after(records)
    by_group: dict[GroupKey, dict[str, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        if is_ranked(record) and not record.cap_probe:  # find-cap's probes are reports/caps.py's
            by_group[_group_key(record)][writer_text(record)].append(record)
    groups = []
    for key in sorted(by_group, key=lambda k: (VERDICT_SCENARIOS.index(k[0]), k[1], k[4], k[2] or 0, k[3])):
        rows = [_writer_row(runs, found, steps) for runs in by_group[key].values()]
        passed = sorted((r for r in rows if r.outcome == "pass"), key=_pass_order)
        ranked = [_with_rank(row, index) for index, row in enumerate(passed, start=1)]
        apart = sorted((r for r in rows if r.outcome != "pass"), key=_apart_order)
        reads = frozenset(r.reads for runs in by_group[key].values() for r in runs)
        groups.append(VerdictGroup(*key, rows=ranked + apart, reads=reads))
    return groups


def _with_rank(row: VerdictRow, rank: int) -> VerdictRow:
    return VerdictRow(**{**row.__dict__, "rank": rank})


VERDICT_HEADERS = ["#", "writer", "result", "write s", "peak rss", "growth", "total cost", "why not"]
VERDICT_NUMERIC = {0, 3, 4, 6}


def verdict_cells(row: VerdictRow) -> list[str]:
    """The plain-text cells of a row (VERDICT_HEADERS): a failed run's time is its wall time, if any."""
    seconds = row.write_s if row.write_s is not None or row.outcome == "pass" else row.wall_s
    timing = "-" if seconds is None else f"{seconds:.2f}"
    if row.write_s is None and seconds is not None:
        timing += " (wall)"
    repeats = f" ({row.repeats} runs)" if row.repeats > 1 and row.outcome == "pass" else ""
    return [
        str(row.rank) if row.rank is not None else "-",
        row.writer + repeats,
        row.outcome,
        timing,
        format_size(row.peak_rss_bytes),
        row.growth,
        row.total_cost,
        row.reason,
    ]


def shown_rows(group: VerdictGroup) -> list[VerdictRow]:
    """The rows a table shows: the writers that did not support the operation for one reason
    folded into one row naming them all (a matrix of many writers has many of them)."""
    unsupported: dict[str, list[str]] = {}
    for row in group.rows:
        if row.outcome == "unsupported":
            unsupported.setdefault(row.reason, []).append(row.writer)
    folded = [
        VerdictRow(
            writer=", ".join(writers),
            outcome="unsupported",
            rank=None,
            write_s=None,
            wall_s=None,
            peak_rss_bytes=None,
            growth="-",
            reason=reason,
            repeats=1,
        )
        for reason, writers in unsupported.items()
    ]
    return [row for row in group.rows if row.outcome != "unsupported"] + folded


def verdict_rows(group: VerdictGroup) -> list[list[str]]:
    return [verdict_cells(row) for row in shown_rows(group)]


def verdict_headline(group: VerdictGroup) -> str:
    """The group and, in one sentence, the writer to use, or that none passed."""
    if not group.ranked:
        return f"{group.title}: no writer passed"
    best = group.ranked[0]
    others = len(group.ranked) - 1
    tail = f"; {others} more passed" if others else ""
    failing = [row for row in group.apart if row.outcome in ("FAIL", "OOM", "error")]
    tail += f"; {len(failing)} failed" if failing else ""
    return f"{group.title}: use {best.writer} (fastest that passed{tail})"


def verdict_table(records: Iterable[RunRecord], title: str = "verdict") -> Table | None:
    """The verdict for the terminal, narrow enough for 100 columns: a heading row per group, its
    passed writers ranked, the others apart with their reason in the result cell; None when no
    run of a verdict scenario is among the records."""
    records = list(records)
    groups = verdict_groups(records)
    if not groups:
        return None
    maintained = {step.phase for steps in maintenance_after(records).values() for step in steps}
    owned = f"the write, its {', '.join(sorted(maintained))}," if maintained else "the write"
    # No outer border or padding: four columns more for the result, within 100.
    table = Table(
        title=f"{title}: ranked by write time, then peak rss; total cost: {owned} and {_reads(groups)}",
        header_style="bold",
        show_edge=False,
        pad_edge=False,
    )
    longest = max(len(row.writer) for group in groups for row in group.rows)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("writer", min_width=longest)  # the folded unsupported ones wrap between names
    for header in ("write s", "peak rss"):
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("growth", no_wrap=True)
    table.add_column("total cost", justify="right", no_wrap=True)
    table.add_column("result")
    for group in groups:
        layout = f", {escape(group.layout)}" if group.layout else ""
        table.add_row(
            "", f"[bold]{group.operation}[/] {escape(group.preset)}{layout}, {cap_text(group.cap_bytes)}"
        )
        for row in shown_rows(group):
            rank, writer, _, seconds, peak, growth, total, reason = verdict_cells(row)
            rank, writer, seconds, peak, growth, total = (
                escape(cell) for cell in (rank, writer, seconds, peak, growth, total)
            )
            reason = escape(clipped(reason, TERMINAL_REASON_CHARS))
            result = f"[{OUTCOME_STYLE.get(row.outcome, 'dim')}]{row.outcome}[/]" + (
                f": {reason}" if reason else ""
            )
            table.add_row(rank, writer, seconds, peak, growth, total, result)
        table.add_section()
    # Narrower than the table: the writer and why it failed stay, growth goes first.
    return keep_first(table, "writer", "result", "#", "write s", "peak rss", "total cost")
