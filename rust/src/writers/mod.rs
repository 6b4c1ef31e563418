//! One module per writer. A writer is an async function per operation it supports, listed once in
//! its module's `WRITER`: `perform` dispatches on that table and `--describe` reports it, which
//! tests/test_rust_writers.py holds to each writer's `operations` in harness/engines/writers/.

pub mod datafusion;
pub mod iceberg_rust;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use iceberg::Catalog;
use iceberg::table::Table;

use crate::contract::{Failure, Operation, Progress};
use crate::source::ParquetSource;
use crate::timer::StepTimer;

/// What a writer is handed: the loaded table, its catalog and the opened source.
pub struct Job {
    pub catalog: Arc<dyn Catalog>,
    pub table: Table,
    pub source: ParquetSource,
    pub progress: Progress,
}

/// One operation of a writer: its async function, boxed so that one table holds them all.
pub type Perform =
    for<'t> fn(Job, &'t mut StepTimer) -> Pin<Box<dyn Future<Output = Result<(), Failure>> + 't>>;

/// A writer as the harness names it, and the operations it performs.
pub struct Writer {
    pub name: &'static str,
    pub operations: &'static [(Operation, Perform)],
}

/// Every writer of the worker.
pub const WRITERS: &[Writer] = &[iceberg_rust::WRITER, datafusion::WRITER];

/// Each writer's operations, for `--describe`.
pub fn operations() -> BTreeMap<&'static str, Vec<Operation>> {
    WRITERS.iter().map(|w| (w.name, w.operations.iter().map(|(operation, _)| *operation).collect())).collect()
}

pub async fn perform(
    writer: &str,
    operation: Operation,
    job: Job,
    timer: &mut StepTimer,
) -> Result<(), Failure> {
    let found = WRITERS
        .iter()
        .filter(|w| w.name == writer)
        .flat_map(|w| w.operations)
        .find(|(supported, _)| *supported == operation);
    match found {
        Some((_, write)) => write(job, timer).await,
        None => {
            Err(Failure::bad_input(format!("the Rust worker has no writer {writer} that can {operation}")))
        }
    }
}
