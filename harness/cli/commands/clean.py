"""Remove the caches icebench made (data sets, environments)."""

from __future__ import annotations

import argparse

from harness.cli.flags import add_config_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--all", action="store_true", help="also those outside the checkout (~/.cache, /var/tmp)"
    )
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    add_config_flag(parser, "[settings] (data_dir)")


def run(args: argparse.Namespace) -> None:
    """Each place with its size as it goes (kept ones with why); results are never touched."""
    from harness.base.caps import format_size
    from harness.base.settings import load_settings
    from harness.cli import output
    from harness.cli.output import say
    from harness.services import cleanup

    found = cleanup.places(load_settings(args.config), everything=args.all)
    freed = 0
    for removal in cleanup.remove(found, dry_run=args.dry_run):
        say(str(removal))
        freed += removal.place.size if removal.outcome in ("removed", "would go") else 0
    if not found:
        output.console.print("nothing of icebench's to remove")
    else:
        output.console.print(f"{format_size(freed)} {'would be freed' if args.dry_run else 'freed'}")
