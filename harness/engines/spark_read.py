"""Spark reads a table for the oracle (`--verify-with spark`): row count and content checksum.

The checksum is computed on Spark's own scan: every Spark task hashes the Arrow batches of its
split (mapInArrow) with the same order-independent checksum the generators use, and the partial
checksums add up. Runs in a child process (`python -m harness.engines.spark_read`, spec on stdin), so the
JVM ends with it and the harness process stays small.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pyarrow as pa
from pydantic import BaseModel

from generators.checksum import Checksum
from harness.base.errors import IcebenchError
from harness.engines.spark import DEFAULT_MASTER, SPARK_CATALOG, quoted, spark_session

READ_TIMEOUT_S = 1800.0


class SparkReadSpec(BaseModel):
    catalog: dict[str, str]
    table: str  # namespace.table
    master: str = DEFAULT_MASTER


class SparkReadFailed(IcebenchError):
    pass


def read_with_spark(catalog: dict[str, str], table: str, master: str = DEFAULT_MASTER) -> Checksum:
    """Row count and checksum of `table` as Spark reads it; SparkReadFailed with Spark's last words."""
    spec = SparkReadSpec(catalog=catalog, table=table, master=master)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness.engines.spark_read"],
            input=spec.model_dump_json(),  # stdin, not argv: catalog properties may hold secrets
            capture_output=True,
            text=True,
            timeout=READ_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SparkReadFailed(f"spark did not finish reading {table} in {READ_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        raise SparkReadFailed(f"spark could not read {table}: {_last_error(done.stderr)}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return Checksum.from_hex(result["checksum"], result["rows"])


def _last_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "Exception" in line]
    return (errors or lines or ["no output"])[-1][:500]


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
    checksum = spark_checksum(SparkReadSpec.model_validate_json(sys.stdin.read()))
    print(json.dumps({"rows": checksum.rows, "checksum": checksum.hex}))


if __name__ == "__main__":
    main()
