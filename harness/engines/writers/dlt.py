"""dlt, the real client: a pipeline with the filesystem destination and table_format="iceberg".

The source batches are yielded as Arrow items of one dlt resource; dlt extracts them to its own
parquet files, normalizes, then loads them through pyiceberg into the run's table (dlt's
`iceberg_catalog` points at the run's catalog, SQLite or REST, so dlt loads the very table the
runner prepared; its filesystem destination, which holds only dlt's own state files, sits beside
that table's folder, on local disk or S3). Append is `write_disposition="append"`, replace
`"replace"`, upsert `{"disposition": "merge", "strategy": "upsert"}` with the key columns as
primary key (dlt then calls pyiceberg's `table.upsert` per 1,000 rows). dlt's three stages are
the three steps; the load stage, where every catalog commit happens, is timed as the commit.
dlt is imported only here, inside methods.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.base.errors import SourceError, one_line
from harness.engines.writers.base import KnownCause, StepTimer, WriteJob, Writer

if TYPE_CHECKING:
    import pyarrow as pa

PIPELINE = "icebench"
ROOT_CAUSE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): ")
CLASS_LINE = re.compile(r"^<class '(?:[\w.]+\.)?(\w+)'>$")


def dlt_supports(catalog_properties: dict[str, str]) -> str | None:
    """dlt's `iceberg_catalog` takes SQL and REST catalogs only (dlt.common.libs.pyiceberg); every
    stack's is one of those, and where the files go is learnt from the table's own location."""
    if (kind := catalog_properties.get("type")) not in ("sql", "rest"):
        return f"dlt's iceberg_catalog takes only 'sql' and 'rest' catalogs, not {kind!r}"
    return None


class DltWriter(Writer):
    name = "dlt"
    description = "dlt pipeline: filesystem destination, table_format=iceberg (append, replace, merge-upsert)"
    single_commit = False  # dlt decides: schema union, then one call per loaded file or batch
    libraries = ("dlt", "pyiceberg", "pyarrow")
    consumes_batches = False  # steps are dlt's extract / normalize / load
    in_default_matrix = False  # name it (WRITERS=dlt,...): its upsert commits per 1,000 rows
    oom_after_feed_cause = KnownCause(
        "dlt's Iceberg load reads every file of the load into one Arrow table "
        "(arrow_dataset.to_table() in the filesystem loader) before pyiceberg writes it",
        library="dlt",
        releases=">=1.21.0,<=1.31.0",  # read in each wheel; OOM-killed at wide: 1.21.0, 1.31.0 (versions.md)
    )

    @classmethod
    def supports_catalog(cls, catalog_properties: dict[str, str]) -> str | None:
        return dlt_supports(catalog_properties)

    @classmethod
    def unavailable(cls) -> str | None:
        """A dlt release that cannot load the run's table: it does not import beside today's
        libraries, or it has no `iceberg_catalog` setting (dlt 1.20 registers its tables in an
        ephemeral SQLite catalog of its own, so the run's table would stay empty)."""
        try:
            from dlt.common.libs import pyiceberg as dlt_pyiceberg
        except Exception as exc:  # an old release's imports, against today's setuptools or pyarrow
            return f"dlt {version('dlt')} does not import here: {one_line(exc)}"
        if not hasattr(dlt_pyiceberg, "get_catalog"):
            return (
                f"dlt {version('dlt')} has no iceberg_catalog setting: it registers its tables in an "
                "ephemeral catalog of its own, never in the run's"
            )
        return None

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        self._load(job, timer, "append")

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        self._load(job, timer, "replace")

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        merge = {"disposition": "merge", "strategy": "upsert"}
        self._load(job, timer, merge, primary_key=list(job.key_columns))

    def _load(
        self, job: WriteJob, timer: StepTimer, disposition: Any, primary_key: list[str] | None = None
    ) -> None:
        """The pipeline's extract, normalize and load of the source with this write disposition."""
        import dlt

        namespace, table_name = job.table.name()[-2:]
        properties = {key: str(value) for key, value in job.table.catalog.properties.items()}
        workdir = Path(tempfile.mkdtemp(prefix="icebench-dlt-"))
        try:
            pipeline = dlt.pipeline(
                pipeline_name=PIPELINE,
                pipelines_dir=str(workdir),
                destination=self._destination(job, properties),
                dataset_name=namespace,
            )
            resource = dlt.resource(
                _batches(job),
                name=table_name,
                write_disposition=disposition,
                primary_key=primary_key,
                **self._table_hints(),
            )
            with self._configured(properties):
                with timer.step():
                    _stage(pipeline.extract, resource)
                with timer.step():
                    _stage(pipeline.normalize)
                with timer.commit():
                    info = _stage(pipeline.load)
            info.raise_on_failed_jobs()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    @staticmethod
    def _destination(job: WriteJob, properties: dict[str, str]) -> Any:
        """dlt's filesystem destination for its own state files. A REST catalog need not tell its
        client the warehouse, but the table's location names the bucket: the folder sits beside the
        table's, so it is never under the table location (no orphans) and is reachable with the
        same credentials. Each write has a folder of its own, so concurrent workers meet only at
        the table: two dlt loads that first initialise one new folder at once race in dlt itself
        (its filesystem `create_dataset` makedirs without exist_ok: FileExistsError, dlt 1.31)."""
        import dlt

        return dlt.destinations.filesystem(bucket_url=state_folder(job), **_s3_options(properties))

    @staticmethod
    def _table_hints() -> dict[str, Any]:
        return {"table_format": "iceberg"}  # the filesystem destination loads it through pyiceberg

    @staticmethod
    def _configured(properties: dict[str, str]) -> AbstractContextManager[object]:
        """What the destination reads from dlt's config while the pipeline runs."""
        return _catalog_environment(properties)


def state_folder(job: WriteJob) -> str:
    """`<table's parent>/dlt/<write id>`: beside the table, never under it, one per write."""
    return f"{job.table.location().rstrip('/').rsplit('/', 1)[0]}/dlt/{uuid.uuid4().hex[:12]}"


class DltStageFailed(RuntimeError):
    """A dlt stage failed; the message is the root cause dlt wrapped (retries, step info)."""


def _stage(call: Any, *args: Any) -> Any:
    """One dlt stage; its failure as the error underneath dlt's wrapping. A source that broke while
    dlt extracted it stays our SourceError, so the run names the file as for any writer."""
    from dlt.pipeline.exceptions import PipelineStepFailed

    try:
        return call(*args)
    except PipelineStepFailed as exc:
        cause = exc.__cause__ or getattr(exc, "exception", None)
        while cause is not None and not isinstance(cause, SourceError):
            cause = cause.__cause__ or cause.__context__
        if isinstance(cause, SourceError):
            raise cause from exc
        raise DltStageFailed(f"dlt {exc.step} failed: {_root_cause(exc)}") from exc


def _root_cause(exc: BaseException) -> str:
    """The last `SomeError: message` line dlt carries in its messages (a job's traceback text), or
    its `<class 'SomeError'>` line with the message below it (a step's own exception)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if (named := CLASS_LINE.match(line)) and index + 1 < len(lines):
            lines[index] = f"{named.group(1)}: {lines[index + 1]}"
    causes = [line for line in lines if ROOT_CAUSE.match(line)]
    return causes[-1] if causes else (lines[0] if lines else type(exc).__name__)


def _batches(job: WriteJob) -> Iterator[pa.RecordBatch]:
    yield from job.source.batches()


def _s3_options(properties: dict[str, str]) -> dict[str, Any]:
    """The filesystem destination's S3 settings from the catalog's FileIO properties. The keys are
    left out: dlt then takes them from botocore's default chain, i.e. the AWS_* environment the
    stack set, so no secret passes through dlt's config."""
    if "s3.endpoint" not in properties and "s3.region" not in properties:
        return {}  # a local warehouse
    from dlt.common.configuration.specs import AwsCredentials

    options: dict[str, Any] = {
        "credentials": AwsCredentials(
            endpoint_url=properties.get("s3.endpoint"), region_name=properties.get("s3.region")
        )
    }
    if properties.get("s3.path-style-access", "").lower() == "true":
        # as the table's FileIO is told; botocore would choose itself (virtual hosts on AWS)
        options["kwargs"] = {"config_kwargs": {"s3": {"addressing_style": "path"}}}
    return options


def _catalog_environment(properties: dict[str, str]) -> AbstractContextManager[object]:
    """dlt reads its iceberg catalog from config; the environment is its config provider."""
    import json

    from harness.services.processes import environment_variables

    # dlt insists on a `warehouse` entry; pyiceberg's REST client sends none when it is empty,
    # which is how the harness's own clients talk to a catalog that was given none.
    config = {"warehouse": "", **{key: value for key, value in properties.items() if key != "type"}}
    return environment_variables(
        {
            "ICEBERG_CATALOG__ICEBERG_CATALOG_NAME": "icebench",
            "ICEBERG_CATALOG__ICEBERG_CATALOG_TYPE": properties["type"],
            "ICEBERG_CATALOG__ICEBERG_CATALOG_CONFIG": json.dumps({"type": properties["type"], **config}),
        }
    )
