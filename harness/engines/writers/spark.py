"""Apache Spark (`local[*]`, or the cluster of `[engines.spark] master` / `--spark-master`) +
Iceberg's Spark runtime on the run's catalog: the embedded stack's SQLite file, or a REST catalog and
its S3 store.

Spark reads the source parquet files itself; each operation is one Spark action and one commit:
append `writeTo(t).append()`, replace `writeTo(t).overwrite(true)`, upsert `MERGE INTO`.
The action is split at the new snapshot's `timestamp-ms`, which Iceberg stamps once the data
files are written and before the catalog swap: the step before it is the write, the rest the commit.
`spark-cow` / `spark-mor` first set `write.{merge,update,delete}.mode` with ALTER TABLE, a catalog
commit of its own (skipped when the table already has them), so they do not claim a single commit.
pyspark is imported only here, inside methods: the other writers never need it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from generators.source import ParquetSource
from harness.base.errors import SourceError, warn
from harness.engines.spark import (
    SPARK_CATALOG,
    SparkOptions,
    executor_figures,
    fetch_s3a_jars,
    iceberg_spark_version,
    quoted,
    s3a_uri,
    spark_session,
    spark_supports,
)
from harness.engines.writers.base import StepTimer, WriteJob, Writer, snapshot_split

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MODE_PROPERTIES = ("write.merge.mode", "write.update.mode", "write.delete.mode")
# One operation as a Spark action: (session, job, source frame, quoted target table).
SparkAction = Callable[["SparkSession", WriteJob, "DataFrame", str], None]


class SparkWriter(Writer):
    name = "spark"
    description = "Spark: writeTo.append / writeTo.overwrite(true) / MERGE INTO (table's own modes)"
    single_commit = True
    libraries = ("pyspark", "pyiceberg", "pyarrow")
    in_default_matrix = False  # a JVM per run: name them (WRITERS=spark,...) to include them
    consumes_batches = False  # Spark reads the files itself
    reads_s3_itself = True  # through Hadoop's S3A
    pyiceberg_commits = False  # Iceberg Java commits (and retries) inside the JVM
    options = SparkOptions
    maintained_with = "spark"  # Iceberg's procedures, as a Spark user maintains the table
    # copy-on-write / merge-on-read for MERGE, UPDATE and DELETE; None: leave the table as it is.
    row_level_mode: ClassVar[str | None] = None

    @classmethod
    def versions(cls) -> dict[str, str]:
        return {**super().versions(), "iceberg-spark-runtime": iceberg_spark_version()}

    @classmethod
    def supports_catalog(cls, catalog_properties: dict[str, str]) -> str | None:
        """None when this writer can run on the catalog, else why not (the runner's `unsupported`)."""
        return spark_supports(catalog_properties)

    @classmethod
    def prepare_s3_source(cls) -> None:
        fetch_s3a_jars()

    def append(self, job: WriteJob, timer: StepTimer) -> None:
        self._in_session(job, timer, _append)

    def replace(self, job: WriteJob, timer: StepTimer) -> None:
        self._in_session(job, timer, _overwrite)

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        self._in_session(job, timer, _merge)

    def _in_session(self, job: WriteJob, timer: StepTimer, action: SparkAction) -> None:
        """`action` as one Spark action on the source, in a session of its own."""
        properties = {key: str(value) for key, value in job.table.catalog.properties.items()}
        with timer.step():  # JVM start + session: paid once per run, reported as the first step
            spark = spark_session(properties, job.cap_bytes, _master(job), job.source.on_s3)
        try:
            target = quoted(SPARK_CATALOG, *job.table.name())
            self._set_modes(spark, job, target, timer)
            with timer.step():  # footers + schema; Spark plans lazily, the work happens in the commit
                source = self._source(spark, job, target)
            with snapshot_split(job.table, timer):
                action(spark, job, source, target)
        except Exception as exc:  # Py4J and captured errors: pages of JVM stack, the cause deep inside
            raise spark_failure(exc) from exc
        finally:
            try:
                timer.executors = executor_figures(spark)
            except (OSError, ValueError) as exc:  # the figures are lost, not the write
                warn(f"the executors' metrics could not be read from Spark's REST API: {exc}")
            spark.stop()

    def _set_modes(self, spark: SparkSession, job: WriteJob, target: str, timer: StepTimer) -> None:
        if self.row_level_mode is None:
            return
        current = job.table.metadata.properties
        if all(current.get(key) == self.row_level_mode for key in MODE_PROPERTIES):
            return
        assignments = ", ".join(f"'{key}' = '{self.row_level_mode}'" for key in MODE_PROPERTIES)
        with timer.commit():  # a real catalog commit (metadata.json) of its own
            spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ({assignments})")

    @staticmethod
    def _source(spark: SparkSession, job: WriteJob, target: str) -> DataFrame:
        """The source files as the table's columns and types (a prefix of them when limit_rows is set)."""
        from pyspark.sql import functions as F

        source = job.source
        frame = spark.read.parquet(*spark_paths(source))
        if source.limit_rows is not None:
            frame = _first_rows(spark, source, frame)
        present = set(frame.columns)
        columns = []
        for field in spark.table(target).schema.fields:
            if field.name not in present:
                columns.append(F.lit(None).cast(field.dataType).alias(field.name))
            elif frame.schema[field.name].dataType != field.dataType:
                columns.append(F.col(field.name).cast(field.dataType).alias(field.name))
            else:
                columns.append(F.col(field.name))
        return frame.select(*columns)


def spark_paths(source: ParquetSource) -> list[str]:
    """The source's files as Spark reads them (S3 through S3A)."""
    return [s3a_uri(str(path)) for path in source.paths]


def _master(job: WriteJob) -> str:
    # A job built without options (a test calling the writer directly): the defaults.
    return job.options.master if isinstance(job.options, SparkOptions) else SparkOptions().master


def _append(spark: SparkSession, job: WriteJob, source: DataFrame, target: str) -> None:
    source.writeTo(target).append()


def _overwrite(spark: SparkSession, job: WriteJob, source: DataFrame, target: str) -> None:
    from pyspark.sql import functions as F

    # One overwrite snapshot that deletes every old row, whatever the partitioning.
    source.writeTo(target).overwrite(F.lit(True))


def _merge(spark: SparkSession, job: WriteJob, source: DataFrame, target: str) -> None:
    source.createOrReplaceTempView("icebench_source")
    on = " AND ".join(f"t.{quoted(k)} = s.{quoted(k)}" for k in job.key_columns)
    spark.sql(
        f"MERGE INTO {target} t USING icebench_source s ON {on} "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )


JAVA_EXCEPTION = re.compile(r"^: (?:[a-z]\w*\.)+([A-Z]\w*(?:Exception|Error)): (.*)$")
UNREADABLE_FILE = re.compile(r"Encountered error while reading file (\S+?)\.? Details:")


def spark_failure(exc: Exception) -> Exception:
    """A source file Spark could not read is the SourceError any writer gives; anything else is
    Spark's deepest `Caused by:` (or its first line), as one line."""
    text = str(exc)
    causes = [
        line.removeprefix("Caused by: ").strip()
        for line in text.splitlines()
        if line.startswith("Caused by:")
    ]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # Py4J's first line only says which call failed; the Java exception follows as `: pkg.Name: ...`.
    thrown = [f"{m.group(1)}: {m.group(2)}" for line in lines if (m := JAVA_EXCEPTION.match(line))]
    cause = (causes or thrown or lines or [type(exc).__name__])[-1 if causes else 0]
    if unreadable := UNREADABLE_FILE.search(text):
        path = unreadable.group(1).removeprefix("file://")
        return SourceError(f"source file {path} is unreadable: {cause}")
    return RuntimeError(f"Spark: {cause}")


def _first_rows(spark: SparkSession, source: ParquetSource, frame: DataFrame) -> DataFrame:
    """The first `limit_rows` rows in file order, as ParquetSource.batches() yields them."""
    from pyspark.sql import functions as F

    remaining = source.limit_rows or 0
    whole, partial = [], None
    for entry, path in zip(source.manifest.files, spark_paths(source), strict=True):
        if remaining <= 0:
            break
        if entry.rows <= remaining:
            whole.append(path)
        else:
            partial = (path, remaining)
        remaining -= entry.rows
    parts = [spark.read.parquet(*whole)] if whole else []
    if partial:
        path, rows = partial
        head = spark.read.parquet(path).where(F.col("_metadata.row_index") < rows)
        parts.append(head)
    if not parts:
        return frame.limit(0)
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


class SparkCopyOnWrite(SparkWriter):
    name = "spark-cow"
    description = "Spark with write.{merge,update,delete}.mode=copy-on-write (ALTER TABLE first: 2 commits)"
    single_commit = False
    row_level_mode = "copy-on-write"


class SparkMergeOnRead(SparkWriter):
    name = "spark-mor"
    description = "Spark with write.{merge,update,delete}.mode=merge-on-read (ALTER TABLE first: 2 commits)"
    single_commit = False
    row_level_mode = "merge-on-read"
