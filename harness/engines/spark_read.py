"""Spark reads a table for the oracle (`--verify-with spark`): row count and content checksum.

The checksum is computed on Spark's own scan: every Spark task hashes the Arrow batches of its
split (mapInArrow) with the same order-independent checksum the generators use, and the partial
checksums add up. Runs in a child process (harness/engines/child_read.py), so the JVM ends with it
and the harness process stays small.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pyarrow as pa
from pydantic import BaseModel

from generators.checksum import Checksum
from harness.engines.child_read import answer, read_in_child
from harness.engines.spark import DEFAULT_MASTER, SPARK_CATALOG, quoted, spark_session


class SparkReadSpec(BaseModel):
    catalog: dict[str, str]
    table: str  # namespace.table
    master: str = DEFAULT_MASTER


def read_with_spark(catalog: dict[str, str], table: str, master: str = DEFAULT_MASTER) -> Checksum:
    """Row count and checksum of `table` as Spark reads it; ChildReadFailed with Spark's last words."""
    spec = SparkReadSpec(catalog=catalog, table=table, master=master)
    return read_in_child("harness.engines.spark_read", spec, "spark", table)


def partial_checksums(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One Spark task: the checksum of its batches, as one row."""
    checksum = Checksum()
    for batch in batches:
        checksum.update(batch)
    yield pa.RecordBatch.from_pydict(
        {"rows": pa.array([checksum.rows], pa.int64()), "checksum": pa.array([checksum.hex])}
    )


def spark_checksum(spec: SparkReadSpec) -> Checksum:
    spark = spark_session(spec.catalog, cap_bytes=None, master=spec.master)
    try:
        frame = spark.table(quoted(SPARK_CATALOG, *spec.table.split(".")))
        parts = frame.mapInArrow(partial_checksums, "rows long, checksum string").collect()
    finally:
        spark.stop()
    return sum((Checksum.from_hex(part.checksum, part.rows) for part in parts), Checksum())


def main() -> None:
    answer(spark_checksum(SparkReadSpec.model_validate_json(sys.stdin.read())))


if __name__ == "__main__":
    main()
