"""ray-data: Ray Data's `read_parquet` + `Dataset.write_iceberg` on a Ray cluster the worker starts.

`ray.init` in the worker starts a local cluster (the GCS, a raylet, its worker processes): all of
them children of the worker, so all under its cap and in its peak. Ray Data reads the source files
in its tasks; each task writes data files through pyiceberg (`_dataframe_to_data_files`) and hands
their metadata to the driver, which commits them in one transaction (ray 2.60,
ray/data/_internal/datasource/iceberg_datasink.py): append, a fast append; overwrite, delete every
row then append; upsert, copy-on-write and distributed: each task also sends the change set's keys,
the driver plans the files whose statistics meet the keys' min-max range, one Ray task per file
reads it and writes again its rows whose key is not in the change set, and one overwrite deletes
those files and adds the rewritten rows and the change set. Before writing, the driver unions the
table's schema with the data's (`update_schema`), a commit of its own when they differ.

Ray needs a worker environment of its own (harness/services/envs.py: `ray[data]` over the main
one); ray is imported only here, inside functions.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, model_validator

from harness.base.caps import ByteSize
from harness.engines.writers.base import StepTimer, WriteJob, Writer, snapshot_split
from harness.engines.writers.source_scan import scanned
from harness.model import EngineOptions

if TYPE_CHECKING:
    from ray.data import Dataset

RAY_VERSION = "2.60.0"  # the newest release (2026-12)
# Ray's own default share of memory for its object store (ray_constants.DEFAULT_OBJECT_STORE_MEMORY_
# PROPORTION), taken of the worker's cap rather than of the machine: /dev/shm is charged to the cap.
OBJECT_STORE_SHARE = 0.3
OBJECT_STORE_MINIMUM = 75 * 2**20  # ray refuses less (OBJECT_STORE_MINIMUM_MEMORY_BYTES)
MAX_NODES = 8
NODES_TIMEOUT_S = 120.0
# Where a cluster of `nodes` is reached: a loopback address, not 127.0.0.1, which Ray turns into the
# machine's routed address (ray._private.services.resolve_ip_for_localhost). Ray 2.60's GCS and
# raylets listen on every interface whatever the address (no setting binds them): each cluster
# admits only its own random token (RAY_AUTH_MODE=token), which no log or record holds.
RAY_NODES_ADDRESS = "127.0.0.2"
RAY_WORKER_PORTS = range(10_002, 20_000)  # `ray start`'s default --min/--max-worker-port


class RayOptions(EngineOptions):
    """`[engines.ray]` of the config file."""

    engine: ClassVar[str | None] = "ray"
    object_store_share: float = Field(
        OBJECT_STORE_SHARE, gt=0, lt=1, description="the object store's share of the worker's cap"
    )
    # Ray 2.60 reads parquet through its datasource V2 by default, and then its write_iceberg fails
    # on `__file_chunk_metadata`, the column of V2's file manifest (tests/test_ray_writers.py);
    # False reads through V1, as RAY_DATA_USE_DATASOURCE_V2=0 does, and then it passes.
    datasource_v2: bool | None = Field(
        None, description="Ray Data's parquet reader: V2 (true), V1 (false); unset: Ray's default"
    )
    nodes: int | None = Field(
        None,
        ge=1,
        le=MAX_NODES,
        description="a Ray cluster of this many nodes (a head and workers) on loopback, each node "
        "capped at the run's --memory; unset: one node inside the worker's cap",
    )
    node_memory: ByteSize | None = Field(
        None, description="nodes: each node's cap (default: the run's --memory, as the driver's)"
    )
    address: str | None = Field(
        None,
        min_length=1,
        description="a Ray cluster icebench did not start (its GCS, host:port): the driver joins it, "
        "its nodes' memory is read from Ray's metrics, nothing of it is capped here",
    )

    @model_validator(mode="after")
    def _node_memory_with_its_nodes(self) -> RayOptions:
        if self.node_memory is not None and self.nodes is None:
            raise ValueError("node_memory caps the nodes of a cluster of `nodes` only, and nodes is unset")
        if self.address is not None and self.nodes is not None:
            raise ValueError("address joins a cluster icebench did not start, nodes starts one: set one")
        return self


class RayDataWriter(Writer):
    name = "ray-data"
    description = "Ray Data read_parquet + Dataset.write_iceberg (tasks write files, the driver commits once)"
    single_commit = True  # as Ray Data promises; the oracle counts them (a schema union is one more)
    libraries = ("ray", "pyiceberg", "pyarrow")
    environment = (f"ray[data]=={RAY_VERSION}",)
    options = RayOptions
    in_default_matrix = False  # a cluster's start per run; `--writers ray-data` asks for it
    consumes_batches = False  # Ray reads the files itself: its steps are the write and the commit

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        self._write(job, timer, "APPEND")

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        self._write(job, timer, "OVERWRITE")

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        self._write(job, timer, "UPSERT", upsert_kwargs={"join_cols": list(job.key_columns)})

    def _write(self, job: WriteJob, timer: StepTimer, mode: str, **kwargs: Any) -> None:
        """One `write_iceberg` on a cluster of this worker's own (or `address`'s): a step until its
        snapshot was stamped, then the commit."""
        with ray_cluster(job, timer), scanned(job.source), snapshot_split(job.table, timer):
            from ray.data import SaveMode  # after the cluster's start: Ray reads its token once

            _dataset(job).write_iceberg(
                ".".join(job.table.name()),
                catalog_kwargs=catalog_kwargs(job),
                mode=SaveMode[mode],
                **kwargs,
            )


def catalog_kwargs(job: WriteJob) -> dict[str, str]:
    """The run's catalog as pyiceberg's `load_catalog` takes it, for the driver and every task."""
    catalog = job.table.catalog
    return {"name": catalog.name, **{key: str(value) for key, value in catalog.properties.items()}}


def _dataset(job: WriteJob) -> Dataset:
    import ray.data

    if isinstance(job.options, RayOptions) and job.options.datasource_v2 is not None:
        ray.data.DataContext.get_current().use_datasource_v2 = job.options.datasource_v2
    dataset = ray.data.read_parquet([str(path) for path in job.source.paths])
    return dataset if job.source.limit_rows is None else dataset.limit(job.source.limit_rows)


@contextmanager
def ray_cluster(job: WriteJob, timer: StepTimer) -> Iterator[None]:
    """A Ray cluster for one write, stopped and its files removed afterwards: by default a local one
    whose processes are children of this worker (so under its cap), its object store a share of the
    cap; with `nodes`, that many nodes on loopback, each capped on its own (ray_nodes). With
    `address`, the cluster there, joined and left, its nodes' memory sampled from Ray's metrics
    into `timer.executors` (ray_metrics.py)."""
    options = job.options if isinstance(job.options, RayOptions) else RayOptions()
    if options.address is not None:
        with _joined(options.address, timer):
            yield
        return
    if options.nodes is not None:  # the driver (this process) and every node present the cluster's
        # token; before Ray is imported, which reads them once
        os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})
    import ray

    # Ray's sockets live under its temp folder, whose path must stay short (a unix socket's 107 bytes).
    scratch = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    try:
        if options.nodes is None:
            ray.init(
                num_cpus=os.cpu_count() or 1,
                object_store_memory=object_store_bytes(job.cap_bytes, options),
                include_dashboard=False,
                log_to_driver=False,
                _temp_dir=str(scratch),
            )
            yield
            return
        node_cap = options.node_memory or job.cap_bytes
        with ray_nodes(options.nodes, object_store_bytes(node_cap, options), scratch) as address:
            ray.init(address=address, log_to_driver=False)
            wait_for_nodes(options.nodes)
            yield
    finally:
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def _joined(address: str, timer: StepTimer) -> Iterator[None]:
    import ray

    from harness.engines.ray_metrics import sampled_nodes

    ray.init(address=address, log_to_driver=False)
    try:
        with sampled_nodes() as nodes:
            yield
        timer.executors = nodes.figures()
    finally:
        ray.shutdown()


def object_store_bytes(cap_bytes: int | None, options: RayOptions) -> int | None:
    """The object store's share of a cap (a node's, or the worker's); None: Ray's default."""
    return max(OBJECT_STORE_MINIMUM, int(cap_bytes * options.object_store_share)) if cap_bytes else None


@contextmanager
def ray_nodes(count: int, object_store: int | None, scratch: Path) -> Iterator[str]:
    """`count` Ray nodes on loopback (`ray start --block`: the head, then workers joining it), the
    machine's cores shared among them; each enters a capped cgroup of its own, `ray-node-<i>`, before
    it starts, so its raylet and every Ray worker process it forks stay inside (where the run hands
    no cgroups, no isolation, they run uncapped). Yields the head's address; stops every node's
    process tree at the end."""
    import psutil

    from harness.base.executor_caps import self_capped

    ray = str(Path(sys.executable).parent / "ray")
    port, host = gcs_port(), RAY_NODES_ADDRESS
    cpus = max(1, (os.cpu_count() or 1) // count)
    common = [f"--node-ip-address={host}", f"--num-cpus={cpus}", "--block", "--disable-usage-stats"]
    if object_store is not None:
        common.append(f"--object-store-memory={object_store}")
    head = [ray, "start", "--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={scratch}"]
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        for index in range(count):
            command = [*head, *common] if index == 0 else [ray, "start", f"--address={host}:{port}", *common]
            # their output joins the worker's log
            nodes.append(subprocess.Popen(self_capped(f"ray-node-{index}", command)))
            if index == 0:
                _wait_for_head(nodes[0], host, port)
        yield f"{host}:{port}"
    finally:
        for node in nodes:
            with contextlib.suppress(psutil.NoSuchProcess):
                for process in [*psutil.Process(node.pid).children(recursive=True), psutil.Process(node.pid)]:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        process.kill()
            node.wait()


def gcs_port() -> int:
    """A free port for the head's GCS outside the range Ray keeps for its worker processes."""
    from harness.services.processes import free_port

    while (port := free_port()) in RAY_WORKER_PORTS:
        pass
    return port


def _wait_for_head(head: subprocess.Popen[bytes], host: str, port: int) -> None:
    """Until the head's GCS takes connections; its exit first is the start's failure."""
    deadline = time.monotonic() + NODES_TIMEOUT_S
    while time.monotonic() < deadline:
        if head.poll() is not None:
            raise RuntimeError(f"the Ray head node exited {head.returncode} before its GCS took connections")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the Ray head node's GCS took no connection in {NODES_TIMEOUT_S:.0f} s")


def wait_for_nodes(count: int) -> None:
    """Until `count` nodes are alive in the cluster (the workers join after the head)."""
    import ray

    deadline = time.monotonic() + NODES_TIMEOUT_S
    while (alive := sum(node["Alive"] for node in ray.nodes())) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{alive} of {count} Ray nodes joined in {NODES_TIMEOUT_S:.0f} s")
        time.sleep(0.2)
