"""Write report.html and report.md with plots, next to the results."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.flags import add_config_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dir", type=Path, nargs="?", metavar="RESULTS_DIR", help="default: newest")
    add_config_flag(parser, "[settings] (results_dir)")
    parser.add_argument(
        "--screenshot", type=Path, metavar="PNG",
        help="also render report.html in headless Chromium (make browser) to this PNG, 1280 px wide",
    )  # fmt: skip


def run(args: argparse.Namespace) -> None:
    from harness.base.settings import load_settings
    from harness.cli import output
    from harness.cli.output import print_report
    from reports.baseline import newest_results_folder
    from reports.report import write_report
    from reports.screenshot import screenshot

    folder = args.results_dir or newest_results_folder(load_settings(args.config).results_dir)
    report = write_report(folder)
    print_report(report)
    if args.screenshot:
        output.console.print(f"screenshot: {screenshot(report.html, args.screenshot)}")
