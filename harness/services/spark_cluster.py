"""A Spark standalone cluster on loopback (one master, N workers), from pyspark's own jars.

For `--spark-master standalone[N]` (a cluster of N workers icebench starts for a workload) and for
the tests. Every JVM runs in its own process group (a worker's executors in the worker's) and is
stopped by PID when the block ends. Logs go to `log_dir`.

The workers launch executors with `$JAVA_HOME/bin/java`; their JAVA_HOME is a folder of ours whose
`java` lets an executor enter a capped cgroup of its own before it becomes the JVM, where the
driver asks for it (harness/base/executor_caps.py): one cap per executor, as a local worker has.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from harness.base.errors import IcebenchError
from harness.base.executor_caps import SELF_CAPPING
from harness.services.processes import LOOPBACK, free_port, managed_process

START_TIMEOUT_S = 90.0
# An executor's command line names it: `... CoarseGrainedExecutorBackend ... --executor-id 3 ...`:
# it enters its capped cgroup (SELF_CAPPING) before it becomes the JVM; other java commands (the
# worker daemon itself) run as they are.
CAPPING_JAVA = """#!/bin/sh
# icebench: the java of a Spark worker of harness/services/spark_cluster.py (see there)
previous=; executor=
for argument; do [ "$previous" = --executor-id ] && executor=$argument; previous=$argument; done
[ -n "$executor" ] || exec {java} "$@"
exec sh -c '{self_capping}' "$executor" {java} "$@"
"""


def spark_class() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "bin" / "spark-class"


def real_java() -> Path:
    """The java a worker would have run: JAVA_HOME's, else the one on PATH, links resolved."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else shutil.which("java")
    if found is None or not Path(found).is_file():
        raise IcebenchError("java is not installed (make install puts it there)")
    return Path(found).resolve()


def capping_java_home(folder: Path) -> Path:
    """A JAVA_HOME whose bin/java caps each executor a driver asks to be capped, then runs java."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True, exist_ok=True)
    java.write_text(CAPPING_JAVA.format(self_capping=SELF_CAPPING, java=real_java()))
    java.chmod(0o755)
    return folder


def _alive_workers(ui_port: int) -> int:
    with urllib.request.urlopen(f"http://{LOOPBACK}:{ui_port}/json/", timeout=2) as response:
        state = json.load(response)
    return sum(worker.get("state") == "ALIVE" for worker in state.get("workers", []))


@contextmanager
def standalone_cluster(
    log_dir: Path, *, workers: int = 1, cores: int = 2, memory: str = "2g"
) -> Iterator[str]:
    """Yields the master URL (spark://127.0.0.1:PORT) once all `workers` have registered, each
    offering `cores` cores and `memory` to executors."""
    port, ui_port = free_port(), free_port()
    java_home = capping_java_home(log_dir / "java-home")
    env = {**os.environ, "SPARK_LOCAL_IP": LOOPBACK, "SPARK_NO_DAEMONIZE": "1", "JAVA_HOME": str(java_home)}
    master_url = f"spark://{LOOPBACK}:{port}"
    launcher = str(spark_class())
    with ExitStack() as stack:
        stack.enter_context(
            managed_process(
                "spark master",
                [launcher, "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                 "--port", str(port), "--webui-port", str(ui_port)],
                log_dir / "spark-master.log",
                lambda: _alive_workers(ui_port) >= 0,
                env=env,
                timeout_s=START_TIMEOUT_S,
                outside_box=True,  # other machines: not the --harness-memory box
            )
        )  # fmt: skip
        for number in range(1, workers + 1):
            stack.enter_context(
                managed_process(
                    f"spark worker {number}",
                    [launcher, "org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK,
                     "--webui-port", str(free_port()), "--cores", str(cores), "--memory", memory,
                     "--work-dir", str(log_dir / f"spark-work-{number}"), master_url],
                    log_dir / f"spark-worker-{number}.log",
                    lambda number=number: _alive_workers(ui_port) >= number,
                    env=env,
                    timeout_s=START_TIMEOUT_S,
                    outside_box=True,
                )
            )  # fmt: skip
        yield master_url
