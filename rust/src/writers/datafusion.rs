//! `iceberg-rust-datafusion`: `INSERT INTO` the table, registered through iceberg-datafusion's
//! catalog provider, `SELECT`ed from a DataFusion parquet table over the source files (streamed:
//! IcebergWriteExec writes while the scan reads, IcebergCommitExec commits once).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use iceberg::arrow::schema_to_arrow_schema;
use iceberg_datafusion::IcebergCatalogProvider;

use super::{Job, Writer};
use crate::catalog::CATALOG_NAME;
use crate::contract::{Failure, Operation};
use crate::timer::StepTimer;

pub const WRITER: Writer = Writer {
    name: "iceberg-rust-datafusion",
    operations: &[(Operation::Append, |job, timer| Box::pin(append(job, timer)))],
};

async fn append(job: Job, timer: &mut StepTimer) -> Result<(), Failure> {
    let Job { catalog, table, source, mut progress } = job;
    let mut config = SessionConfig::new().with_batch_size(source.batch_rows);
    if source.rows < source.manifest_rows {
        config = config.with_target_partitions(1); // one stream in file order: LIMIT keeps the first rows
    }
    let context = SessionContext::new_with_config(config);
    let provider = IcebergCatalogProvider::try_new(catalog.clone()).await?;
    context.register_catalog(CATALOG_NAME, Arc::new(provider));
    let paths: Vec<String> = source.paths.iter().map(|p| p.display().to_string()).collect();
    let frame = context.read_parquet(paths, ParquetReadOptions::default()).await?;
    context.register_table("icebench_source", frame.into_view())?;

    let source_names: HashSet<&str> = source.schema.fields().iter().map(|f| f.name().as_str()).collect();
    let table_schema = schema_to_arrow_schema(table.metadata().current_schema())?;
    let columns: Vec<String> = table_schema
        .fields()
        .iter()
        .map(|f| {
            let name = quoted(f.name());
            if source_names.contains(f.name().as_str()) { name } else { format!("NULL AS {name}") }
        })
        .collect();
    let identifier = table.identifier();
    let namespace: Vec<String> = identifier.namespace().iter().map(|part| quoted(part)).collect();
    let limit =
        if source.rows < source.manifest_rows { format!(" LIMIT {}", source.rows) } else { String::new() };
    let statement = format!(
        "INSERT INTO {}.{}.{} SELECT {} FROM icebench_source{limit}",
        quoted(CATALOG_NAME),
        namespace.join("."),
        quoted(identifier.name()),
        columns.join(", "),
    );

    let before: HashSet<i64> = table.metadata().snapshots().map(|s| s.snapshot_id()).collect();
    let started_wall = unix_seconds(SystemTime::now());
    let started = Instant::now();
    if let Err(error) = context.sql(&statement).await?.collect().await {
        // DataFusion's decoding errors do not name the file: a broken source is named as the
        // Python workers name it, and is bad input, not the writer's failure.
        return Err(source.first_unreadable().unwrap_or_else(|| error.into()));
    }
    let took = started.elapsed().as_secs_f64();
    progress.fed(source.rows);
    // The commit is inside the plan: split the call at the new snapshot's stamp (written with the
    // data files done, before the catalog's swap), as harness.engines.writers.base.snapshot_split.
    let after = catalog.load_table(identifier).await?;
    let stamped = after
        .metadata()
        .snapshots()
        .filter(|s| !before.contains(&s.snapshot_id()))
        .map(|s| s.timestamp_ms() as f64 / 1000.0)
        .reduce(f64::min)
        .map_or(took, |stamp| (stamp - started_wall).clamp(0.0, took));
    timer.steps.push(stamped);
    timer.commits.push(took - stamped);
    Ok(())
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn unix_seconds(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}
