"""The flags several commands share, each declared once: the settings' (`add_settings_flags`),
your data's (`add_source_flags`), and the workload axes, made from their config fields' `Flag`s
(`add_axis_flags`; harness/run/config.py declares them). `settings(args)` reads the first into
Settings and checks them before any engine loads."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_origin

from pydantic import BaseModel, ValidationError

from harness.base.builds import sources_taken
from harness.base.caps import ISOLATIONS, check_cap_fits, size_text
from harness.base.config_file import CATALOGS, Flag
from harness.base.errors import IcebenchError, first_error
from harness.cli import names
from harness.cli.parser import (
    batch_counts,
    checked,
    config_file,
    file_io_names,
    known,
    name_list,
    not_empty,
    one_known,
    one_of,
    require_known,
    settings_model,
    size,
    sizes,
    spark_master,
    versions,
    within,
    writer_reference,
)
from harness.engines.choices import FILE_IOS
from harness.run.config import YourData, load_matrix_config

if TYPE_CHECKING:  # loaded when a command runs (pydantic-settings)
    from harness.base.settings import Settings

ConfigTable = TypeVar("ConfigTable", bound=BaseModel)

# Writer libraries whose versions a run can vary (--pyiceberg 0.9.1,0.12.0), and Iceberg's Spark
# runtime (--iceberg-spark 1.9.2,1.10.1: a jar, harness/services/envs.py JVM_RUNTIMES), and
# iceberg-rust's crates (--iceberg-rust 0.10.0 or a checkout: harness/services/rust_worker.py builds again).
VERSIONED_LIBRARIES = (
    "pyiceberg", "pyiceberg-core", "dlt", "polars", "daft", "duckdb",
    "pyspark", "iceberg-spark", "iceberg-rust",
)  # fmt: skip


def _dest(library: str) -> str:
    """The argparse attribute of a library's version flag (`--iceberg-spark`: iceberg_spark)."""
    return library.replace("-", "_")


def add_config_flag(parser: argparse.ArgumentParser, what: str = "[settings] (and [matrix]) tables") -> None:
    parser.add_argument("--config", type=config_file, help=f"TOML file with {what}")


def add_settings_flags(parser: argparse.ArgumentParser, memory_axis: bool = False) -> None:
    """What every command that runs workers takes: the cap, isolation, stack, versions, readers."""
    add_config_flag(parser)
    parser.add_argument(
        "--memory", type=sizes if memory_axis else size, metavar="SIZE",
        help="memory cap per worker, e.g. 512m, 2g (default from settings: 2g)"
        + ("; several comma-separated: each pair under each" if memory_axis else ""),
    )  # fmt: skip
    parser.add_argument(
        "--harness-memory", metavar="SIZE", type=size,
        help="put the harness itself in a cgroup of SIZE, its workers nested inside (as in one container)",
    )  # fmt: skip
    parser.add_argument(
        "--allow-overcommit", action="store_true", default=None,
        help="accept a cap above the machine's memory (the kernel then never enforces it)",
    )  # fmt: skip
    parser.add_argument(
        "--allow-memory-above-box", action="store_true", default=None,
        help="accept a --memory above --harness-memory (the box, not the worker's cap, then ends a worker)",
    )  # fmt: skip
    parser.add_argument("--isolation", choices=ISOLATIONS)
    parser.add_argument(
        "--stack", type=one_known("stack", names.stack_names),
        help=f"where tables live: {', '.join(names.stack_names())} (default: embedded)",
    )  # fmt: skip
    parser.add_argument(
        "--catalog", choices=CATALOGS, help=f"local-services' REST catalog (default: {CATALOGS[0]})"
    )
    parser.add_argument(
        "--batch-rows", type=within(settings_model, "batch_rows"), help="rows per batch handed to the writer"
    )
    parser.add_argument(
        "--timeout", type=within(settings_model, "worker_timeout_s"), metavar="SECONDS",
        help="per-run worker time limit: a slower worker is killed and recorded as timed out (default 1800)",
    )  # fmt: skip
    for library in VERSIONED_LIBRARIES:
        parser.add_argument(
            f"--{library}", metavar="VERSIONS", type=versions(library), dest=_dest(library),
            help=f"run the workers with each of these {library} versions (comma-separated), in turn"
            + (f"; or builds of {sources_taken(library)}" if sources_taken(library) else ""),
        )  # fmt: skip
    parser.add_argument(
        "--fileio", metavar="NAMES", type=file_io_names,
        help=f"run the pyiceberg writers through each of these FileIOs in turn: {', '.join(FILE_IOS)}",
    )  # fmt: skip
    parser.add_argument(
        names.WRITER_FILE_FLAG, metavar="PATH.py|MODULE[:CLASS]", action="append", dest="writer_files",
        type=writer_reference,
        help="a writer of your own (a Writer subclass, docs/writers.md) from this file or module: it joins "
        "the writers of the run; again for another",
    )  # fmt: skip
    parser.add_argument(
        "--profile", choices=("memray",), help="record worker allocations; the report links a flame graph"
    )
    parser.add_argument(
        "--verify-with", metavar="READER", type=one_known("verifier", names.verifier_names),
        help=f"one of {', '.join(names.verifier_names())}. pyiceberg: the oracle's own read alone (default); "
        "a verifier: reads too, must agree "
        "(on tables with equality deletes, which pyiceberg cannot read, its read is the one judged)",
    )  # fmt: skip
    parser.add_argument(
        "--spark-master", metavar="URL", type=spark_master,
        help="Spark master, e.g. spark://host:7077 (default local[*]; [engines.spark] master)",
    )  # fmt: skip
    parser.add_argument("--results", type=Path, help="results root folder (default: results)")
    parser.add_argument(
        "--no-scan-cost", dest="scan_cost", action="store_false", default=None,
        help="skip the full and selective scan timed after each write (writes only)",
    )  # fmt: skip
    parser.add_argument(
        "--reads", metavar="N", type=int,
        help="the total cost of a writer's table counts its step and N full and N selective scans "
        "(default 10)",
    )  # fmt: skip
    parser.add_argument(
        "--fail-on-verdict", action="store_true",
        help="exit 3 when a run did not pass (failed check, OOM, error; unsupported pairs excepted); "
        "default: exit 0, failures are results",
    )  # fmt: skip
    parser.add_argument(
        "--keep-warehouse", action="store_true", default=None,
        help="keep each run's warehouse under results/<run-id>/work",
    )  # fmt: skip


