"""`icebench`: generate data, run one scenario x writer, a matrix, or a batch-count scale.

The one module that prints: the layers below return records or report events (MatrixEvents)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import typing
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, Literal, TypeVar


def _terminated_while_starting(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM or SIGHUP while the libraries below load (~2.5 s), before main() takes the signals
    over: the same line and exit code as later, not a silent 143. An exit at once, not SystemExit:
    nothing is started yet to clean up, and SystemExit raised amid a library's import can be
    caught there (once, in a fresh-clone CI run, the command ran on and exited 0)."""
    print(f"icebench: terminated ({signal.Signals(signum).name})", file=sys.stderr, flush=True)
    os._exit(128 + signum)


if __name__ == "__main__" or Path(sys.argv[0]).name == "icebench":  # the command, not an import by tests
    for _signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(_signum, _terminated_while_starting)

from pydantic import BaseModel, TypeAdapter, ValidationError
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from generators.changes import generate_changes
from generators.checksum import short_form
from generators.datasets import DataSet, data_set
from generators.events import generate_events
from generators.manifest import MANIFEST_FILE, DatasetManifest
from generators.presets import PRESETS, get_preset
from generators.schema import KEY_COLUMN
from generators.wide import MAX_COLUMNS, MAX_FILES, MAX_FIRST_KEY, MAX_ROWS, generate_base
from generators.your_changes import sets_of_yours
from generators.your_data import your_data
from harness.base.caps import (
    ISOLATIONS,
    check_cap_fits,
    format_size,
    parse_size,
    resolve_isolation,
)
from harness.base.errors import IcebenchError, IcebenchWarning, failure_line, first_error, warn
from harness.base.layout import parse_partition, parse_property, parse_sort
from harness.base.ownership import owned
from harness.base.redaction import redact
from harness.base.results import ResultsStore, environment, read_runs, version_text
from harness.base.settings import (
    BOX_ENV,
    EngineTables,
    Settings,
    check_engines,
    check_version,
    load_settings,
    read_toml,
)
from harness.base.signals import terminates_like_ctrl_c
from harness.engines.fileio import FILE_IOS, file_io_impl
from harness.engines.spark import SparkOptions, check_spark_master
from harness.engines.spark_generate import generate_base_on_spark
from harness.engines.verifiers import get_verifier, verifier_names, verifiers
from harness.engines.writers import get_writer, writers
from harness.entry import COMMAND_HELP, DESCRIPTION, EPILOG, HelpFormatter
from harness.model import EngineOptions, Operation, RunRecord, TableLayout
from harness.run.matrix import (
    MatrixConfig,
    MatrixEvents,
    ProgressFactory,
    check_layouts,
    check_preset_layouts,
    comma_list,
    default_scenarios,
    default_writers,
    load_matrix_config,
    prepare_data,
    run_matrix,
    your_scenarios,
)
from harness.run.rounds import RoundsConfig, load_rounds_config, run_rounds
from harness.run.runner import Runner, RunPlan
from harness.services import cleanup
from harness.services.envs import variants
from harness.services.leftovers import sweep_leftovers
from harness.services.own_memory import peak_since_start, run_in_box
from harness.services.stacks import Stack, check_catalog, get_stack, stacks, started
from harness.services.stacks.local_services import CATALOGS
from reports.baseline import baseline_of, build_baseline, load_baseline, newest_results_folder, save_baseline
from reports.caps import cap_figures, cap_lines, table_text
from reports.compare import (
    NOT_COMPARABLE,
    KeyComparison,
    compare,
    comparison_markdown,
    comparison_tables,
    not_comparable,
    nothing_shared,
    version_changes,
)
from reports.fits import fits
from reports.gate import (
    GateFailed,
    load_thresholds,
    passed_text,
    regressions,
    regressions_markdown,
    regressions_table,
    require_compared,
)
from reports.report import Report, write_report
from reports.rounds import rounds_tables
from reports.screenshot import screenshot
from reports.summary import (
    UNSUPPORTED_HEADERS,
    fit_table,
    markdown_table,
    summary_markdown,
    summary_tables,
    unsupported_rows,
)
from reports.terminal import fitted
from reports.verdict import require_passed, verdict_table
from scenarios import get_scenario, scenarios
from scenarios.base import DataSets
from scenarios.rounds import PHASES

ConfigTable = TypeVar("ConfigTable", bound=BaseModel)

# Writer libraries whose versions a run can vary (--pyiceberg 0.9.1,0.12.0), and Iceberg's Spark
# runtime (--iceberg-spark 1.9.2,1.10.1: a jar, harness/services/envs.py JVM_RUNTIMES), and
# iceberg-rust's crates (--iceberg-rust 0.10.0: the Rust worker built again, harness/services/rust_worker.py).
VERSIONED_LIBRARIES = (
    "pyiceberg",
    "pyiceberg-core",
    "dlt",
    "polars",
    "daft",
    "duckdb",
    "pyspark",
    "iceberg-spark",
    "iceberg-rust",
)

# A file or CI log gets 200 columns unless COLUMNS says otherwise; a terminal, its own width.
console = Console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 200)


def show(*renderables: RenderableType) -> None:
    """Print; a table wider than the console as one block per row (reports/terminal.py)."""
    console.print(*(fitted(renderable, console) for renderable in renderables))


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
                self.task, description=f"{plan.preset}: {_run_label(plan)} x {plan.writer}{axis}"
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
        axis = (
            f" {record.batches or 0:>4} batches, write {record.write_s or 0:.2f} s" if plan.limit_rows else ""
        )
        self.progress.console.print(
            f"  {_run_label(plan):<24} {plan.writer:<30}{axis} {record.status:<11} {_verdict_word(record)}"
        )
        self.progress.advance(self.task)


def _run_label(plan: RunPlan) -> str:
    """The scenario, or a rounds phase as `round 2 upsert`."""
    return f"round {plan.round} {plan.phase}" if plan.round is not None else plan.scenario


def _verdict_word(record: RunRecord) -> str:
    if record.verdict is None:
        return ""
    return "pass" if record.verdict.passed else f"FAIL ({', '.join(c.name for c in record.verdict.failed)})"


