"""daft: `read_parquet` of the source files + `DataFrame.write_iceberg` (append / overwrite), on
daft's native runner (`daft`) or on a Ray cluster the worker starts (`daft-ray`).

daft reads the files itself (the native runner: several threads; on Ray: Ray tasks), writes the
data files through its own object store client (configured from the table's FileIO properties),
then commits them with one pyiceberg transaction from this process: a fast append (a merge append
when the table asks for manifest merging); overwrite deletes every row first, in the same
transaction. daft has no upsert. daft 0.6.14 is the last release that installs beside pyarrow 26
(0.7 wants pyarrow < 26). daft and ray are imported only here, inside functions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import ClassVar

from harness.engines.writers.base import ModeWriter, StepTimer, WriteJob, WriteMode, snapshot_split
from harness.engines.writers.ray_data import RAY_VERSION, RayOptions, ray_cluster
from harness.engines.writers.source_scan import scanned
from harness.model import EngineOptions


class DaftWriter(ModeWriter):
    name = "daft"
    description = "daft read_parquet + DataFrame.write_iceberg (append; replace: mode=overwrite), one commit"
    single_commit = True  # one transaction (replace: its delete and append together)
    libraries: ClassVar[tuple[str, ...]] = ("daft", "pyiceberg", "pyarrow")
    consumes_batches = False  # daft reads the files itself: its steps are the write and the commit

    def runner(self, job: WriteJob, timer: StepTimer) -> AbstractContextManager[object]:
        """Where daft runs the plan: its native runner, in this process."""
        return nullcontext()

    def write_mode(self, job: WriteJob, timer: StepTimer, mode: WriteMode) -> None:
        """The whole write as one daft call: a step until its snapshot was stamped, then the commit."""
        with self.runner(job, timer):
            import daft

            frame = daft.read_parquet([str(path) for path in job.source.paths])
            if job.source.limit_rows is not None:
                frame = frame.limit(job.source.limit_rows)
            with scanned(job.source), snapshot_split(job.table, timer):
                frame.write_iceberg(job.table, mode=mode)


class DaftRayWriter(DaftWriter):
    name = "daft-ray"
    description = "daft on its Ray runner (a local cluster, capped) + DataFrame.write_iceberg, one commit"
    libraries = ("daft", "ray", "pyiceberg", "pyarrow")
    environment = (f"ray[data,client]=={RAY_VERSION}",)
    options: ClassVar[type[EngineOptions]] = RayOptions
    in_default_matrix = False  # a cluster's start per run; `--writers daft-ray` asks for it

    def runner(self, job: WriteJob, timer: StepTimer) -> AbstractContextManager[object]:
        return _on_ray(job, timer)


@contextmanager
def _on_ray(job: WriteJob, timer: StepTimer) -> Iterator[None]:
    """A Ray cluster of the worker's own or `address`'s (ray_data.ray_cluster), daft's runner on it."""
    with ray_cluster(job, timer):
        import daft

        daft.set_runner_ray(noop_if_initialized=True)
        yield
