"""Spark reads the table in a child process (engines/spark_read.py); every task checksums its split."""

from __future__ import annotations

from generators.checksum import Checksum
from harness.engines.child_read import ChildReadFailed
from harness.engines.spark import SparkOptions, missing_jars, spark_supports
from harness.engines.spark_read import read_with_spark
from harness.engines.verifiers.base import Verifier, VerifierFailed


class SparkVerifier(Verifier):
    name = "spark"
    description = "Spark with Iceberg's runtime, in a child process: row count and checksum of its scan"
    options = SparkOptions
    reads_equality_deletes = True
    cost = 10  # a JVM and Spark's driver

    @classmethod
    def unavailable(cls) -> str | None:
        missing = missing_jars()
        return f"Spark jar {missing[0].name} is missing (make spark-jars)" if missing else None

    @classmethod
    def supports_catalog(cls, catalog_properties: dict[str, str]) -> str | None:
        return spark_supports(catalog_properties)

    def read(
        self, catalog_properties: dict[str, str], table_identifier: str, options: SparkOptions
    ) -> Checksum:
        try:
            return read_with_spark(catalog_properties, table_identifier, options.master)
        except ChildReadFailed as exc:
            raise VerifierFailed(str(exc), harness_limit=exc.harness_limit) from None