def _print_results(records: list[RunRecord], title: str) -> None:
    """The summary table, the growth fit of each scale axis with its points, the rounds table,
    then what a reader came for, last where the terminal stops: the verdict, what fits in each
    cap, and the smallest cap each pair survived (find-cap)."""
    show(*summary_tables(records, title=title))
    show(*(fit_table(fit) for fit in fits(records)))
    show(*rounds_tables(records))
    if verdict := verdict_table(records):
        show(verdict)
    for line in cap_lines(records):
        console.print(line.text, markup=False, highlight=False)
    if figures := cap_figures(records):
        console.print("smallest cap survived (find-cap):")
        for figure in figures:
            console.print(
                f"  {table_text(figure.table)}: {figure.writer} {figure.text}", markup=False, highlight=False
            )


class UsageError(IcebenchError):
    """A flag or argument argparse refused: one line naming it, exit 2."""


def _not_empty(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """`convert`, after refusing an empty or blank value (which would otherwise mean the default,
    or the current folder for a path)."""

    def parse(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError("must not be empty")
        return convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")  # argparse's "invalid <name> value"
    return parse


def _within(model: type[BaseModel], field: str) -> Callable[[str], Any]:
    """A flag's value checked against the range of `model`'s field (Settings, MatrixConfig...):
    one range for the flag, the environment and the config file."""
    info = model.model_fields[field]
    adapter: TypeAdapter[Any] = TypeAdapter(Annotated[info.annotation, *info.metadata])

    def parse(text: str) -> Any:
        try:
            return adapter.validate_python(text)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(f"{exc.errors()[0]['msg']} (got {text!r})") from None

    return parse


def _int_from(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high} (got {text})")
        return value

    return parse


def _names(text: str) -> list[str]:
    """`a,b`: at least one name (an empty list would silently mean every one)."""
    names = comma_list(text)
    if not names:
        raise argparse.ArgumentTypeError(f"no name in {text!r}")
    return names


def _dest(library: str) -> str:
    """The argparse attribute of a library's version flag (`--iceberg-spark`: iceberg_spark)."""
    return library.replace("-", "_")


def _versions(text: str) -> list[str]:
    try:
        return [check_version(version) for version in _names(text)]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _file_ios(text: str) -> list[str]:
    try:
        return [file_io_impl(name) and name for name in _names(text)]
    except IcebenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _size(text: str) -> str:
    """A size, or (matrix --memory) several comma-separated, each checked."""
    try:
        for size in comma_list(text) or [text]:
            parse_size(size)
    except IcebenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _cap_list(text: str | None) -> list[str] | None:
    """matrix --memory 2g,4g: the cap axis; one size is the settings' cap."""
    return comma_list(text) if text and "," in text else None


def _largest_cap(args: argparse.Namespace) -> str | None:
    """The --memory the settings hold: the largest of a cap axis, the flag's or the config's
    [matrix] memory (every check is held to it)."""
    if args.memory and "," in args.memory and args.command != "matrix":
        raise IcebenchError(
            f"--memory {args.memory}: several caps are matrix's axis; {args.command} takes one"
        )
    axis = _cap_list(args.memory)
    if axis is None and args.command == "matrix":
        axis = load_matrix_config(args.config).memory or None
    return max(axis, key=parse_size) if axis else args.memory


def _spark_master(text: str) -> str:
    try:
        return check_spark_master(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _folder(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} does not exist or is not a folder")
    return path


def _config_file(text: str) -> Path:
    """A TOML file that exists and reads, checked even where the command would not open it."""
    path = Path(text)
    try:
        read_toml(path)
    except IcebenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return path


def _comma_ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if len(values) < 2 or min(values) < 1:
        raise argparse.ArgumentTypeError("give at least two positive batch counts, e.g. 25,50,100,200")
    return values


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=_config_file, help="TOML file with [settings] (and [matrix]) tables")
    parser.add_argument(
        "--memory", type=_size, help="memory cap per worker, e.g. 512m, 2g (default from settings: 2g)"
    )
    parser.add_argument(
        "--harness-memory",
        metavar="SIZE",
        type=_size,
        help="put the harness itself in a cgroup of SIZE, its workers nested inside (as in one container)",
    )
    parser.add_argument(
        "--allow-overcommit",
        action="store_true",
        default=None,
        help="accept a cap above the machine's memory (the kernel then never enforces it)",
    )
    parser.add_argument(
        "--allow-memory-above-box",
        action="store_true",
        default=None,
        help="accept a --memory above --harness-memory (the box, not the worker's cap, then ends a worker)",
    )
    parser.add_argument("--isolation", choices=ISOLATIONS)
    parser.add_argument("--stack", help=f"where tables live: {', '.join(stacks())} (default: embedded)")
    parser.add_argument(
        "--catalog",
        help=f"local-services' REST catalog: {', '.join(CATALOGS)} (default: iceberg-rest-fixture)",
    )
    parser.add_argument(
        "--batch-rows", type=_within(Settings, "batch_rows"), help="rows per batch handed to the writer"
    )
    parser.add_argument(
        "--timeout",
        type=_within(Settings, "worker_timeout_s"),
        metavar="SECONDS",
        help="per-run worker time limit: a slower worker is killed and recorded as timed out (default 1800)",
    )
    for library in VERSIONED_LIBRARIES:
        parser.add_argument(
            f"--{library}",
            metavar="VERSIONS",
            type=_versions,
            dest=_dest(library),
            help=f"run the workers with each of these {library} versions (comma-separated), in turn",
        )
    parser.add_argument(
        "--fileio",
        metavar="NAMES",
        type=_file_ios,
        help=f"run the pyiceberg writers through each of these FileIOs in turn: {', '.join(FILE_IOS)}",
    )
    parser.add_argument(
        "--profile", choices=("memray",), help="record worker allocations; the report links a flame graph"
    )
    parser.add_argument(
        "--verify-with",
        metavar="READER",
        help=f"one of {', '.join(verifier_names())}. pyiceberg: the oracle's own read alone (default); "
        "a verifier: reads too, must agree "
        "(on tables with equality deletes, which pyiceberg cannot read, its read is the one judged)",
    )
    parser.add_argument(
        "--spark-master",
        metavar="URL",
        type=_spark_master,
        help="Spark master, e.g. spark://host:7077 (default local[*]; [engines.spark] master)",
    )
    parser.add_argument("--results", type=Path, help="results root folder (default: results)")
    parser.add_argument(
        "--no-scan-cost",
        dest="scan_cost",
        action="store_false",
        default=None,
        help="skip the full and selective scan timed after each write (writes only)",
    )
    parser.add_argument(
        "--fail-on-verdict",
        action="store_true",
        help="exit 3 when a run did not pass (failed check, OOM, error; unsupported pairs excepted); "
        "default: exit 0, failures are results",
    )
    parser.add_argument(
        "--keep-warehouse",
        action="store_true",
        default=None,
        help="keep each run's warehouse under results/<run-id>/work",
    )


class VersionAction(argparse.Action):
    """`--version`: asks git only when given (argparse's own wants the text up front)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and commit, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit()


class Parser(argparse.ArgumentParser):
    """The parser of icebench and of each of its commands (add_subparsers makes them of this type):
    no flag takes an empty value, and a refused one is one line naming it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        if kwargs.get("action", "store") == "store" and kwargs.get("nargs") != 0 and "choices" not in kwargs:
            kwargs["type"] = _not_empty(kwargs.get("type", str))
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> typing.NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def one_of(names: Iterable[str]) -> str:
    """The names a flag takes, for its help (checked by our lookup, which suggests near misses)."""
    return f"one of: {', '.join(names)}"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="icebench", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action=VersionAction)
    commands = parser.add_subparsers(dest="command", required=True)

    _add_generate(commands)
    run = commands.add_parser("run", help=COMMAND_HELP["run"])
    run.add_argument("--scenario", required=True, help=one_of(scenarios()))
    run.add_argument("--writer", required=True, help=one_of(writers()))
    run.add_argument("--preset", default="tiny", help=f"{one_of(PRESETS)} (default tiny)")
    _add_source(run)
    _add_layout(run)
    run.add_argument(
        "--base", metavar="PATH", help="the set the table holds before (replace, upsert), as --source"
    )
    _common(run)

    report = commands.add_parser("report", help=COMMAND_HELP["report"])
    report.add_argument("results_dir", type=Path, nargs="?", metavar="RESULTS_DIR", help="default: newest")
    report.add_argument("--config", type=_config_file, help="TOML file with [settings] (results_dir)")
    report.add_argument(
        "--screenshot", type=Path, metavar="PNG",
        help="also render report.html in headless Chromium (make browser) to this PNG, 1280 px wide",
    )  # fmt: skip

    summary = commands.add_parser("summary", help=COMMAND_HELP["summary"])
    summary.add_argument("results_dir", type=Path, nargs="?", metavar="RESULTS_DIR", help="default: newest")
    summary.add_argument("--config", type=_config_file, help="TOML file with [settings] (results_dir)")
    summary.add_argument("--markdown", action="store_true", help="a Markdown table instead")

    clean = commands.add_parser("clean", help=COMMAND_HELP["clean"])
    clean.add_argument(
        "--all", action="store_true", help="also those outside the checkout (~/.cache, /var/tmp)"
    )
    clean.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    clean.add_argument("--config", type=_config_file, help="TOML file with [settings] (data_dir)")

    commands.add_parser("writers", help=COMMAND_HELP["writers"])
    commands.add_parser("scenarios", help=COMMAND_HELP["scenarios"])

    _add_matrix_and_scale(commands)
    _add_baseline_compare_gate(commands)
    return parser


def _add_generate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gen = commands.add_parser("generate", help=COMMAND_HELP["generate"])
    gen.add_argument("--preset", help=f"one of {', '.join(PRESETS)}")
    gen.add_argument("--rows", type=_int_from(1, MAX_ROWS))
    gen.add_argument("--columns", type=_int_from(2, MAX_COLUMNS))
    gen.add_argument("--files", type=_int_from(1, MAX_FILES), help="at most --rows")
    gen.add_argument("--seed", type=_within(Settings, "seed"), default=42)
    gen.add_argument("--first-key", type=_int_from(0, MAX_FIRST_KEY), default=0)
    gen.add_argument(
        "--changes-of", type=_folder, metavar="BASE_DIR", help="write a change set of this base set"
    )
    gen.add_argument("--update-ratio", type=_within(Settings, "update_ratio"), default=0.2)
    gen.add_argument("--insert-ratio", type=_within(Settings, "insert_ratio"), default=0.1)
    gen.add_argument("--evolved", action="store_true", help="change rows carry an extra column")
    gen.add_argument("--out", type=Path, required=True)
    gen.add_argument(
        "--engine",
        choices=("pyarrow", "spark"),
        default="pyarrow",
        help="who writes the files (same content)",
    )
    gen.add_argument(
        "--spark-master", metavar="URL", type=_spark_master,
        help="--engine spark: local[*] (default) or a cluster",
    )  # fmt: skip
    gen.add_argument(
        "--memory", type=_size, help="--engine spark: the driver's memory budget (heap 60%%), e.g. 4g"
    )
    gen.add_argument("--config", type=_config_file, help="TOML file with a [settings] table")


def _add_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source", metavar="PATH",
        help="your parquet set instead of a preset's: a file, a folder or a glob (or a generated set)",
    )  # fmt: skip
    parser.add_argument(
        "--key", metavar="COL[,COL]", type=_names,
        help="your set's key: one column or several, unique and never null (default id)",
    )  # fmt: skip
    parser.add_argument(
        "--changes", metavar="PATH",
        help="your change set for upsert, keyed as --source (default: derived from --source)",
    )  # fmt: skip
    parser.add_argument(
        "--update-ratio", type=_within(Settings, "update_ratio"),
        help="the derived change set's updates, a share of your rows (default 0.2)",
    )  # fmt: skip
    parser.add_argument(
        "--insert-ratio", type=_within(Settings, "insert_ratio"),
        help="the derived change set's new keys, a share of your rows (default 0.1)",
    )  # fmt: skip


