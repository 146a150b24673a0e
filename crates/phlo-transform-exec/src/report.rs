//! The run report: what `run --json` prints and `run.json` stores (SPEC §75).

use phlo_transform_plan::Plan;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct ErrorInfo {
    pub code: String,
    /// adapter, sql, test, dependency, internal (SPEC §65).
    pub category: String,
    pub message: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ModelResult {
    pub name: String,
    /// passed, failed, skipped, blocked.
    pub status: String,
    pub version: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<u64>,
    pub rows: Option<u64>,
    /// The write for this model and run generation was already committed by an earlier
    /// attempt: nothing was written twice.
    pub reused_commit: bool,
    pub error: Option<ErrorInfo>,
}

impl ModelResult {
    pub(crate) fn new(name: &str, version: Option<String>) -> Self {
        ModelResult {
            name: name.to_string(),
            status: "pending".into(),
            version,
            started_at: None,
            finished_at: None,
            duration_ms: None,
            rows: None,
            reused_commit: false,
            error: None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TestResult {
    pub name: String,
    /// passed, failed (violations found), error (the query failed), blocked.
    pub status: String,
    pub violations: Option<u64>,
    pub duration_ms: Option<u64>,
    pub error: Option<ErrorInfo>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct StatusCounts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub blocked: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub plan_id: String,
    pub environment: String,
    pub adapter: String,
    pub status: String,
    pub started_at: String,
    pub finished_at: String,
    pub counts: StatusCounts,
    pub models: Vec<ModelResult>,
    pub tests: Vec<TestResult>,
}

impl RunReport {
    pub(crate) fn new(
        run_id: String,
        plan: &Plan,
        status: &str,
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
                "blocked" => counts.blocked += 1,
                _ => counts.failed += 1,
            }
        }
        RunReport {
            run_id,
            plan_id: plan.plan_id.clone(),
            environment: plan.environment.clone(),
            adapter: plan.adapter.clone(),
            status: status.to_string(),
            started_at,
            finished_at,
            counts,
            models,
            tests,
        }
    }

    /// True when any model or test failed (exit code 1).
    pub fn failed(&self) -> bool {
        self.status != "passed"
    }
}
