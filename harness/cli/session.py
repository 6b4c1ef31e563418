"""A command's session: the checks that need the plug-ins, a results folder with its
environment.json and the stack's services up meanwhile, a workload run in it, and the exit policy."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from harness.base.caps import format_size, resolve_isolation
from harness.base.errors import IcebenchError
from harness.base.ownership import owned
from harness.base.results import ResultsStore, environment
from harness.base.settings import Settings, check_engines
from harness.cli import output
from harness.cli.output import RichEvents, print_report, print_results
from harness.engines.maintainers import maintainers
from harness.engines.verifiers import get_verifier, verifiers
from harness.engines.writers import writers
from harness.model import EngineOptions, RunRecord
from harness.services.leftovers import sweep_leftovers
from harness.services.own_memory import peak_since_start
from harness.services.stacks import Stack, started
from reports.report import write_report
from reports.verdict import require_passed


def check_plugins(settings: Settings) -> None:
    """The engine options against the plug-ins' option models (writers', verifiers', maintainers'),
    and the verifier: what needs the plug-ins loaded."""
    plugins = [*writers().values(), *verifiers().values(), *maintainers().values()]
    models: dict[str, type[EngineOptions]] = {
        plugin.options.engine: plugin.options for plugin in plugins if plugin.options.engine
    }
    check_engines(settings.engines, models)
    get_verifier(settings.verify_with)


@contextmanager
def session(settings: Settings) -> Iterator[tuple[ResultsStore, Stack]]:
    """A new results folder with its environment.json, and the stack's services up meanwhile;
    first, what harnesses killed before they could clean up left (harness.services.leftovers)."""
    if swept := sweep_leftovers(settings.results_dir):
        output.console.print(f"swept what killed harnesses left: {swept}")
    store = ResultsStore(settings.results_dir)
    store.write_environment(
        environment(resolve_isolation(settings.isolation), settings.model_dump(mode="json"))
    )
    with owned(store.folder), started(settings, store.folder / "services") as stack:
        yield store, stack
        output.console.print(f"harness: resident peak {format_size(peak_since_start())}")
    if store.unwritten:  # each was said as it ran: the command must not pass as complete
        raise IcebenchError(f"{store.unwritten} run records could not be written to {store.runs_path}")


def run_workload(
    command: str, what: str, settings: Settings, report: bool, workload: Callable[..., list[RunRecord]]
) -> list[RunRecord]:
    """Says what runs where, runs `workload(store, stack, events)` in a session, then prints the
    tables, where the results are and, if asked, writes the report."""
    output.console.print(
        f"icebench {command}: {what}, cap {format_size(settings.memory)} "
        f"({resolve_isolation(settings.isolation)}), stack {settings.stack}"
    )
    with session(settings) as (store, stack):
        records = workload(store, stack, RichEvents())
    print_results(records, title=f"icebench {command} {store.run_id}")
    output.console.print(f"results: {store.runs_path}")
    if report:
        print_report(write_report(store.folder))
    return records


def exit_on_verdict(args: argparse.Namespace, records: list[RunRecord]) -> None:
    """The exit-code policy (docs/commands.md): results are the product, so a failed run exits 0
    unless `--fail-on-verdict` asks for 3."""
    if args.fail_on_verdict:
        require_passed(records)