def _add_layout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--partition", metavar="SPEC", action="append", type=_partition,
        help="partition the table: day(ts), bucket[16](id) or bucket(16, id), truncate[4](name), a "
        "column; several fields comma-separated; 'none' unpartitioned; given again, another table",
    )  # fmt: skip
    parser.add_argument(
        "--sort", metavar="COL[,COL]", type=_sort, help="the table's sort order, e.g. 'c001_int32 desc'"
    )
    parser.add_argument(
        "--table-property", metavar="KEY=VALUE", action="append", type=_table_property,
        help="a table property, e.g. write.target-file-size-bytes=134217728, format-version=1",
    )  # fmt: skip


def _partition(text: str) -> str:
    if not text.strip():  # argparse's empty check skips appended flags; `none` is the plain table
        raise argparse.ArgumentTypeError("must not be empty (none: the unpartitioned table)")
    return _parsed(parse_partition, text)


def _sort(text: str) -> str:
    return _parsed(parse_sort, text)


def _table_property(text: str) -> str:
    return _parsed(parse_property, text)


def _parsed(parse: Callable[[str], object], text: str) -> str:
    """The flag's text, once `parse` took it (its one-line error otherwise)."""
    try:
        parse(text)
    except IcebenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _layouts(args: argparse.Namespace) -> list[TableLayout]:
    """The tables `run` writes: one per --partition, each with --sort and the --table-property's."""
    return MatrixConfig(
        partitions=args.partition or [""], sort=args.sort or "", table_properties=args.table_property or []
    ).layouts()


