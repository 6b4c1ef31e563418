"""Print the verdict and summary tables of a results folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.flags import add_config_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dir", type=Path, nargs="?", metavar="RESULTS_DIR", help="default: newest")
    add_config_flag(parser, "[settings] (results_dir)")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table instead")


def run(args: argparse.Namespace) -> None:
    from harness.base.results import read_results_folder
    from harness.base.settings import load_settings
    from harness.cli.output import print_results, show
    from reports.baseline import newest_results_folder
    from reports.fits import fits
    from reports.summary import (
        UNSUPPORTED_HEADERS,
        fit_table,
        markdown_table,
        summary_markdown,
        unsupported_rows,
    )

    folder = args.results_dir or newest_results_folder(load_settings(args.config).results_dir)
    records = read_results_folder(folder)
    if args.markdown:
        print(summary_markdown(records))
        if unsupported := unsupported_rows(records):
            print("\n" + markdown_table(UNSUPPORTED_HEADERS, unsupported))
        show(*(fit_table(fit) for fit in fits(records)))
    else:
        print_results(records, title=f"icebench {folder.name}")
