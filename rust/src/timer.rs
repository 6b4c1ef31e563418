//! Step and commit latencies, and the fault scenarios' kill points (harness.engines.worker's
//! KillingStepTimer): at the point asked for, the note goes out and the process SIGKILLs itself,
//! running no cleanup, so the table is left as a crashed machine would leave it.

use std::path::PathBuf;
use std::time::Instant;

use crate::contract::{KillNote, KillPoint, Status, WorkerResult, peak_rss_bytes, write_whole};

pub struct KillPlan {
    pub point: KillPoint,
    pub note_path: PathBuf,
    pub rows: usize,
    pub batches: usize,
    pub versions: std::collections::BTreeMap<String, String>,
    /// The last snapshot the writer committed (the table's until it commits).
    pub committed_snapshot_id: Option<i64>,
    pub rows_committed: usize,
}

#[derive(Default)]
pub struct StepTimer {
    pub steps: Vec<f64>,
    pub commits: Vec<f64>,
    pub kill: Option<KillPlan>,
}

impl StepTimer {
    /// A batch is written: its step, then the data-files kill point.
    pub fn step_done(&mut self, started: Instant, fed: usize) {
        self.steps.push(started.elapsed().as_secs_f64());
        self.reached(KillPoint::DataFiles, fed);
    }

    /// The commit is about to start: the before-commit kill point.
    pub fn before_commit(&mut self, fed: usize) {
        self.reached(KillPoint::BeforeCommit, fed);
    }

    /// A commit returned with `snapshot_id`; once every row is fed it completed the operation.
    pub fn commit_done(&mut self, started: Instant, fed: usize, rows: usize, snapshot_id: Option<i64>) {
        self.commits.push(started.elapsed().as_secs_f64());
        if let Some(plan) = &mut self.kill {
            plan.rows_committed = fed;
            plan.committed_snapshot_id = snapshot_id;
        }
        if fed == rows {
            self.reached(KillPoint::AfterCommit, fed);
        }
    }

    /// Why the write ended without reaching the kill point asked for.
    pub fn missed(&self) -> Option<String> {
        let plan = self.kill.as_ref()?;
        let what = match plan.point {
            KillPoint::DataFiles => "reported no step through the timer",
            KillPoint::BeforeCommit => "never entered timer.commit()",
            KillPoint::AfterCommit => "had no timer.commit() return after it had been fed every row",
        };
        Some(format!("kill point {} never reached: the writer {what}; the write ran to its end", plan.point))
    }

    fn reached(&self, point: KillPoint, fed: usize) {
        let Some(plan) = &self.kill else { return };
        if plan.point != point {
            return;
        }
        let note = KillNote {
            result: WorkerResult {
                status: Status::Error,
                step_latencies_s: self.steps.clone(),
                commit_latencies_s: self.commits.clone(),
                batches: plan.batches,
                peak_rss_bytes: peak_rss_bytes(),
                versions: plan.versions.clone(),
                ..Default::default()
            },
            point: plan.point,
            how: "SIGKILL",
            rows: plan.rows,
            rows_fed: fed,
            rows_committed: plan.rows_committed,
            committed_snapshot_id: plan.committed_snapshot_id,
        };
        let text = serde_json::to_string(&note).expect("a note serialises");
        let _ = write_whole(&plan.note_path, &text);
        // SAFETY: the point of a kill point; nothing after it runs.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        std::process::abort();
    }
}
