//! The worker contract, as harness/model/__init__.py defines it: the WorkerSpec in, the WorkerResult (or a
//! KillNote) out, the progress file and the rendezvous of concurrent runs. Field names are the
//! Python models'; fields this worker does not use are ignored, so the spec may grow.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// harness.model.Operation: what a writer is asked to do with the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Append,
    Replace,
    Upsert,
}

/// harness.model.WorkerResult's status: how the run ended, as the worker saw it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    #[default] // a result nobody declared ok is not ok (a KillNote's status)
    Error,
}

/// harness.model.ErrorKind, the kinds this worker reports: "memory" is the harness's to say
/// (an OOM kill is seen from outside the process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    BadInput,
    Write,
}

/// harness.model.KillPoint: where a fault scenario has the worker SIGKILL itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KillPoint {
    DataFiles,
    BeforeCommit,
    AfterCommit,
}

/// The JSON spelling of a contract enum, for messages: serde's attributes are its one spelling.
fn spelling(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        other => format!("{other:?}"),
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&spelling(self))
    }
}

impl fmt::Display for KillPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&spelling(self))
    }
}

#[derive(Debug, Deserialize)]
pub struct WorkerSpec {
    pub catalog: BTreeMap<String, String>,
    pub table: String,
    pub writer: String,
    pub operation: Operation,
    pub source_dir: PathBuf,
    pub batch_rows: usize,
    pub limit_rows: Option<usize>,
    pub started_marker: PathBuf,
    pub result_path: PathBuf,
    pub progress_path: Option<PathBuf>,
    pub kill_at: Option<KillPoint>,
    pub kill_note_path: Option<PathBuf>,
    pub rendezvous: Option<Rendezvous>,
}

/// What a run reports when it ends (harness.model.WorkerResult).
#[derive(Debug, Default, Clone, Serialize)]
pub struct WorkerResult {
    pub status: Status,
    pub error: Option<String>,
    pub error_kind: Option<ErrorKind>,
    pub step_latencies_s: Vec<f64>,
    pub commit_latencies_s: Vec<f64>,
    pub write_s: Option<f64>,
    pub batches: usize,
    pub peak_rss_bytes: Option<u64>,
    pub versions: BTreeMap<String, String>,
    pub kill_missed: Option<String>,
    pub commit_retries: Option<u64>, // pyiceberg's retries: never ours
}

/// What the worker leaves just before it SIGKILLs itself (harness.model.KillNote).
#[derive(Debug, Serialize)]
pub struct KillNote {
    #[serde(flatten)]
    pub result: WorkerResult,
    pub point: KillPoint,
    pub how: &'static str,
    pub rows: usize,
    pub rows_fed: usize,
    pub rows_committed: usize,
    pub committed_snapshot_id: Option<i64>,
}

/// A failure: its one line and its kind (harness.model.ErrorKind).
#[derive(Debug)]
pub struct Failure {
    pub kind: ErrorKind,
    pub message: String,
}

impl Failure {
    /// The source is at fault (missing, unreadable, not the table's schema): bad input.
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self { kind: ErrorKind::BadInput, message: message.into() }
    }

    /// The write failed: the writer's (or its catalog's, or the object store's) error.
    pub fn write(message: impl Into<String>) -> Self {
        Self { kind: ErrorKind::Write, message: message.into() }
    }
}

impl From<iceberg::Error> for Failure {
    fn from(error: iceberg::Error) -> Self {
        Failure::write(one_line(&error))
    }
}

impl From<datafusion::error::DataFusionError> for Failure {
    fn from(error: datafusion::error::DataFusionError) -> Self {
        Failure::write(one_line(&error))
    }
}

/// An error and its sources on one line, as harness.base.errors.one_line does for Python's.
pub fn one_line(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Written beside and renamed into place: the harness reads a whole report or none.
pub fn write_whole(path: &Path, text: &str) -> io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let partial = path.with_file_name(format!(".{name}.partial"));
    let written = fs::write(&partial, text).and_then(|()| fs::rename(&partial, path));
    if written.is_err() {
        let _ = fs::remove_file(&partial);
    }
    written
}

/// Rows fed so far, for the CLI's bar (harness/base/progress.py): "FED ROWS", at most once a second.
pub struct Progress {
    path: Option<PathBuf>,
    rows: usize,
    written_at: Option<Instant>,
}

impl Progress {
    pub fn new(path: Option<PathBuf>, rows: usize) -> Self {
        Self { path, rows, written_at: None }
    }

    pub fn fed(&mut self, count: usize) {
        let Some(path) = &self.path else { return };
        let due = self.written_at.is_none_or(|at| at.elapsed() >= Duration::from_secs(1));
        if due || count >= self.rows {
            self.written_at = Some(Instant::now());
            let _ = write_whole(path, &format!("{count} {}", self.rows)); // a full disk: the run goes on
        }
    }
}

/// The workers of a concurrent run meet here before writing (harness.model.Rendezvous).
#[derive(Debug, Deserialize)]
pub struct Rendezvous {
    pub directory: PathBuf,
    pub name: String,
    pub parties: usize,
    pub timeout_s: f64,
}

impl Rendezvous {
    pub fn arrive(&self) -> Result<(), Failure> {
        let io_failure =
            |e: io::Error| Failure::write(format!("rendezvous {}: {e}", self.directory.display()));
        fs::create_dir_all(&self.directory).map_err(io_failure)?;
        fs::write(self.directory.join(&self.name), b"").map_err(io_failure)?;
        let deadline = Instant::now() + Duration::from_secs_f64(self.timeout_s);
        loop {
            let arrived = fs::read_dir(&self.directory).map_err(io_failure)?.count();
            if arrived >= self.parties {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Failure::write(format!(
                    "only {arrived} of {} concurrent workers were ready within {} s (see the other workers' logs)",
                    self.parties, self.timeout_s
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// VmHWM: this process's peak resident set.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// harness.base.orphan_guard's contract: the harness names itself in ICEBENCH_DIE_WITH_PARENT, and
/// the worker asks the kernel to SIGKILL it when that parent is gone (no committing for a dead harness).
pub fn die_with_parent_if_asked() {
    let Ok(parent) = std::env::var("ICEBENCH_DIE_WITH_PARENT") else { return };
    // SAFETY: unset before any thread starts; prctl and getppid have no memory effects.
    unsafe {
        std::env::remove_var("ICEBENCH_DIE_WITH_PARENT");
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if parent.parse::<i32>().ok() != Some(libc::getppid()) {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// A full harness box kills the worker, not the harness (harness.base.caps.WORKER_OOM_SCORE_ADJ).
pub fn set_oom_score_adj(value: i32) {
    let _ = fs::write("/proc/self/oom_score_adj", value.to_string());
}
