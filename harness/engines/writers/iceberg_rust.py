"""iceberg-rust's own writer stack, in the Rust worker (rust/src/writers/iceberg_rust.rs).

The source's batches go through the crate's parquet writer and rolling file writer (at the table's
`write.target-file-size-bytes`; a writer per partition value on a partitioned table), and land in
one fast-append transaction. A step is a batch written; the commit is the transaction's.
"""

from __future__ import annotations

from harness.engines.writers.base import RustWriter
from harness.model import Operation


class IcebergRustWriter(RustWriter):
    name = "iceberg-rust"
    description = "iceberg-rust (Rust): parquet writer + rolling file writer, one fast-append commit"
    single_commit = True
    operations = (Operation.APPEND,)
