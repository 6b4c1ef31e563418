//! One module per writer. A writer is an async function per operation it supports; `OPERATIONS`
//! is what the worker can do and `--describe` tells the harness (harness/engines/writers/rust.py).

pub mod datafusion;
pub mod iceberg_rust;

use std::sync::Arc;

use iceberg::Catalog;
use iceberg::table::Table;

use crate::contract::{Failure, Progress};
use crate::source::ParquetSource;
use crate::timer::StepTimer;

/// What a writer is handed: the loaded table, its catalog and the opened source.
pub struct Job {
    pub catalog: Arc<dyn Catalog>,
    pub table: Table,
    pub source: ParquetSource,
    pub progress: Progress,
}

/// (writer, operation) pairs the worker performs.
pub const OPERATIONS: &[(&str, &str)] = &[("iceberg-rust", "append"), ("iceberg-rust-datafusion", "append")];

pub async fn perform(writer: &str, operation: &str, job: Job, timer: &mut StepTimer) -> Result<(), Failure> {
    match (writer, operation) {
        ("iceberg-rust", "append") => iceberg_rust::append(job, timer).await,
        ("iceberg-rust-datafusion", "append") => datafusion::append(job, timer).await,
        _ => Err(Failure::bad_input(format!("the Rust worker has no writer {writer} that can {operation}"))),
    }
}
