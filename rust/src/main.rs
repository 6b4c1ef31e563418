//! icebench's worker for the Rust writers. It speaks the Python workers' contract
//! (harness/engines/worker.py): `icebench-rust-worker SPEC.json` reads the WorkerSpec, feeds the
//! source to one writer inside the memory cap it was started in, and writes the WorkerResult (or,
//! at a kill point, the KillNote). `icebench-rust-worker --describe` prints its writers, their
//! operations and the crates' versions as JSON.

mod catalog;
mod contract;
mod source;
mod timer;
mod writers;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use iceberg::arrow::schema_to_arrow_schema;

use crate::contract::{Failure, Status, WorkerResult, WorkerSpec, peak_rss_bytes, write_whole};
use crate::timer::{KillPlan, StepTimer};
use crate::writers::Job;

const WORKER_OOM_SCORE_ADJ: i32 = 500; // harness.base.caps.WORKER_OOM_SCORE_ADJ

fn versions() -> BTreeMap<String, String> {
    env!("ICEBENCH_CRATE_VERSIONS")
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, version)| (name.to_string(), version.to_string()))
        .collect()
}

fn describe() -> String {
    serde_json::json!({"operations": writers::operations(), "versions": versions()}).to_string()
}

async fn run(spec: &WorkerSpec, result: &mut WorkerResult, timer: &mut StepTimer) -> Result<(), Failure> {
    let catalog = catalog::load_catalog(&spec.catalog).await?;
    let table = catalog.load_table(&catalog::table_ident(&spec.table)?).await?;
    let source = source::ParquetSource::open(&spec.source_dir, spec.batch_rows, spec.limit_rows)?;
    let table_schema = schema_to_arrow_schema(table.metadata().current_schema())?;
    source::check_schema(&source, &table_schema, &spec.table)?;
    result.batches = source.batch_count();
    if let (Some(point), Some(note_path)) = (&spec.kill_at, &spec.kill_note_path) {
        timer.kill = Some(KillPlan {
            point: *point,
            note_path: note_path.clone(),
            rows: source.rows,
            batches: result.batches,
            versions: result.versions.clone(),
            committed_snapshot_id: table.metadata().current_snapshot_id(),
            rows_committed: 0,
        });
    }
    std::fs::write(&spec.started_marker, b"")
        .map_err(|e| Failure::write(format!("{}: {e}", spec.started_marker.display())))?;
    if let Some(rendezvous) = &spec.rendezvous {
        rendezvous.arrive()?;
    }
    let progress = contract::Progress::new(spec.progress_path.clone(), source.rows);
    let start = Instant::now();
    let job = Job { catalog, table, source, progress };
    writers::perform(&spec.writer, spec.operation, job, timer).await?;
    result.write_s = Some(start.elapsed().as_secs_f64());
    result.kill_missed = timer.missed();
    Ok(())
}

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    if arguments.get(1).map(String::as_str) == Some("--describe") {
        println!("{}", describe());
        return;
    }
    contract::die_with_parent_if_asked(); // first: no committing for a killed harness
    contract::set_oom_score_adj(WORKER_OOM_SCORE_ADJ);
    let Some(spec_path) = arguments.get(1) else {
        eprintln!("usage: icebench-rust-worker SPEC.json | --describe");
        std::process::exit(2);
    };
    let spec: WorkerSpec = match std::fs::read_to_string(spec_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(spec) => spec,
        Err(error) => {
            eprintln!("icebench-rust-worker: spec {spec_path}: {error}");
            std::process::exit(2);
        }
    };
    let mut result = WorkerResult { status: Status::Ok, versions: versions(), ..Default::default() };
    let mut timer = StepTimer::default();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
        runtime.block_on(run(&spec, &mut result, &mut timer))
    }));
    let failure = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some(failure),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            Some(Failure::write(format!("panicked: {message}")))
        }
    };
    if let Some(failure) = failure {
        eprintln!("icebench-rust-worker: {}", failure.message);
        result.status = Status::Error;
        result.error = Some(failure.message);
        result.error_kind = Some(failure.kind);
    }
    result.step_latencies_s = timer.steps;
    result.commit_latencies_s = timer.commits;
    result.peak_rss_bytes = peak_rss_bytes();
    if let Err(error) = write_whole(
        Path::new(&spec.result_path),
        &serde_json::to_string(&result).expect("a result serialises"),
    ) {
        eprintln!("icebench-rust-worker: cannot write {}: {error}", spec.result_path.display());
        std::process::exit(1);
    }
}
