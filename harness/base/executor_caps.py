"""Caps for a cluster's executors: one cgroup v1 memory cgroup per executor, made by the executor
itself as it starts (the `java` a cluster icebench starts gives its workers:
harness/services/spark_cluster.py), under a parent the run makes and passes down through the
driver's environment (Spark's `spark.executorEnv.*`). Each executor's cap is the run's `--memory`,
as a local worker's is; the driver keeps its own cap beside them.

The parent is named like a worker's cap (`icebench-<pid>-<hex>`): the start-up sweep removes one a
killed harness left, with its executors in it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from harness.base.caps import (
    CGROUP_ROOT,
    Cgroup,
    cgroup_parent,
    format_size,
    harness_box,
    kill_all_inside,
    our_cgroup_name,
    remove_cgroup,
)
from harness.model import ExecutorFigures

# What the driver hands its executors (through spark.executorEnv): where to make their cgroups, and
# the cap of each. An executor started without them runs uncapped, as on any other cluster.
EXECUTOR_CGROUPS_VARIABLE = "ICEBENCH_EXECUTOR_CGROUPS"
EXECUTOR_CAP_VARIABLE = "ICEBENCH_EXECUTOR_CAP"
EXECUTOR_PREFIX = "executor-"  # then Spark's executor id, or a Ray node's name (ray-node-0)

# A process that caps itself before it becomes `"$@"`: `sh -c SELF_CAPPING NAME COMMAND...` makes
# the cgroup EXECUTOR_PREFIX + NAME under the run's parent, limits it (memory and memory+swap) and
# enters it, then execs COMMAND, whose every child stays inside; exit 70 when it cannot (never
# uncapped). Without the run's variables (no cgroup isolation) it only execs.
SELF_CAPPING = f"""
name=$0
if [ -n "${{{EXECUTOR_CGROUPS_VARIABLE}:-}}" ]; then
  cgroup="${EXECUTOR_CGROUPS_VARIABLE}/{EXECUTOR_PREFIX}$name"
  if ! {{ mkdir "$cgroup" && echo "${EXECUTOR_CAP_VARIABLE}" > "$cgroup/memory.limit_in_bytes" &&
       {{ [ ! -e "$cgroup/memory.memsw.limit_in_bytes" ] ||
         echo "${EXECUTOR_CAP_VARIABLE}" > "$cgroup/memory.memsw.limit_in_bytes"; }} &&
       echo $$ > "$cgroup/cgroup.procs"; }}; then
    echo "icebench: cannot cap {EXECUTOR_PREFIX}$name in $cgroup" >&2
    exit 70
  fi
fi
exec "$@"
"""


def self_capped(name: str, command: list[str]) -> list[str]:
    """`command` as a process that enters a capped cgroup of its own, `name`, before it runs."""
    return ["sh", "-c", SELF_CAPPING, name, *command]


def executor_name(executor: str) -> str:
    """`executor 0` for Spark's executor 0; `ray node 1` for the cgroup `ray-node-1`."""
    return f"executor {executor}" if executor.isdigit() else executor.replace("-", " ")


class ExecutorCaps:
    """The parent cgroup of one run's executors, each executor's figures sampled while it runs."""

    def __init__(self, cap_bytes: int, parent: Path) -> None:
        self.cap_bytes = cap_bytes
        self.path = parent / our_cgroup_name()
        self.path.mkdir()
        self._rss: dict[str, int] = {}

    def variables(self) -> dict[str, str]:
        """What the driver's process needs in its environment to hand to its executors."""
        return {EXECUTOR_CGROUPS_VARIABLE: str(self.path), EXECUTOR_CAP_VARIABLE: str(self.cap_bytes)}

    def executors(self) -> dict[str, Cgroup]:
        """Each executor's cgroup by its id, in the order Spark numbered them."""
        found = {
            child.name.removeprefix(EXECUTOR_PREFIX): Cgroup(child)
            for child in self.path.iterdir()
            if child.is_dir() and child.name.startswith(EXECUTOR_PREFIX)
        }
        return dict(sorted(found.items(), key=lambda item: (len(item[0]), item[0])))

    def sample(self) -> None:
        """Each executor's resident memory now, its largest kept (the kernel keeps no rss peak)."""
        for executor, cgroup in self.executors().items():
            if (usage := cgroup.sample()) is not None:
                self._rss[executor] = max(self._rss.get(executor, 0), usage.rss_bytes)

    @contextlib.contextmanager
    def sampled(self, interval_s: float) -> Iterator[ExecutorCaps]:
        """Samples every `interval_s` in a thread while the block runs."""
        stop = threading.Event()

        def sample_until_stopped() -> None:
            while not stop.wait(interval_s):
                with contextlib.suppress(OSError):  # an executor's cgroup went meanwhile
                    self.sample()

        thread = threading.Thread(target=sample_until_stopped, name="executor-caps", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()

    def figures(self) -> list[ExecutorFigures]:
        """What each executor used: the kernel's peak and OOM kills, the sampled resident peak."""
        with contextlib.suppress(OSError):
            self.sample()
        return [
            ExecutorFigures(
                name=executor_name(executor),
                source="cgroup",
                cap_bytes=cgroup.limit_bytes(),
                peak_memory_bytes=cgroup.peak_bytes(),
                peak_rss_bytes=self._rss.get(executor),
                oom_kills=cgroup.oom_kills(),
            )
            for executor, cgroup in self.executors().items()
        ]

    def close(self) -> None:
        """Stops what still runs in them (an executor the cluster had not yet reaped), removes them."""
        kill_all_inside(self.path)
        remove_cgroup(self.path.relative_to(CGROUP_ROOT))


def executors_parent() -> Path | None:
    """Where a run's executors' cgroups go: beside the --harness-memory box, as the stack's servers
    run (a cluster's executors are other machines, not the user's container), else where a worker's
    cap goes; None where cgroups are not ours to make."""
    box = harness_box()
    return box.path.parent if box is not None else cgroup_parent()


def executor_oom(executors: list[ExecutorFigures]) -> str | None:
    """The OOM of a run whose executors the kernel killed at their caps, naming them; None: none was."""
    killed = [executor for executor in executors if executor.oom_kills]
    if not killed:
        return None
    first, *others = killed
    more = f" (and {len(others)} more: {', '.join(e.name for e in others)})" if others else ""
    return (
        f"{first.name} OOM-killed by the kernel at its {format_size(first.cap_bytes)} cap "
        f"(oom_kill count {first.oom_kills}){more}"
    )
