"""DataFusion's `INSERT INTO` an Iceberg table through iceberg-datafusion, in the Rust worker
(rust/src/writers/datafusion.rs).

The table is registered by iceberg-datafusion's catalog provider and filled from a DataFusion
parquet table over the source files: IcebergWriteExec writes while the scan streams, and
IcebergCommitExec commits once. DataFusion reads the source itself, so its step is the statement
up to the snapshot's stamp and its commit the rest.
"""

from __future__ import annotations

from harness.engines.writers.base import RustWriter
from harness.model import Operation


class IcebergRustDataFusionWriter(RustWriter):
    name = "iceberg-rust-datafusion"
    description = "DataFusion (Rust): INSERT INTO via iceberg-datafusion, streamed from the parquet files"
    single_commit = True
    operations = (Operation.APPEND,)
    consumes_batches = False
