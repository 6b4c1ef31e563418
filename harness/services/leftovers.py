"""The start-up sweep: what a harness that could not clean up (SIGKILL, OOM kill, power loss) left.

Every command that runs workers calls `sweep_leftovers` first. It touches only what is provably
ours and orphaned: cgroups named `icebench-<pid>-<hex>` / `icebench-harness-<pid>-<hex>` whose
<pid> is not a running process (anything still inside is killed first), and, in results folders
whose `.owner` marker names a dead process, the warehouses and worker scratch folders (never the
results: runs.jsonl, logs, environment.json stay); worker containers labelled with a dead owner;
Spark scratch folders in the temp folder named after a dead PID.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.base.caps import CGROUP_ROOT, cgroup_owner, cgroup_parent, kill_all_inside, remove_cgroup
from harness.base.ownership import MARKER, folder_owner, pid_alive
from harness.services.container import remove_orphaned_containers

# A worker's TMPDIR, inside its run folder (the runner removes it when the worker ends).
SCRATCH_FOLDER = "tmp"
# Below a results folder: one folder per run (work/<n>-<name>), a concurrent run's workers below it.
RUN_LEFTOVERS = ("work/*/warehouse", f"work/*/{SCRATCH_FOLDER}", f"work/*/worker-*/{SCRATCH_FOLDER}")
SPARK_SCRATCH = re.compile(r"icebench-spark-(\d+)")  # harness.engines.spark.session_conf's folder name


@dataclass
class Swept:
    cgroups: list[str] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    containers: int = 0

    def __bool__(self) -> bool:
        return bool(self.cgroups or self.folders or self.containers)

    def __str__(self) -> str:
        return (
            f"{len(self.cgroups)} cgroups, {len(self.folders)} warehouse/scratch folders, "
            f"{self.containers} containers"
        )


def sweep_leftovers(results_root: Path) -> Swept:
    """Removes what dead harnesses left: under our cgroup, in `results_root`, in Docker, in /tmp."""
    return Swept(
        cgroups=remove_stale_cgroups(),
        folders=[*clean_dead_results(results_root), *remove_stale_spark_scratch()],
        containers=remove_orphaned_containers(),
    )


def remove_stale_cgroups(parent: Path | None = None) -> list[str]:
    """Our cgroups under `parent` (default: our own memory cgroup) whose harness is dead, in every
    hierarchy (a removal cut short may have left the path in some only); their names."""
    parent = parent or cgroup_parent()
    if parent is None:
        return []
    relative_parent = parent.relative_to(CGROUP_ROOT)
    stale = set()
    for hierarchy in CGROUP_ROOT.parent.iterdir():
        folder = hierarchy / relative_parent
        if folder.is_dir():
            for cgroup in folder.iterdir():
                owner = cgroup_owner(cgroup.name)
                if cgroup.is_dir() and owner is not None and not pid_alive(owner):
                    stale.add(cgroup.name)
    removed = []
    for name in sorted(stale):
        kill_all_inside(parent / name)  # a worker whose harness was SIGKILLed before pdeathsig
        try:
            remove_cgroup(relative_parent / name, settle_s=5.0)
        except OSError:  # a process that would not die (uninterruptible sleep): next time
            continue
        removed.append(name)
    return removed


def clean_dead_results(results_root: Path) -> list[Path]:
    """In results folders whose owner is dead: the runs' warehouses (unless the dead command was
    asked to keep them) and scratch folders; then the marker. What was removed."""
    removed: list[Path] = []
    if not results_root.is_dir():
        return removed
    for folder in results_root.iterdir():
        owner = folder_owner(folder)
        if owner is None or owner.alive():
            continue
        patterns = RUN_LEFTOVERS[1:] if _kept_warehouse(folder) else RUN_LEFTOVERS
        for leftover in (path for pattern in patterns for path in folder.glob(pattern)):
            shutil.rmtree(leftover, ignore_errors=True)
            removed.append(leftover)
        (folder / MARKER).unlink(missing_ok=True)
    return removed


def _kept_warehouse(folder: Path) -> bool:
    """Whether the command that wrote `folder` ran with --keep-warehouse (its environment.json)."""
    try:
        return bool(json.loads((folder / "environment.json").read_text())["settings"]["keep_warehouse"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def remove_stale_spark_scratch() -> list[Path]:
    """Spark scratch folders in the temp folder of processes that are gone (a SIGKILLed harness's
    `--verify-with spark` session; removed by atexit only)."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob("icebench-spark-*"):
        match = SPARK_SCRATCH.fullmatch(folder.name)
        if match and not pid_alive(int(match.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
