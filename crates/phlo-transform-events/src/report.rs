//! The run report: what `run --json` prints and `run.json` stores (SPEC §75).

use crate::ErrorInfo;
use phlo_transform_plan::Plan;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct ModelResult {
    pub name: String,
    /// pending, ready, running, passed, failed, skipped, cached, blocked, cancelled (SPEC §63).
    pub status: String,
    pub version: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<u64>,
    pub rows: Option<u64>,
    /// The write for this model and run generation was already committed by an earlier
    /// attempt: nothing was written twice.
    pub reused_commit: bool,
    /// What the table write did: `full`, `append`, `merge (…)`, `replace N partition(s)`,
    /// `no change`, `already committed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<String>,
    pub error: Option<ErrorInfo>,
    /// Attempts started (0 when the model never ran).
    pub attempts: u32,
    /// Every failed attempt's failure, oldest first (the last is `error` when it failed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<ErrorInfo>,
    /// Passed in the interrupted run this run resumed, and reused rather than executed again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// Skipped although the workspace now gives another version (`test` never builds; a
    /// dependency outside the selection is read as it is): why it is out of date, and which
    /// relation was used instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outdated: Option<String>,
    /// The warehouse queries of every attempt with the engine's statistics, in order (engines
    /// that report them: Trino).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<AttemptQuery>,
    /// What the model's data is current as of after the run (freshness clocks): the newest
    /// source state it reflects, as recorded; `None` when unknown, or when it was not built
    /// and has no record.
    pub current_as_of: Option<phlo_transform_state::AsOf>,
}

/// One warehouse query of one attempt (SPEC §68).
#[derive(Clone, Debug, Serialize)]
pub struct AttemptQuery {
    pub attempt: u32,
    #[serde(flatten)]
    pub query: phlo_transform_state::QueryRecord,
}

impl ModelResult {
    pub fn new(name: &str, version: Option<String>) -> Self {
        ModelResult {
            name: name.to_string(),
            status: "pending".into(),
            version,
            started_at: None,
            finished_at: None,
            duration_ms: None,
            rows: None,
            reused_commit: false,
            write: None,
            error: None,
            attempts: 0,
            failures: Vec::new(),
            resumed: false,
            outdated: None,
            current_as_of: None,
            queries: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TestResult {
    pub name: String,
    /// passed, failed (violations found), error (the query failed), blocked, cancelled.
    pub status: String,
    pub violations: Option<u64>,
    pub duration_ms: Option<u64>,
    pub error: Option<ErrorInfo>,
    /// The test's version: its SQL and what it reads, at their current versions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why a `cached` test did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl TestResult {
    /// Passed now, or cached from an earlier pass.
    pub fn ok(&self) -> bool {
        matches!(self.status.as_str(), "passed" | "cached")
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct StatusCounts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub cached: usize,
    pub blocked: usize,
    pub cancelled: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub plan_id: String,
    pub environment: String,
    pub adapter: String,
    /// passed, failed or cancelled (interrupted).
    pub status: String,
    /// The run a `run --retry-failed` run continues.
    pub continued_from: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    pub counts: StatusCounts,
    pub models: Vec<ModelResult>,
    pub tests: Vec<TestResult>,
}

impl RunReport {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        run_id: String,
        plan: &Plan,
        status: &str,
        continued_from: Option<String>,
        started_at: String,
        finished_at: String,
        models: Vec<ModelResult>,
        tests: Vec<TestResult>,
    ) -> Self {
        let mut counts = StatusCounts::default();
        for m in &models {
            match m.status.as_str() {
                "passed" => counts.passed += 1,
                "skipped" => counts.skipped += 1,
                "cached" => counts.cached += 1,
                "blocked" => counts.blocked += 1,
                "cancelled" => counts.cancelled += 1,
                _ => counts.failed += 1,
            }
        }
        RunReport {
            run_id,
            plan_id: plan.plan_id.clone(),
            environment: plan.environment.clone(),
            adapter: plan.adapter.clone(),
            status: status.to_string(),
            continued_from,
            started_at,
            finished_at,
            counts,
            models,
            tests,
        }
    }

    /// True when any model or test failed, or the run was cancelled (non-zero exit code).
    pub fn failed(&self) -> bool {
        self.status != "passed"
    }
}