def add_source_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source", metavar="PATH",
        help="your parquet set instead of a preset's: a file, a folder or a glob (or a generated set)",
    )  # fmt: skip
    parser.add_argument(
        "--key", metavar="COL[,COL]", type=name_list,
        help="your set's key: one column or several, unique and never null (default id)",
    )  # fmt: skip
    parser.add_argument(
        "--changes", metavar="PATH",
        help="your change set for upsert, keyed as --source (default: derived from --source)",
    )  # fmt: skip
    parser.add_argument(
        "--update-ratio", type=within(settings_model, "update_ratio"),
        help="the derived change set's updates, a share of your rows (default 0.2)",
    )  # fmt: skip
    parser.add_argument(
        "--insert-ratio", type=within(settings_model, "insert_ratio"),
        help="the derived change set's new keys, a share of your rows (default 0.1)",
    )  # fmt: skip


def your_data(args: argparse.Namespace) -> YourData:
    given = [
        flag
        for flag in ("--update-ratio", "--insert-ratio")
        if getattr(args, flag[2:].replace("-", "_")) is not None
    ]
    return YourData(args.source, args.key, args.changes, getattr(args, "base", None), tuple(given))


def axis_flags(model: type[BaseModel]) -> dict[str, Flag]:
    """field -> its flag, for each field of `model` that declares one."""
    return {
        field: flag
        for field, info in model.model_fields.items()
        for flag in info.metadata
        if isinstance(flag, Flag)
    }


def add_axis_flags(
    parser: argparse.ArgumentParser, model: type[BaseModel], fields: tuple[str, ...] | None = None
) -> None:
    """A flag per field of `model` that declares one (or of `fields`), typed and ranged by it."""
    for field, flag in axis_flags(model).items():
        if fields is not None and field not in fields:
            continue
        annotation = model.model_fields[field].annotation
        listed = get_origin(annotation) is list
        options: dict[str, Any] = {
            "dest": field,
            "help": flag.help.replace("%", "%%"),
            "metavar": flag.metavar,
        }
        if annotation is bool:
            options |= {"action": "store_true", "default": None}
            del options["metavar"]
        elif flag.names is not None:
            choices = names.NAMES[flag.names]
            options["type"] = (known if listed else one_known)(
                flag.names, choices, names.LATE_NAMES.get(flag.names), names.DERIVED_NAMES.get(flag.names)
            )
            options["help"] = f"{options['help']}; {one_of(choices())}"
        elif flag.repeated:
            options |= {"action": "append", "type": _spelled(flag)}
        elif annotation == list[int]:
            options["type"] = batch_counts
        elif listed:
            options["type"] = within(model, field, many=True)
        elif flag.check is not None:
            options["type"] = _spelled(flag)
        else:
            options["type"] = within(model, field)
        parser.add_argument(flag.name, **options)


