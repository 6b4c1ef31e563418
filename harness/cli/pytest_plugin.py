"""icebench in another project's test suite: the `icebench` fixture runs one scenario x writer
pair in its own capped worker, judged by the oracle, and returns its record (harness.model.RunRecord,
docs/results.md), so a library's CI can assert on it:

    def test_append_at_wide_stays_under_1_gib(icebench):
        record = icebench(writer="pyiceberg-add-files", preset="wide", memory="4g")
        assert record.verdict.passed and record.peak_rss_bytes < 2**30

Loaded by pytest from the `pytest11` entry point wherever icebench is installed; nothing heavy
loads until a test asks for the fixture. Each run is `icebench run` in a process of its own; the
data sets are kept in pytest's cache folder (generated once; without the cache plugin, in a temporary
folder), the results in a temporary folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harness.model import RunRecord

RUN_TIMEOUT_S = 3600.0


class IcebenchRunFailed(Exception):
    """The command refused its input or failed before it had a record (the run's own failure,
    an OOM or a failed check, is in the record, not here)."""


@pytest.fixture
def icebench(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., RunRecord]:
    """A function that runs one pair and returns its record: `icebench(writer=..., scenario="append",
    preset="tiny", memory="1g", writer_file=None, arguments=[...])`, `arguments` being any other flags
    of `icebench run`."""
    cache = getattr(request.config, "cache", None)  # absent under `-p no:cacheprovider`
    data = cache.mkdir("icebench-data") if cache is not None else tmp_path_factory.mktemp("data")

    def run(
        writer: str | None = None,
        *,
        scenario: str = "append",
        preset: str = "tiny",
        memory: str = "1g",
        writer_file: str | Path | None = None,
        arguments: Sequence[str] = (),
    ) -> RunRecord:
        from harness.base.results import read_runs
        from reports.baseline import newest_results_folder

        results = tmp_path_factory.mktemp("icebench-results")
        command = [
            sys.executable, "-m", "harness.cli", "run", "--scenario", scenario, "--preset", preset,
            "--memory", memory, "--results", str(results),
            *(["--writer", writer] if writer else []),
            *(["--writer-file", str(writer_file)] if writer_file else []),
            *arguments,
        ]  # fmt: skip
        done = subprocess.run(
            command, env={**os.environ, "ICEBENCH_DATA_DIR": str(data)}, capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise IcebenchRunFailed(f"icebench run exited {done.returncode}: {said}")
        records = read_runs(newest_results_folder(results))
        if len(records) != 1:
            raise IcebenchRunFailed(f"icebench run recorded {len(records)} runs, not one (a library axis?)")
        return records[0]

    return run
