"""A command's session: the checks that need the plug-ins, a results folder with its
environment.json and the stack's services up meanwhile, a workload run in it, and the exit policy."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.base.caps import format_size, resolve_isolation
from harness.base.errors import IcebenchError, WorkloadStopped
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
def session(settings: Settings, keep_sources: bool = False) -> Iterator[tuple[ResultsStore, Stack]]:
    """A new results folder with its environment.json, and the stack's services up meanwhile;
    first, what harnesses killed before they could clean up left (harness.services.leftovers).
    `keep_sources`: sets on the stack's object store are read or written (its data is kept)."""
    if swept := sweep_leftovers(settings.results_dir):
        output.console.print(f"swept what killed harnesses left: {swept}")
    store = ResultsStore(settings.results_dir)
    store.write_environment(
        environment(resolve_isolation(settings.isolation), settings.model_dump(mode="json"))
    )
    services = store.folder / "services"
    with (
        owned(store.folder),
        started(settings, services, keep_sources) as stack,
        spark_cluster(settings, services),
    ):
        yield store, stack
        output.console.print(f"harness: resident peak {format_size(peak_since_start())}")
    if store.unwritten:  # each was said as it ran: the command must not pass as complete
        raise IcebenchError(f"{store.unwritten} run records could not be written to {store.runs_path}")


@contextmanager
def spark_cluster(settings: Settings, folder: Path) -> Iterator[None]:
    """`--spark-master standalone[N]`: a standalone cluster of N workers on loopback for the
    workload, the machine's cores shared among them; its drivers find it in their environment."""
    from harness.base.caps import machine_memory_bytes
    from harness.engines.choices import SPARK_CLUSTER_VARIABLE, standalone_workers
    from harness.engines.spark import SparkOptions
    from harness.services.processes import environment_variables
    from harness.services.spark_cluster import standalone_cluster

    master = settings.engine_options(SparkOptions).master
    if (workers := standalone_workers(master)) is None:
        yield
        return
    cores = max(1, (os.cpu_count() or 1) // workers)
    offered = f"{machine_memory_bytes() // 2**20}m"  # what executors may ask; each is capped by --memory
    output.console.print(f"spark: starting {master}, {workers} workers of {cores} cores on loopback")
    cluster = standalone_cluster(folder / "spark", workers=workers, cores=cores, memory=offered)
    with cluster as url, environment_variables({SPARK_CLUSTER_VARIABLE: url}):
        yield


def run_workload(
    command: str,
    what: str,
    settings: Settings,
    report: bool,
    workload: Callable[..., list[RunRecord]],
    keep_sources: bool = False,
) -> list[RunRecord]:
    """Says what runs where, runs `workload(store, stack, events)` in a session, then prints the
    tables, where the results are and, if asked, writes the report."""
    output.console.print(
        f"icebench {command}: {what}, cap {format_size(settings.memory)} "
        f"({resolve_isolation(settings.isolation)}), stack {settings.stack}"
    )
    stopped: WorkloadStopped | None = None
    with session(settings, keep_sources) as (store, stack):
        try:
            records = workload(store, stack, RichEvents())
        except WorkloadStopped as short:
            records, stopped = short.records, short
    print_results(records, title=f"icebench {command} {store.run_id}")
    output.console.print(f"results: {store.runs_path}")
    if report:
        print_report(write_report(store.folder))
    if stopped is not None:
        raise stopped
    return records


def exit_on_verdict(args: argparse.Namespace, records: list[RunRecord]) -> None:
    """The exit-code policy (docs/commands.md): results are the product, so a failed run exits 0
    unless `--fail-on-verdict` asks for 3."""
    if args.fail_on_verdict:
        require_passed(records)
