"""What fits in which cap: the verdict per cap of a matrix run under several (`--memory 2g,4g`),
and the smallest cap each pair survived (`--find-cap`), read from the records alone."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.base.caps import format_size
from harness.model import RunRecord
from reports.verdict import is_ranked, outcome_of, writer_text

# A pair's table: scenario, preset, layout label ("" plain) and stack.
Table = tuple[str, str, str, str]


def _table_of(record: RunRecord) -> Table:
    return record.scenario, record.preset, "" if record.layout.plain else record.layout.label, record.stack


def table_text(table: Table) -> str:
    scenario, preset, layout, stack = table
    return (
        f"{scenario} {preset}"
        + (f", {layout}" if layout else "")
        + (f", stack {stack}" if stack != "embedded" else "")
    )


def _size(cap_bytes: int | None) -> str:
    return "no cap" if cap_bytes is None else format_size(cap_bytes)


@dataclass(frozen=True)
class CapLine:
    """Under one cap, on one table: who fits (and passed), who fits with a wrong table, who was
    OOM-killed, who failed otherwise."""

    table: Table
    cap_bytes: int | None
    fits: list[str]
    fits_failing: list[str]
    oom: list[str]
    errors: list[str]

    @property
    def groups(self) -> tuple[list[str], ...]:
        return self.fits, self.fits_failing, self.oom, self.errors

    @property
    def text(self) -> str:
        parts = [f"fits in {_size(self.cap_bytes)}: {', '.join(self.fits) or 'none'}"]
        if self.fits_failing:
            parts.append(f"fits, table FAIL: {', '.join(self.fits_failing)}")
        if self.oom:
            parts.append(f"OOM: {', '.join(self.oom)}")
        if self.errors:
            parts.append(f"error: {', '.join(self.errors)}")
        return f"{table_text(self.table)} - " + "; ".join(parts)


def cap_lines(records: Iterable[RunRecord]) -> list[CapLine]:
    """A line per table and cap, for tables the matrix ran under more than one cap (find-cap's
    probes aside); none when every table ran under one cap."""
    by_table: dict[Table, dict[int | None, dict[str, list[RunRecord]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for record in records:
        if is_ranked(record) and not record.cap_probe and record.status != "unsupported":
            by_table[_table_of(record)][record.cap_bytes][writer_text(record)].append(record)
    lines = []
    for table, caps in by_table.items():
        if len(caps) < 2:
            continue
        for cap in sorted(caps, key=lambda c: c or 0):
            outcomes = {writer: [outcome_of(r) for r in runs] for writer, runs in sorted(caps[cap].items())}
            lines.append(
                CapLine(
                    table=table,
                    cap_bytes=cap,
                    fits=[w for w, o in outcomes.items() if set(o) == {"pass"}],
                    fits_failing=[
                        w for w, o in outcomes.items() if "FAIL" in o and not {"OOM", "error"} & set(o)
                    ],
                    oom=[w for w, o in outcomes.items() if "OOM" in o],
                    errors=[w for w, o in outcomes.items() if "error" in o and "OOM" not in o],
                )
            )
    return lines


@dataclass(frozen=True)
class CapFigure:
    """The smallest cap a pair survived among those it ran under, and the largest below it that it
    did not: the figure is good to their ratio (find-cap bisects until it is ~1.1)."""

    table: Table
    writer: str
    smallest_bytes: int | None  # None: it survived none
    failed_below_bytes: int | None  # None: nothing below it was tried, or it failed at every cap

    @property
    def text(self) -> str:
        if self.smallest_bytes is None:
            tried = _size(self.failed_below_bytes) if self.failed_below_bytes else "any cap"
            return f"more than {tried}"
        if self.failed_below_bytes is None:
            return f"at most {_size(self.smallest_bytes)}"
        within = self.smallest_bytes / self.failed_below_bytes - 1
        failed = _size(self.failed_below_bytes)
        return f"{_size(self.smallest_bytes)} (OOM at {failed}, within {within:.0%})"


def cap_figures(records: Sequence[RunRecord]) -> list[CapFigure]:
    """For every pair find-cap probed: the smallest cap it survived."""
    probed = {(_table_of(r), writer_text(r)) for r in records if r.cap_probe}
    runs: dict[tuple[Table, str], list[RunRecord]] = defaultdict(list)
    for record in records:
        if (key := (_table_of(record), writer_text(record))) in probed and record.limit_rows is None:
            runs[key].append(record)
    figures = []
    for (table, writer), pair in sorted(runs.items()):
        capped = [r for r in pair if r.cap_bytes is not None]
        smallest = min((r.cap_bytes for r in capped if r.survived_cap), default=None)  # type: ignore[type-var]
        below = [
            r.cap_bytes for r in capped if not r.survived_cap and (smallest is None or r.cap_bytes < smallest)
        ]
        figures.append(CapFigure(table, writer, smallest, max(below, default=None)))  # type: ignore[type-var]
    return figures
