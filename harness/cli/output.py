"""What a user reads: the console, tables fitted to the terminal, progress bars, a matrix's events
as bars and lines, the results' tables and where they are. Loaded by a command once its flags are
read (rich and the reports' tables)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from harness.judge.oracle import OPERATION_COMPLETED
from harness.model import RunRecord
from harness.run.events import MatrixEvents, ProgressFactory
from harness.run.runner import RunPlan
from reports.caps import cap_figures, cap_lines, table_text
from reports.compare import NOT_COMPARABLE, KeyComparison
from reports.fits import fits
from reports.report import Report
from reports.rounds import maintenance_tables, rounds_tables
from reports.rows import rows_tables
from reports.summary import fit_table, summary_tables
from reports.terminal import fitted
from reports.variants import variant_tables
from reports.verdict import verdict_table

# A file or CI log gets 200 columns unless COLUMNS says otherwise; a terminal, its own width.
console = Console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 200)


def show(*renderables: RenderableType) -> None:
    """Print; a table wider than the console as one block per row (reports/terminal.py)."""
    console.print(*(fitted(renderable, console) for renderable in renderables))


def say(text: str) -> None:
    """A line as it is: no markup, no highlighting (names and paths print as they are)."""
    console.print(text, markup=False, highlight=False)


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


@contextmanager
def generation_progress() -> Iterator[ProgressFactory]:
    with progress_bar() as progress:

        def factory(description: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(description, total=total)
            return lambda rows: progress.advance(task, rows)

        yield factory


class RichEvents(MatrixEvents):
    """A matrix's progress as rich progress bars, a line per finished run."""

    def __init__(self) -> None:
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.rows_task: TaskID | None = None  # inside the current run, once its worker reports

    def generating(self) -> AbstractContextManager[ProgressFactory]:
        return generation_progress()

    @contextmanager
    def stage(self, description: str, total: int) -> Iterator[None]:
        with progress_bar() as self.progress:
            self.task = self.progress.add_task(description, total=total)
            yield

    def run_started(self, plan: RunPlan) -> None:
        if self.progress is not None and self.task is not None:
            axis = f" ({plan.limit_rows} rows)" if plan.limit_rows else ""
            self.progress.update(
                self.task, description=f"{plan.preset}: {run_label(plan)} x {plan.writer}{axis}"
            )
            self.rows_task = self.progress.add_task("  rows fed", total=None, visible=False)

    def run_progress(self, fed: int, rows: int) -> None:
        if self.progress is not None and self.rows_task is not None:
            self.progress.update(self.rows_task, completed=fed, total=rows, visible=True)

    def run_finished(self, plan: RunPlan, record: RunRecord) -> None:
        if self.progress is None or self.task is None:
            return
        if self.rows_task is not None:
            self.progress.remove_task(self.rows_task)
            self.rows_task = None
        self.step_finished(plan, record)
        self.progress.advance(self.task)

    def step_finished(self, plan: RunPlan, record: RunRecord) -> None:
        if self.progress is None:
            return
        axis = (
            f" {record.batches or 0:>4} batches, write {record.write_s or 0:.2f} s" if plan.limit_rows else ""
        )
        self.progress.console.print(
            f"  {run_label(plan):<24} {plan.writer:<30}{axis} {record.status:<11} {verdict_word(record)}"
        )


def run_label(plan: RunPlan) -> str:
    """The scenario, a rounds phase as `round 2 upsert`, a step after a write as `append compact`."""
    if plan.round is not None:
        return f"round {plan.round} {plan.phase}"
    return f"{plan.scenario} {plan.phase}" if plan.phase else plan.scenario


def verdict_word(record: RunRecord) -> str:
    """After the status: the verdict (an unsupported run's refusal is no failed check of its own)."""
    if record.verdict is None or record.status == "unsupported":
        return ""
    return "pass" if record.verdict.passed else f"FAIL ({', '.join(c.name for c in record.verdict.failed)})"


def print_results(records: list[RunRecord], title: str) -> None:
    """The summary table, the growth fit of each scale axis with its points, the rounds table,
    then what a reader came for, last where the terminal stops: the verdict, what fits in each
    cap, and the smallest cap each pair survived (find-cap)."""
    show(*summary_tables(records, title=title))
    show(*(fit_table(fit) for fit in fits(records)))
    show(*rows_tables(records))
    show(*rounds_tables(records), *maintenance_tables(records))
    show(*variant_tables(records))
    if verdict := verdict_table(records):
        show(verdict)
    for line in cap_lines(records):
        say(line.text)
    if figures := cap_figures(records):
        console.print("smallest cap survived (find-cap):")
        for figure in figures:
            say(f"  {table_text(figure.table)}: {figure.writer} {figure.text}")


def print_failed_checks(records: list[RunRecord]) -> None:
    """Each record's failed checks; of a writer that refused the table (unsupported: a format
    version its library does not write), only what its refusal broke, beyond not writing."""
    for record in records:
        for check in record.verdict.failed if record.verdict else []:
            if record.status == "unsupported" and check.name == OPERATION_COMPLETED:
                continue
            upstream = f" [{check.upstream}]" if check.upstream else ""
            # escaped: rich would take `[dlt-hub/dlt#3752]` for a style tag and drop it
            console.print(f"  [red]failed[/] {check.name}: {escape(f'{check.reason}{upstream}')}")


def print_report(report: Report) -> None:
    console.print(f"report: {report.html}  ({len(report.plots)} plots; Markdown: {report.markdown})")


def print_not_comparable(rows: list[KeyComparison]) -> None:
    for row in rows:
        changed = f"{', '.join(row.base_sources)} → {', '.join(row.current_sources)}"
        console.print(f"{NOT_COMPARABLE}: {row.key} (writer source {changed})")