def _add_matrix_and_scale(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    matrix = commands.add_parser("matrix", help=COMMAND_HELP["matrix"])
    matrix.add_argument(
        "--preset", type=_names, help=f"comma-separated presets, {one_of(PRESETS)} (default: small)"
    )
    matrix.add_argument(
        "--scenarios",
        type=_names,
        help=f"comma-separated, {one_of(scenarios())} (default: {', '.join(default_scenarios())})",
    )
    unnamed = [name for name in writers() if name not in default_writers()]
    matrix.add_argument(
        "--writers",
        type=_names,
        help=f"comma-separated, {one_of(writers())} (default: all but {', '.join(unnamed)})",
    )
    matrix.add_argument(
        "--repeat", type=_within(MatrixConfig, "repeat"), help="runs of each pair, for medians (default: 1)"
    )
    matrix.add_argument(
        "--batches",
        type=_comma_ints,
        metavar="COUNTS",
        help="the scale axis: also run the pairs of append-like scenarios at these batch counts (50,100,200)",
    )
    matrix.add_argument(
        "--scale",
        metavar="WRITERS",
        type=_names,
        help="the writers on the scale axis (default: the matrix's; alone, over 50,100,200 batches)",
    )
    matrix.add_argument(
        "--find-cap", action="store_true", default=None,
        help="bisect the smallest cap each pair survives (to ~10%%), below the largest --memory",
    )  # fmt: skip
    matrix.add_argument("--report", action="store_true", help="end by writing report.html / report.md")
    _add_layout(matrix)
    _add_source(matrix)
    _common(matrix)

    scale = commands.add_parser("scale", help=COMMAND_HELP["scale"])
    scale.add_argument(
        "--writer",
        required=True,
        type=_names,
        help=f"a writer, or several comma-separated, {one_of(writers())}",
    )
    scale.add_argument("--scenario", default="append", help="an append-like scenario (default append)")
    scale.add_argument("--preset", help=f"{one_of(PRESETS)} (default small)")
    scale.add_argument("--batches", type=_comma_ints, default=[50, 100, 200, 400], metavar="COUNTS")
    scale.add_argument("--report", action="store_true", help="end by writing report.html / report.md")
    _add_source(scale)
    _common(scale)

    rounds = commands.add_parser("rounds", help=COMMAND_HELP["rounds"])
    rounds.add_argument("--preset", help=f"{one_of(PRESETS)} (default: small, [rounds] preset)")
    rounds.add_argument(
        "--writers", type=_names, help=f"comma-separated, {one_of(writers())} ([rounds] writers)"
    )
    rounds.add_argument(
        "--rounds", type=_within(RoundsConfig, "rounds"), help="how many rounds (default 5, 2 to 100)"
    )
    rounds.add_argument(
        "--phases", type=_names, help=f"comma-separated, in a round's order (default {','.join(PHASES)})"
    )
    rounds.add_argument("--report", action="store_true", help="end by writing report.html / report.md")
    _add_source(rounds)
    _common(rounds)


def _add_baseline_compare_gate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    baseline = commands.add_parser("baseline", help=COMMAND_HELP["baseline"])
    baseline_actions = baseline.add_subparsers(dest="baseline_action", required=True)
    save = baseline_actions.add_parser("save", help="write the baseline of results folders as JSON")
    save.add_argument("results_dirs", type=Path, nargs="+", metavar="RESULTS_DIR")
    save.add_argument("--out", type=Path, default=Path("baseline.json"), help="default: baseline.json")

    comparison = commands.add_parser("compare", help=COMMAND_HELP["compare"])
    comparison.add_argument("base", type=Path, metavar="BASE", help="a results folder or a baseline file")
    comparison.add_argument("current", type=Path, metavar="CUR", help="a results folder or a baseline file")
    comparison.add_argument("--markdown", action="store_true", help="Markdown tables instead")

    gate_parser = commands.add_parser("gate", help=COMMAND_HELP["gate"])
    gate_parser.add_argument(
        "results_dirs",
        type=Path,
        nargs="*",
        metavar="RESULTS_DIR",
        help="default: the newest folder under the results root",
    )
    gate_parser.add_argument("--baseline", type=Path, required=True, help="a file `baseline save` wrote")
    gate_parser.add_argument(
        "--config", type=_config_file, help="TOML file with a [gate] table of thresholds"
    )
    gate_parser.add_argument("--results", type=Path, help="results root folder (default: results)")
    gate_parser.add_argument("--markdown", action="store_true", help="a Markdown table instead")


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings(
        args.config,
        memory=_largest_cap(args),
        harness_memory=args.harness_memory,
        allow_overcommit=args.allow_overcommit,
        allow_memory_above_box=args.allow_memory_above_box,
        isolation=args.isolation,
        stack=args.stack,
        catalog=args.catalog,
        batch_rows=args.batch_rows,
        worker_timeout_s=args.timeout,
        verify_with=args.verify_with,
        profile=args.profile,
        library_versions={
            library: getattr(args, _dest(library))
            for library in VERSIONED_LIBRARIES
            if getattr(args, _dest(library))
        }
        or None,
        file_ios=getattr(args, "fileio", None),
        engines=_engine_flags(args),
        results_dir=args.results,
        keep_warehouse=args.keep_warehouse,
        scan_cost=args.scan_cost,
        update_ratio=getattr(args, "update_ratio", None),
        insert_ratio=getattr(args, "insert_ratio", None),
    )
    check_engines(settings.engines, _engine_models())
    get_verifier(settings.verify_with)
    # A bad or impossible cap, or an unknown stack, fails before any work.
    check_cap_fits(settings.memory, "memory cap", settings.allow_overcommit)
    if settings.harness_memory:
        check_cap_fits(settings.harness_memory, "harness memory", settings.allow_overcommit)
    _check_memory_within_box(settings)
    get_stack(settings.stack)
    check_catalog(settings)
    return settings


def _engine_flags(args: argparse.Namespace) -> EngineTables:
    """The flags that set engine options, as [engines.*] tables (over the config and environment)."""
    return {"spark": {"master": args.spark_master}} if args.spark_master else {}


def _engine_models() -> dict[str, type[EngineOptions]]:
    """Engine -> its options model, for every writer and verifier that takes options."""
    plugins = [*writers().values(), *verifiers().values()]
    return {plugin.options.engine: plugin.options for plugin in plugins if plugin.options.engine}


@contextmanager
def _session(settings: Settings) -> Iterator[tuple[ResultsStore, Stack]]:
    """A new results folder with its environment.json, and the stack's services up meanwhile;
    first, what harnesses killed before they could clean up left (harness.services.leftovers)."""
    if swept := sweep_leftovers(settings.results_dir):
        console.print(f"swept what killed harnesses left: {swept}")
    store = ResultsStore(settings.results_dir)
    store.write_environment(
        environment(resolve_isolation(settings.isolation), settings.model_dump(mode="json"))
    )
    with owned(store.folder), started(settings, store.folder / "services") as stack:
        yield store, stack
        console.print(f"harness: resident peak {format_size(peak_since_start())}")
    if store.unwritten:  # each was said as it ran: the command must not pass as complete
        raise IcebenchError(f"{store.unwritten} run records could not be written to {store.runs_path}")


def cmd_generate(args: argparse.Namespace) -> None:
    if args.changes_of:
        if args.engine != "pyarrow":
            raise IcebenchError("--engine spark makes base sets; change sets (--changes-of) use pyarrow")
        manifest = _generate_changes(args)
    elif args.engine == "spark":
        manifest = _generate_base_on_spark(args)
    else:
        base = _base_set(args)
        with generation_progress() as progress:
            advance = progress("rows", base["rows"])
            if args.preset and get_preset(args.preset).shape == "events":
                size = {name: base[name] for name in ("rows", "columns", "files", "seed")}
                manifest = generate_events(args.out, **size, final=args.out.resolve(), progress=advance)
            else:
                manifest = generate_base(args.out, **base, progress=advance)
    console.print(
        f"wrote {manifest.rows} rows x {manifest.columns} columns in {len(manifest.files)} files "
        f"to {args.out} (checksum {short_form(manifest.checksum)})"
    )


def _generate_changes(args: argparse.Namespace) -> DatasetManifest:
    rows = round(data_set(args.changes_of).manifest.rows * (args.update_ratio + args.insert_ratio))
    with generation_progress() as progress:
        return generate_changes(
            args.changes_of,
            args.out,
            seed=args.seed,
            update_ratio=args.update_ratio,
            insert_ratio=args.insert_ratio,
            evolved=args.evolved,
            progress=progress("changes", rows),
        )


def _generate_base_on_spark(args: argparse.Namespace) -> DatasetManifest:
    base = _base_set(args)
    settings = load_settings(args.config, engines=_engine_flags(args), memory=args.memory)
    check_engines(settings.engines, _engine_models())
    master = settings.engine_options(SparkOptions).master
    shape = f"{base['rows']} rows x {base['columns']} columns in {base['files']} files"
    with console.status(f"Spark ({master}) writes {shape}"):
        return generate_base_on_spark(
            args.out, **base, master=master, cap_bytes=parse_size(settings.memory) if args.memory else None
        )


def _base_set(args: argparse.Namespace) -> dict[str, int]:
    """The base set's rows, columns, files, seed and first key, from --preset and/or the flags:
    what both generation engines take."""
    preset = get_preset(args.preset) if args.preset else None
    rows = args.rows or (preset.rows if preset else None)
    columns = args.columns or (preset.columns if preset else None)
    files = args.files or (preset.files if preset else 1)
    if rows is None or columns is None:
        raise IcebenchError("generate needs --preset or both --rows and --columns")
    return {"rows": rows, "columns": columns, "files": files, "seed": args.seed, "first_key": args.first_key}


def _your_sets(args: argparse.Namespace, settings: Settings, scenario_names: list[str]) -> DataSets | None:
    """The matrix's or the scale axis' sets from --source (None: the presets'), in place of a
    preset's: your set and what `scenario_names` need derived from it."""
    _key_needs_source(args)
    if args.source is None:
        return None
    if args.preset is not None:
        raise IcebenchError(
            f"--source and --preset: {args.command} runs on your data or on a preset, not both"
        )
    needs = {need for name in scenario_names for need in get_scenario(name)().needs}
    return _derived_sets(args, settings, needs)


def _derived_sets(args: argparse.Namespace, settings: Settings, needs: set[str]) -> DataSets:
    """Your set as `base`, and the `changes` and `replacement` sets derived from it when needed."""
    base = _your_set("--source", args.source, args.key, settings)
    changes = None
    if "changes" in needs and args.changes is not None:
        changes = _your_set("--changes", args.changes, args.key, settings, base, "changes")
    with RichEvents().generating() as progress:
        ratios = (settings.update_ratio, settings.insert_ratio)
        return sets_of_yours(base, needs, settings.seed, ratios, progress, changes)


def _key_needs_source(args: argparse.Namespace) -> None:
    for flag, value in (("--key", args.key), ("--changes", args.changes)):
        if value is not None and args.source is None:
            shown = ",".join(value) if isinstance(value, list) else value
            raise IcebenchError(f"{flag} {shown}: it is about your data; give your data with --source")


def _run_sets(args: argparse.Namespace, settings: Settings) -> tuple[str, DataSets]:
    scenario = get_scenario(args.scenario)()
    _key_needs_source(args)
    if args.source is None and args.base is None:
        return args.preset, prepare_data(settings, args.preset, list(scenario.needs), RichEvents())
    if args.source is None:
        raise IcebenchError(f"--base {args.base}: give the set the writer is fed with --source too")
    if args.base is None:  # your set, and what the scenario needs derived from it
        your_scenarios([scenario.name])
        return "custom", _derived_sets(args, settings, set(scenario.needs))
    if not scenario.initial_set:
        raise IcebenchError(f"--base {args.base}: scenario {scenario.name} starts from an empty table")
    base = _your_set("--base", args.base, args.key, settings)
    kind = "changes" if scenario.operation == Operation.UPSERT else "base"
    source = _your_set("--source", args.source, args.key, settings, base, kind)
    if source.manifest.kind == "changes" and source.manifest.base_checksum != base.manifest.checksum:
        raise IcebenchError(f"change set {args.source} was not made from base set {args.base}")
    if scenario.operation == Operation.UPSERT and source.manifest.kind != "changes":
        raise IcebenchError(
            f"source {args.source} is a base set; {scenario.name} needs a change set "
            f"(icebench generate --changes-of BASE)"
        )
    return "custom", {scenario.source_set: source, scenario.initial_set: base}


def _your_set(
    flag: str,
    path: str,
    key: list[str] | None,
    settings: Settings,
    base: DataSet | None = None,
    kind: Literal["base", "changes"] = "base",
) -> DataSet:
    """A set icebench generated (a folder with its manifest.json), or your own parquet files, whose
    manifest icebench derives once into its data cache (numbered against `base`'s keys if given)."""
    if not path.strip():
        raise IcebenchError(f"{flag}: the path is empty; give a parquet file, a folder or a glob")
    if (Path(path) / MANIFEST_FILE).is_file():
        generated = data_set(Path(path))
        if key is not None and key != list(generated.manifest.key_columns):
            keyed = ",".join(generated.manifest.key_columns)
            raise IcebenchError(f"--key {','.join(key)}: the generated set {path} is keyed by {keyed}")
        return generated
    with RichEvents().generating() as progress:
        return your_data(path, key or [KEY_COLUMN], settings.data_dir, progress, base, kind)


def cmd_run(args: argparse.Namespace) -> None:
    get_writer(args.writer)  # every name checked before any work
    get_scenario(args.scenario)
    get_preset(args.preset)
    settings = _settings(args)
    preset, sets = _run_sets(args, settings)
    layouts = _layouts(args)
    check_layouts(layouts, [args.scenario], sets)
    cap = parse_size(settings.memory)
    plans = [
        RunPlan(args.scenario, args.writer, preset, sets, settings.batch_rows, cap, layout=layout)
        for layout in layouts
    ]
    with _session(settings) as (store, stack):
        doing = f"{args.scenario} x {args.writer} on {stack.name}: set-up, capped worker, oracle"
        with console.status(doing) as status:

            def fed(count: int, rows: int) -> None:
                status.update(f"{doing} ({count:,} of {rows:,} rows fed to the writer)")

            records = [
                Runner(settings, store, stack, variant, on_progress=fed).run(plan)
                for variant in variants(settings.library_versions, settings.file_ios)
                for plan in plans
            ]
    _print_results(records, title=f"icebench run {store.run_id}")
    for record in records:
        for check in record.verdict.failed if record.verdict else []:
            upstream = f" [{check.upstream}]" if check.upstream else ""
            # escaped: rich would take `[dlt-hub/dlt#3752]` for a style tag and drop it
            console.print(f"  [red]failed[/] {check.name}: {escape(f'{check.reason}{upstream}')}")
    console.print(f"results: {store.runs_path}")
    _exit_on_verdict(args, records)


def _exit_on_verdict(args: argparse.Namespace, records: list[RunRecord]) -> None:
    """The exit-code policy (docs/commands.md): results are the product, so a failed run exits 0
    unless `--fail-on-verdict` asks for 3."""
    if args.fail_on_verdict:
        require_passed(records)


def cmd_summary(args: argparse.Namespace) -> None:
    folder = args.results_dir or newest_results_folder(load_settings(args.config).results_dir)
    runs = folder / "runs.jsonl"
    if not runs.is_file():
        raise IcebenchError(f"{folder} holds no runs.jsonl")
    records = read_runs(runs)
    if args.markdown:
        print(summary_markdown(records))
        if unsupported := unsupported_rows(records):
            print("\n" + markdown_table(UNSUPPORTED_HEADERS, unsupported))
        show(*(fit_table(fit) for fit in fits(records)))
    else:
        _print_results(records, title=f"icebench {folder.name}")


def cmd_clean(args: argparse.Namespace) -> None:
    """Each place with its size as it goes (kept ones with why); results are never touched."""
    found = cleanup.places(load_settings(args.config), everything=args.all)
    freed = 0
    for removal in cleanup.remove(found, dry_run=args.dry_run):
        console.print(str(removal), markup=False, highlight=False)
        freed += removal.place.size if removal.outcome in ("removed", "would go") else 0
    if not found:
        console.print("nothing of icebench's to remove")
    else:
        console.print(f"{format_size(freed)} {'would be freed' if args.dry_run else 'freed'}")


def cmd_writers(_: argparse.Namespace) -> None:
    """Operations per writer, and on which stacks it can run (the reasons it cannot, numbered below)."""
    table = Table(title="writers", header_style="bold")
    operations = tuple(Operation)
    for column in ("writer", *operations, "commits", *stacks()):
        table.add_column(column, no_wrap=True)
    table.add_column("what it does")
    reasons: list[str] = []

    def numbered(reason: str) -> str:
        if reason not in reasons:
            reasons.append(reason)
        return f"[dim]no ({reasons.index(reason) + 1})[/]"

    for name, writer in writers().items():
        marks = [
            "yes"
            if writer.supports(op)
            else numbered(f"{op}: {writer.lacks[op]}")
            if op in writer.lacks
            else "[dim]unsupported[/]"
            for op in operations
        ]
        on_stacks = []
        for stack in stacks().values():
            reason = writer.supports_catalog(stack.catalog_shape)
            on_stacks.append(numbered(reason) if reason else "yes")
        table.add_row(
            name, *marks, "one" if writer.single_commit else "several", *on_stacks, writer.description
        )
    show(table)
    for number, reason in enumerate(reasons, 1):
        console.print(f"({number}) {escape(reason)}")


def cmd_scenarios(_: argparse.Namespace) -> None:
    table = Table(title="scenarios", header_style="bold")
    for column in ("scenario", "operation"):
        table.add_column(column, no_wrap=True)
    table.add_column("what it does")
    for name, scenario in scenarios().items():
        table.add_row(name, scenario.operation, scenario.description)
    show(table)


def _with_flags(config: ConfigTable, flags: dict[str, tuple[str, object]]) -> ConfigTable:
    """A config file's table with the flags given on the command line on top (field -> (flag,
    value)), validated again: a value out of its range is one line naming the flag."""
    given = {name: value for name, (_, value) in flags.items() if value is not None}
    try:
        return type(config).model_validate({**config.model_dump(), **given})
    except ValidationError as exc:
        field = str(exc.errors()[0]["loc"][0]) if exc.errors() and exc.errors()[0]["loc"] else ""
        culprit = flags[field][0] if field in given else f"the config file's {field}"
        raise IcebenchError(f"{culprit}: {first_error(exc).removeprefix(f'{field}: ')}") from None


def cmd_matrix(args: argparse.Namespace) -> None:
    settings = _settings(args)
    asked = _with_flags(
        load_matrix_config(args.config),
        {
            "presets": ("--preset", args.preset),
            "scenarios": ("--scenarios", args.scenarios),
            "writers": ("--writers", args.writers),
            "repeat": ("--repeat", args.repeat),
            "batches": ("--batches", args.batches),
            "scale_writers": ("--scale", args.scale),
            "partitions": ("--partition", args.partition),
            "sort": ("--sort", args.sort),
            "table_properties": ("--table-property", args.table_property),
            "memory": ("--memory", _cap_list(args.memory)),
            "find_cap": ("--find-cap", args.find_cap),
        },
    )
    config = asked.resolved()
    if args.source is not None or any(get_preset(name).shape == "events" for name in config.presets):
        config = config.model_copy(update={"scenarios": your_scenarios(asked.scenarios)})
    your_sets = _your_sets(args, settings, config.scenarios)
    if your_sets is None:  # a layout the tables cannot take: one line before any data is made
        check_preset_layouts(config.layouts(), config.presets)
    else:
        check_layouts(config.layouts(), config.scenarios, your_sets)
    axis = f", {len(config.scale_writers)} writers at {config.batches} batches" if config.batches else ""
    data = f"your data {args.source}" if your_sets is not None else f"presets {', '.join(config.presets)}"
    pairs = f"{len(config.scenarios)} scenarios x {len(config.writers)} writers"
    if len(layouts := config.layouts()) > 1 or not layouts[0].plain:
        pairs += f" x {len(layouts)} tables ({'; '.join(layout.label for layout in layouts)})"
    if len(caps := config.caps(settings)) > 1:
        pairs += f" x caps {', '.join(format_size(cap) for cap in caps)}"
    if config.find_cap:
        pairs += ", then the smallest cap each survives"
    what = f"{pairs} x {data}, {config.repeat}x each{axis}"
    workload = partial(run_matrix, settings, config, your_sets=your_sets)
    _exit_on_verdict(args, _run_workload("matrix", what, settings, args.report, workload))


def _run_workload(
    command: str, what: str, settings: Settings, report: bool, workload: Callable[..., list[RunRecord]]
) -> list[RunRecord]:
    """Says what runs where, runs `workload(store, stack, events)` in a session, then prints the
    tables, where the results are and, if asked, writes the report."""
    console.print(
        f"icebench {command}: {what}, cap {format_size(parse_size(settings.memory))} "
        f"({resolve_isolation(settings.isolation)}), stack {settings.stack}"
    )
    with _session(settings) as (store, stack):
        records = workload(store, stack, RichEvents())
    _print_results(records, title=f"icebench {command} {store.run_id}")
    if store.unwritten:
        raise IcebenchError(
            f"{store.unwritten} of {len(records)} run records could not be written to {store.runs_path}"
        )
    console.print(f"results: {store.runs_path}")
    if report:
        _print_report(write_report(store.folder))
    return records


def cmd_report(args: argparse.Namespace) -> None:
    folder = args.results_dir or newest_results_folder(load_settings(args.config).results_dir)
    report = write_report(folder)
    _print_report(report)
    if args.screenshot:
        console.print(f"screenshot: {screenshot(report.html, args.screenshot)}")


def _print_report(report: Report) -> None:
    console.print(f"report: {report.html}  ({len(report.plots)} plots; Markdown: {report.markdown})")


def cmd_scale(args: argparse.Namespace) -> None:
    """The scale axis alone: each writer at each batch count, no whole-set runs."""
    settings = _settings(args)
    scenario_names = your_scenarios([args.scenario]) if args.source is not None else [args.scenario]
    your_sets = _your_sets(args, settings, scenario_names)
    config = MatrixConfig(
        presets=[args.preset or "small"],
        scenarios=scenario_names,
        scale_writers=args.writer,
        batches=args.batches,
        scale_batch_rows=args.batch_rows,  # None: the set over the largest count
        whole_set=False,
    ).resolved()
    with _session(settings) as (store, stack):
        records = run_matrix(settings, config, store, stack, RichEvents(), your_sets)
    show(*(fit_table(fit) for fit in fits(records)))
    console.print(f"results: {store.folder}")
    if args.report:
        _print_report(write_report(store.folder))
    _exit_on_verdict(args, records)


def cmd_rounds(args: argparse.Namespace) -> None:
    """Each writer's rounds of phases on its own table, judged after every phase."""
    settings = _settings(args)
    config = _with_flags(
        load_rounds_config(args.config),
        {
            "preset": ("--preset", args.preset),
            "writers": ("--writers", args.writers),
            "rounds": ("--rounds", args.rounds),
            "phases": ("--phases", args.phases),
        },
    ).resolved()
    if args.changes is not None:
        raise IcebenchError(f"--changes {args.changes}: rounds derive each round's change set from --source")
    your_set = _your_sets(args, settings, [])
    phases = ", ".join(config.phases)
    data = f"your data {args.source}" if your_set else config.preset
    what = f"{len(config.writers)} writers x {config.rounds} rounds of {phases} on {data}"
    workload = partial(run_rounds, settings, config, your_set=your_set["base"] if your_set else None)
    _exit_on_verdict(args, _run_workload("rounds", what, settings, args.report, workload))


def cmd_baseline(args: argparse.Namespace) -> None:
    """`baseline save`, its only action so far."""
    baseline = save_baseline(args.results_dirs, args.out)
    console.print(
        f"baseline of {len(baseline.runs)} run keys and {len(baseline.scales)} scale fits "
        f"from {', '.join(baseline.sources)}: {args.out}"
    )


def cmd_compare(args: argparse.Namespace) -> None:
    base, current = baseline_of(args.base), baseline_of(args.current)
    rows = compare(base, current)
    if args.markdown:
        print(comparison_markdown(rows))
    else:
        show(*comparison_tables(rows, title=f"{args.base} → {args.current}"))
    for change in version_changes(base, current):
        console.print(f"version changed: {change}")
    _print_not_comparable(not_comparable(rows))
    if disjoint := nothing_shared(rows):
        warn(disjoint)


def _print_not_comparable(rows: list[KeyComparison]) -> None:
    for row in rows:
        changed = f"{', '.join(row.base_sources)} → {', '.join(row.current_sources)}"
        console.print(f"{NOT_COMPARABLE}: {row.key} (writer source {changed})")


def cmd_gate(args: argparse.Namespace) -> None:
    """Exit 1 with a table of what regressed; 2 (via IcebenchError) for bad input."""
    baseline = load_baseline(args.baseline)  # first: a missing baseline is bad input, nothing ran
    thresholds = load_thresholds(args.config)
    folders = args.results_dirs or [
        newest_results_folder(load_settings(args.config, results_dir=args.results).results_dir)
    ]
    rows = compare(baseline, build_baseline(folders))
    found = regressions(rows, thresholds)
    against = f"{', '.join(str(f) for f in folders)} against {args.baseline}"
    _print_not_comparable(not_comparable(rows))  # listed, never failed: their numbers measure other code
    require_compared(rows)
    if not found:
        console.print(passed_text(rows, thresholds, against), markup=False, highlight=False)
        return
    if args.markdown:
        print(regressions_markdown(found))
    else:
        show(regressions_table(found, title=f"regressions: {against}"))
    raise GateFailed(f"gate failed: {len(found)} regressions, {against}")


COMMANDS = {
    "generate": cmd_generate,
    "run": cmd_run,
    "summary": cmd_summary,
    "clean": cmd_clean,
    "writers": cmd_writers,
    "report": cmd_report,
    "scenarios": cmd_scenarios,
    "matrix": cmd_matrix,
    "scale": cmd_scale,
    "rounds": cmd_rounds,
    "baseline": cmd_baseline,
    "compare": cmd_compare,
    "gate": cmd_gate,
}


def _harness_box_bytes(args: argparse.Namespace) -> int | None:
    """The cap of the box the command must run in; None when none is asked or we are inside it."""
    if not hasattr(args, "harness_memory") or os.environ.get(BOX_ENV):
        return None
    settings = load_settings(
        args.config,
        memory=_largest_cap(args),
        harness_memory=args.harness_memory,
        allow_overcommit=args.allow_overcommit,
        allow_memory_above_box=args.allow_memory_above_box,
    )
    if not settings.harness_memory:
        return None
    _check_memory_within_box(settings)
    return check_cap_fits(settings.harness_memory, "harness memory", settings.allow_overcommit)


def _check_memory_within_box(settings: Settings) -> None:
    """A worker cap above the box's is never what ends a worker: the box fills first."""
    if (
        settings.harness_memory
        and not settings.allow_memory_above_box
        and parse_size(settings.memory) > parse_size(settings.harness_memory)
    ):
        raise IcebenchError(
            f"--memory {settings.memory} is above --harness-memory {settings.harness_memory}: the box, "
            "not the worker's cap, would end a worker (lower --memory, or pass --allow-memory-above-box)"
        )


PYTHON_SHOWWARNING = warnings.showwarning


def show_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """The one place warnings reach the terminal: ours as one line, others as Python shows them."""
    if issubclass(category, IcebenchWarning):
        print(redact(f"icebench: warning: {message}"), file=sys.stderr)
    else:
        PYTHON_SHOWWARNING(message, category, *args, **kwargs)


@terminates_like_ctrl_c
def main(argv: Sequence[str] | None = None) -> int:
    warnings.showwarning = show_warning
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(arguments)
        if (box_bytes := _harness_box_bytes(args)) is not None:
            command = [sys.executable, "-m", "harness.cli", *arguments]
            return run_in_box(box_bytes, command, lambda line: print(line, file=sys.stderr))
        COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("icebench: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        print(redact(f"icebench: {failure_line(exc)}"), file=sys.stderr)
        return exc.exit_code if isinstance(exc, IcebenchError) else 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
