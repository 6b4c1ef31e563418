"""A Spark standalone cluster on loopback (one master, one worker), from pyspark's own jars.

For trying `--spark-master` without a cluster of your own, and for the tests. Both JVMs run in
their own process groups (the worker's executors in the worker's) and are stopped by PID when the
block ends. Logs go to `log_dir`.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from harness.services.processes import LOOPBACK, free_port, managed_process

START_TIMEOUT_S = 90.0


def spark_class() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "bin" / "spark-class"


def _alive_workers(ui_port: int) -> int:
    with urllib.request.urlopen(f"http://{LOOPBACK}:{ui_port}/json/", timeout=2) as response:
        state = json.load(response)
    return sum(worker.get("state") == "ALIVE" for worker in state.get("workers", []))


@contextmanager
def standalone_cluster(log_dir: Path, *, cores: int = 2, memory: str = "2g") -> Iterator[str]:
    """Yields the master URL (spark://127.0.0.1:PORT) once a worker has registered."""
    port, ui_port = free_port(), free_port()
    env = {**os.environ, "SPARK_LOCAL_IP": LOOPBACK, "SPARK_NO_DAEMONIZE": "1"}
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
            )
        )  # fmt: skip
        stack.enter_context(
            managed_process(
                "spark worker",
                [launcher, "org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK,
                 "--webui-port", str(free_port()), "--cores", str(cores), "--memory", memory,
                 "--work-dir", str(log_dir / "spark-work"), master_url],
                log_dir / "spark-worker.log",
                lambda: _alive_workers(ui_port) >= 1,
                env=env,
                timeout_s=START_TIMEOUT_S,
            )
        )  # fmt: skip
        yield master_url