def add_workload_flags(
    parser: argparse.ArgumentParser, model: type[BaseModel], memory_axis: bool = False
) -> None:
    """A workload's flags (matrix, rounds): its axes, --report, your data and the settings."""
    add_axis_flags(parser, model)
    parser.add_argument("--report", action="store_true", help="end by writing report.html / report.md")
    add_source_flags(parser)
    add_settings_flags(parser, memory_axis)


def _spelled(flag: Flag) -> Any:
    """The flag's text, once its `check` took it (argparse's empty check skips appended flags:
    `--partition ''` is refused here; `none` is the plain table)."""

    def parse(text: str) -> str:
        if flag.check is not None:
            checked(flag.check)(text)
        return text

    return not_empty(parse)


def with_flags(config: ConfigTable, args: argparse.Namespace, **more: object) -> ConfigTable:
    """A config file's table with the axis flags given on the command line on top (and `more`,
    field -> value), validated again: a value out of its range is one line naming the flag."""
    flags = axis_flags(type(config))
    given = {field: getattr(args, field) for field in flags if getattr(args, field, None) is not None}
    given |= {field: value for field, value in more.items() if value is not None}
    try:
        return type(config).model_validate({**config.model_dump(), **given})
    except ValidationError as exc:
        field = str(exc.errors()[0]["loc"][0]) if exc.errors() and exc.errors()[0]["loc"] else ""
        culprit = (
            (flags[field].name if field in flags else f"--{field}")
            if field in given
            else (f"the config file's {field}")
        )
        raise IcebenchError(f"{culprit}: {first_error(exc).removeprefix(f'{field}: ')}") from None


def cap_axis(args: argparse.Namespace) -> list[int] | None:
    """matrix --memory 2g,4g: the cap axis; one size is the settings' cap."""
    memory = getattr(args, "memory", None)
    return memory if isinstance(memory, list) and len(memory) > 1 else None


def largest_cap(args: argparse.Namespace) -> int | None:
    """The --memory the settings hold: the largest of a cap axis, the flag's or the config's
    [matrix] memory (every check is held to it)."""
    memory = args.memory
    axis = memory if isinstance(memory, list) else None
    if axis is None and args.command == "matrix":
        axis = load_matrix_config(args.config).memory or None
    return max(axis) if axis else memory


def settings(args: argparse.Namespace) -> Settings:
    """The settings of a command that runs workers: config file < environment < flags, each
    checked before any engine loads (a bad or impossible cap, an unknown stack or catalog)."""
    from harness.base.settings import check_catalog, load_settings

    loaded = load_settings(
        args.config,
        memory=largest_cap(args),
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
        file_ios=args.fileio,
        engines=engine_flags(args),
        results_dir=args.results,
        keep_warehouse=args.keep_warehouse,
        scan_cost=args.scan_cost,
        reads=args.reads,
        update_ratio=getattr(args, "update_ratio", None),
        insert_ratio=getattr(args, "insert_ratio", None),
    )
    check_cap_fits(loaded.memory, "memory cap", loaded.allow_overcommit)
    if loaded.harness_memory:
        check_cap_fits(loaded.harness_memory, "harness memory", loaded.allow_overcommit)
    check_memory_within_box(loaded)
    # The config file's or the environment's names (the flags' were checked as they were read).
    require_known("stack", loaded.stack, names.stack_names())
    require_known("verifier", loaded.verify_with, names.verifier_names())
    check_catalog(loaded)
    return loaded


def engine_flags(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The flags that set engine options, as [engines.*] tables (over the config and environment)."""
    return {"spark": {"master": args.spark_master}} if args.spark_master else {}


def harness_box_bytes(args: argparse.Namespace) -> int | None:
    """The cap of the box the command must run in; None when none is asked or we are inside it."""
    from harness.base.settings import BOX_ENV, load_settings

    if not hasattr(args, "harness_memory") or os.environ.get(BOX_ENV):
        return None
    loaded = load_settings(
        args.config,
        memory=largest_cap(args),
        harness_memory=args.harness_memory,
        allow_overcommit=args.allow_overcommit,
        allow_memory_above_box=args.allow_memory_above_box,
    )
    if not loaded.harness_memory:
        return None
    check_memory_within_box(loaded)
    return check_cap_fits(loaded.harness_memory, "harness memory", loaded.allow_overcommit)


def check_memory_within_box(loaded: Settings) -> None:
    """A worker cap above the box's is never what ends a worker: the box fills first."""
    if loaded.harness_memory and not loaded.allow_memory_above_box and loaded.memory > loaded.harness_memory:
        raise IcebenchError(
            f"--memory {size_text(loaded.memory)} is above --harness-memory "
            f"{size_text(loaded.harness_memory)}: the box, not the worker's cap, would end a worker "
            "(lower --memory, or pass --allow-memory-above-box)"
        )
