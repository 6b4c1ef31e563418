"""Maintenance as a Spark user does it: Iceberg's own Spark procedures, in a session of the step's
own (its JVM a child of the worker, inside the cap).

- compact: `rewrite_data_files` (bin-pack, Iceberg Java's defaults), then `rewrite_manifests`: two
  snapshots, two commits;
- expire: `expire_snapshots` keeping the newest (`retain_last => 1`), everything older expired;
  Iceberg Java deletes the files only the expired snapshots needed;
- orphans: Iceberg's `DeleteOrphanFiles` action for every file older than now (its default keeps 3
  days: no write runs beside a rounds phase). The `remove_orphan_files` procedure refuses an age
  under 24 hours ("Cannot remove orphan files with an interval less than 24 hours"); the action
  underneath it, called through Py4J as a Java or Scala job does, does not. It lists the table's
  location through the table's FileIO (`usePrefixListing`, Iceberg 1.10+).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar

from harness.engines.maintainers.base import Maintainer, MaintenanceJob
from harness.engines.spark import SPARK_CATALOG, SparkOptions, iceberg_spark_version, spark_session
from harness.engines.writers.base import StepTimer
from harness.engines.writers.spark import spark_failure

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SparkMaintainer(Maintainer):
    name = "spark"
    description = "Iceberg's procedures: rewrite_data_files + rewrite_manifests, expire_snapshots, orphans"
    libraries = ("pyspark", "pyiceberg", "pyarrow")
    options = SparkOptions
    pyiceberg_commits = False  # Iceberg Java commits inside the JVM
    compaction_snapshots: ClassVar[int] = 2  # rewrite_data_files, then rewrite_manifests

    @classmethod
    def versions(cls) -> dict[str, str]:
        return {**super().versions(), "iceberg-spark-runtime": iceberg_spark_version()}

    def compact(self, job: MaintenanceJob, timer: StepTimer) -> None:
        self._steps(job, timer, _procedure("rewrite_data_files"), _procedure("rewrite_manifests"))

    def expire(self, job: MaintenanceJob, timer: StepTimer) -> None:
        self._steps(job, timer, _procedure("expire_snapshots", f"older_than => {_now()}", "retain_last => 1"))

    def orphans(self, job: MaintenanceJob, timer: StepTimer) -> None:
        self._steps(job, timer, _delete_orphan_files)

    def _steps(self, job: MaintenanceJob, timer: StepTimer, *steps: SparkStep) -> None:
        """Each step on the job's table, timed as one commit each, in one session."""
        properties = {key: str(value) for key, value in job.table.catalog.properties.items()}
        master = job.options.master if isinstance(job.options, SparkOptions) else SparkOptions().master
        with timer.step():  # JVM start + session, as the Spark writer reports it
            spark = spark_session(properties, job.cap_bytes, master)
        try:
            table = ".".join((SPARK_CATALOG, *job.table.name()))
            for step in steps:
                with timer.commit():
                    step(spark, table)
        except Exception as exc:  # Py4J's pages of JVM stack: the cause, as one line
            raise spark_failure(exc) from exc
        finally:
            spark.stop()


SparkStep = Callable[["SparkSession", str], None]  # (session, the table's catalog-qualified name)


def _procedure(name: str, *arguments: str) -> SparkStep:
    def call(spark: SparkSession, table: str) -> None:
        quoted = "'" + table.removeprefix(f"{SPARK_CATALOG}.").replace("'", "\\'") + "'"
        named = ", ".join((f"table => {quoted}", *arguments))
        spark.sql(f"CALL {SPARK_CATALOG}.system.{name}({named})").collect()

    return call


def _delete_orphan_files(spark: SparkSession, table: str) -> None:
    jvm = spark._jvm  # type: ignore[attr-defined]
    iceberg_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
    older_than_ms = int(_just_after_now().timestamp() * 1000)
    actions = jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession)
    # Listed through the table's FileIO (S3FileIO on S3), not Hadoop's FileSystem, which has no `s3`
    # scheme here: without it the step failed on local-services with UnsupportedFileSystemException.
    action = actions.deleteOrphanFiles(iceberg_table).olderThan(older_than_ms).usePrefixListing(True)
    action.execute()


def _just_after_now() -> datetime:
    """Every snapshot and file of the table is older."""
    return datetime.now(UTC) + timedelta(seconds=1)


def _now() -> str:
    """`_just_after_now` as a Spark SQL literal, in UTC whatever the session's zone."""
    return f"TIMESTAMP '{_just_after_now():%Y-%m-%dT%H:%M:%S}Z'"
