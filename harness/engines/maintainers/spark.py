"""Maintenance as a Spark user does it: Iceberg's own Spark procedures, in a session of the step's
own (its JVM a child of the worker, inside the cap).

- compact: `rewrite_data_files` (bin-pack, Iceberg Java's defaults), then `rewrite_manifests`: two
  snapshots, two commits;
- expire: `expire_snapshots` keeping the newest (`retain_last => 1`), everything older expired;
  Iceberg Java deletes the files only the expired snapshots needed;
- orphans: `remove_orphan_files` for every file older than now (its default keeps 3 days: no write
  runs beside a rounds phase).
"""

from __future__ import annotations

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
        self._call(job, timer, "rewrite_data_files(table => {table})", "rewrite_manifests(table => {table})")

    def expire(self, job: MaintenanceJob, timer: StepTimer) -> None:
        self._call(
            job, timer, f"expire_snapshots(table => {{table}}, older_than => {_now()}, retain_last => 1)"
        )

    def orphans(self, job: MaintenanceJob, timer: StepTimer) -> None:
        self._call(job, timer, f"remove_orphan_files(table => {{table}}, older_than => {_now()})")

    def _call(self, job: MaintenanceJob, timer: StepTimer, *procedures: str) -> None:
        """Each procedure on the job's table, timed as one commit each, in one session."""
        properties = {key: str(value) for key, value in job.table.catalog.properties.items()}
        master = job.options.master if isinstance(job.options, SparkOptions) else SparkOptions().master
        with timer.step():  # JVM start + session, as the Spark writer reports it
            spark = spark_session(properties, job.cap_bytes, master)
        try:
            table = "'" + ".".join(job.table.name()).replace("'", "\\'") + "'"
            for procedure in procedures:
                with timer.commit():
                    _run(spark, f"CALL {SPARK_CATALOG}.system.{procedure.format(table=table)}")
        except Exception as exc:  # Py4J's pages of JVM stack: the cause, as one line
            raise spark_failure(exc) from exc
        finally:
            spark.stop()


def _run(spark: SparkSession, statement: str) -> None:
    spark.sql(statement).collect()


def _now() -> str:
    """A timestamp literal just after now: every snapshot and file of the table is older."""
    moment = datetime.now(UTC) + timedelta(seconds=1)
    return f"TIMESTAMP '{moment:%Y-%m-%dT%H:%M:%S}Z'"  # UTC, whatever the session's zone
