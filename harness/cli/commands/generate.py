"""Write a deterministic parquet set or an upsert change set."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from generators.presets import MAX_COLUMNS, MAX_FILES, MAX_FIRST_KEY, PRESETS
from harness.base.errors import IcebenchError
from harness.base.row_counts import MAX_ROWS
from harness.cli.flags import add_config_flag
from harness.cli.names import stack_names
from harness.cli.parser import (
    folder,
    int_from,
    one_known,
    settings_model,
    size,
    spark_master,
    within,
)

if TYPE_CHECKING:  # annotations only: the manifest module loads pyarrow
    from generators.manifest import DatasetManifest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", help=f"one of {', '.join(PRESETS)}")
    parser.add_argument("--rows", type=int_from(1, MAX_ROWS))
    parser.add_argument("--columns", type=int_from(2, MAX_COLUMNS))
    parser.add_argument("--files", type=int_from(1, MAX_FILES), help="at most --rows")
    parser.add_argument("--seed", type=within(settings_model, "seed"), default=42)
    parser.add_argument("--first-key", type=int_from(0, MAX_FIRST_KEY), help="default 0")
    parser.add_argument(
        "--changes-of", type=folder, metavar="BASE_DIR", help="write a change set of this base set"
    )
    parser.add_argument("--update-ratio", type=within(settings_model, "update_ratio"), help="default 0.2")
    parser.add_argument("--insert-ratio", type=within(settings_model, "insert_ratio"), help="default 0.1")
    parser.add_argument("--evolved", action="store_true", help="change rows carry an extra column")
    parser.add_argument(
        "--out", required=True,
        help="a folder, or s3://BUCKET/PREFIX on the --stack's object store (written straight there)",
    )  # fmt: skip
    parser.add_argument(
        "--stack", type=one_known("stack", stack_names),
        help="--out s3://...: the stack whose object store takes the set (local-services keeps it)",
    )  # fmt: skip
    parser.add_argument(
        "--engine",
        choices=("pyarrow", "spark"),
        default="pyarrow",
        help="who writes the files (same content)",
    )
    parser.add_argument(
        "--spark-master",
        metavar="URL",
        type=spark_master,
        help="--engine spark: local[*] (default) or a cluster",
    )
    parser.add_argument(
        "--memory", type=size, help="--engine spark: the driver's memory budget (heap 60%%), e.g. 4g"
    )
    add_config_flag(parser, "a [settings] table")


# Flags that mean something to one kind of generation only: given to another they would change
# nothing, so they are refused.
ONLY_FOR = {
    "a change set (--changes-of)": ("evolved", "update_ratio", "insert_ratio"),
    "a base set (without --changes-of)": ("preset", "rows", "columns", "files", "first_key"),
    "--engine spark": ("spark_master", "memory"),
}


def _given(value: object) -> bool:
    return value is not None and value is not False  # a 0 given is given


def _refuse_flags_that_change_nothing(args: argparse.Namespace) -> None:
    making = {
        "a change set (--changes-of)": args.changes_of is not None,
        "a base set (without --changes-of)": args.changes_of is None,
        "--engine spark": args.engine == "spark",
    }
    for kind, names in ONLY_FOR.items():
        given = [name for name in names if _given(getattr(args, name))]
        if given and not making[kind]:
            flag = "--" + given[0].replace("_", "-")
            raise IcebenchError(f"{flag} is for {kind} only: here it would change nothing")


def run(args: argparse.Namespace) -> None:
    from generators.checksum import short_form
    from harness.cli import output

    _refuse_flags_that_change_nothing(args)
    if args.out.startswith("s3://"):
        manifest = _base_on_s3(args)
    elif args.stack is not None:
        raise IcebenchError("--stack is for --out s3://...: a local set needs no stack")
    else:
        args.out = Path(args.out)
        manifest = _made_locally(args)
    output.console.print(
        f"wrote {manifest.rows} rows x {manifest.columns} columns in {len(manifest.files)} files "
        f"to {args.out} (checksum {short_form(manifest.checksum)})"
    )


def _made_locally(args: argparse.Namespace) -> DatasetManifest:
    if args.changes_of:
        if args.engine != "pyarrow":
            raise IcebenchError("--engine spark makes base sets; change sets (--changes-of) use pyarrow")
        return _changes(args)
    if args.engine == "spark":
        return _base_on_spark(args)
    return _base(args)


def _base_on_s3(args: argparse.Namespace) -> DatasetManifest:
    """A base set written straight onto the stack's object store (no local copy), for clusters that
    share nothing but the object store: `matrix --source s3://...` reads it there."""
    import tempfile

    from generators.presets import get_preset
    from generators.wide import generate_base
    from harness.base.settings import load_settings
    from harness.cli.output import generation_progress
    from harness.services.stacks import started

    if args.changes_of or args.engine != "pyarrow":
        raise IcebenchError(
            f"--out {args.out}: base sets are written onto S3 (by pyarrow); write this one locally"
        )
    base = _base_set(args)
    if args.preset and get_preset(args.preset).shape == "events":
        raise IcebenchError(f"--out {args.out}: the events preset is written locally only")
    settings = load_settings(args.config, stack=args.stack)
    if settings.stack == "embedded":
        raise IcebenchError(
            f"--out {args.out}: the embedded stack has no object store; give --stack local-services"
        )
    with (
        tempfile.TemporaryDirectory(prefix="icebench-generate-") as logs,
        started(settings, Path(logs), keep_sources=True),
        generation_progress() as progress,
    ):
        return generate_base(args.out, **base, progress=progress("rows", base["rows"]))


def _base(args: argparse.Namespace) -> DatasetManifest:
    from generators.events import generate_events
    from generators.presets import get_preset
    from generators.wide import generate_base
    from harness.cli.output import generation_progress

    base = _base_set(args)
    with generation_progress() as progress:
        advance = progress("rows", base["rows"])
        if args.preset and get_preset(args.preset).shape == "events":
            shape = {name: base[name] for name in ("rows", "columns", "files", "seed")}
            return generate_events(args.out, **shape, final=args.out.resolve(), progress=advance)
        return generate_base(args.out, **base, progress=advance)


def _changes(args: argparse.Namespace) -> DatasetManifest:
    from generators.changes import generate_changes
    from generators.datasets import data_set
    from harness.cli.output import generation_progress

    defaults = settings_model().model_fields
    ratios = {
        name: value if (value := getattr(args, name)) is not None else defaults[name].default
        for name in ("update_ratio", "insert_ratio")
    }
    if not sum(ratios.values()):
        raise IcebenchError("--update-ratio 0 and --insert-ratio 0 make a change set of no rows")
    rows = round(data_set(args.changes_of).manifest.rows * sum(ratios.values()))
    with generation_progress() as progress:
        return generate_changes(
            args.changes_of,
            args.out,
            seed=args.seed,
            **ratios,
            evolved=args.evolved,
            progress=progress("changes", rows),
        )


def _base_on_spark(args: argparse.Namespace) -> DatasetManifest:
    from harness.base.settings import load_settings
    from harness.cli import output
    from harness.cli.flags import engine_flags
    from harness.cli.session import check_plugins
    from harness.engines.spark import SparkOptions
    from harness.engines.spark_generate import generate_base_on_spark

    base = _base_set(args)
    settings = load_settings(args.config, engines=engine_flags(args), memory=args.memory)
    check_plugins(settings)  # [engines.spark] against SparkOptions, with every plug-in's options
    master = settings.engine_options(SparkOptions).master
    shape = f"{base['rows']} rows x {base['columns']} columns in {base['files']} files"
    with output.console.status(f"Spark ({master}) writes {shape}"):
        return generate_base_on_spark(
            args.out, **base, master=master, cap_bytes=settings.memory if args.memory else None
        )


def _base_set(args: argparse.Namespace) -> dict[str, int]:
    """The base set's rows, columns, files, seed and first key, from --preset and/or the flags:
    what both generation engines take."""
    from generators.presets import get_preset

    preset = get_preset(args.preset) if args.preset else None
    rows = args.rows or (preset.rows if preset else None)
    columns = args.columns or (preset.columns if preset else None)
    files = args.files or (preset.files if preset else 1)
    if rows is None or columns is None:
        raise IcebenchError("generate needs --preset or both --rows and --columns")
    first_key = args.first_key or 0
    return {"rows": rows, "columns": columns, "files": files, "seed": args.seed, "first_key": first_key}
