"""The harness as a separate process, interrupted mid-run: what it started, and what it left."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import psutil

from harness.base.caps import CgroupCap, cgroup_parent, kill_all_inside
from harness.base.ownership import pid_alive
from harness.base.settings import Settings

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


# `python -m harness.cli` that takes Ctrl-C whatever the suite was started with: a job a
# non-interactive shell runs in the background inherits SIGINT ignored, and Python then installs
# no KeyboardInterrupt handler (as it should: a background command is not to be Ctrl-C'd).
CLI_WITH_CTRL_C = [
    sys.executable, "-c",
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('harness.cli', run_name='__main__', alter_sys=True)",
]  # fmt: skip


@dataclass
class HarnessRun:
    """`icebench run` writing 100 commits of 100 rows per worker: long enough to interrupt mid-write."""

    process: subprocess.Popen[bytes]
    results: Path
    cgroups: list[Path] = field(default_factory=list)
    worker_pids: list[int] = field(default_factory=list)

    @classmethod
    def start(cls, settings: Settings, results: Path, scenario: str = "append", *options: str) -> HarnessRun:
        env = {**os.environ, "ICEBENCH_DATA_DIR": str(settings.data_dir)}
        process = subprocess.Popen(
            [*CLI_WITH_CTRL_C, "run", "--scenario", scenario, "--writer",
             "pyiceberg-commit-per-batch", "--preset", "tiny", "--batch-rows", "100", "--memory", "1g",
             "--results", str(results), *options],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        return cls(process, results)

    def wait_for_workers(self, count: int = 1, timeout: float = 120.0) -> None:
        """Until `count` workers are writing; then their cgroups (a cap each) and processes."""
        wait_for(lambda: len(list(self.results.glob("*/work/*/**/worker.started"))) == count, timeout)
        parent = cgroup_parent()
        assert parent is not None
        self.cgroups = list(parent.glob(f"icebench-{self.process.pid}-*"))
        assert len(self.cgroups) == count
        self.worker_pids = [
            int(pid) for cgroup in self.cgroups for pid in (cgroup / "cgroup.procs").read_text().split()
        ]
        assert len(self.worker_pids) >= count

    def service_processes(self) -> list[psutil.Process]:
        """What the harness started besides its workers: the local-services stack's servers."""
        children = psutil.Process(self.process.pid).children()
        return [child for child in children if child.pid not in self.worker_pids]

    def leftovers(self) -> list[str]:
        """Every worker process, cgroup, warehouse and scratch folder of the run still there."""
        left = [f"worker {pid}" for pid in self.worker_pids if pid_alive(pid)]
        left += [f"cgroup {cgroup.name}" for cgroup in self.cgroups if cgroup.exists()]
        for pattern in ("*/work/*/warehouse", "*/work/*/tmp", "*/work/*/worker-*/tmp"):
            left += [f"folder {path}" for path in self.results.glob(pattern)]
        return left


def run_in_box(box_bytes: int, script: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`python -c script arguments` inside a fresh harness box (a cgroup named as
    `--harness-memory` names its own) of `box_bytes`; the box is emptied and removed afterwards."""
    box = CgroupCap(box_bytes, cgroup_parent(), prefix="icebench-harness")
    try:
        return subprocess.run(
            [*box.launch_prefix(), sys.executable, "-c", script, *arguments],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        kill_all_inside(box.path)
        box.close()
