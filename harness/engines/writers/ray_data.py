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

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

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
        """One `write_iceberg` on a cluster of this worker's own: a step until its snapshot was
        stamped, then the commit."""
        from ray.data import SaveMode

        with ray_cluster(job), scanned(job.source), snapshot_split(job.table, timer):
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
def ray_cluster(job: WriteJob) -> Iterator[None]:
    """A local Ray cluster for one write, its processes children of this worker (so under its cap),
    its object store a share of the cap, stopped and its files removed afterwards."""
    import ray

    share = job.options.object_store_share if isinstance(job.options, RayOptions) else OBJECT_STORE_SHARE
    store = max(OBJECT_STORE_MINIMUM, int(job.cap_bytes * share)) if job.cap_bytes else None
    # Ray's sockets live under its temp folder, whose path must stay short (a unix socket's 107 bytes).
    scratch = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    try:
        ray.init(
            num_cpus=os.cpu_count() or 1,
            object_store_memory=store,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=str(scratch),
        )
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
