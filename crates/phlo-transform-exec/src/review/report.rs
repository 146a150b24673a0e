//! What `review` reports (the `--format json` document; the Markdown is rendered from it):
//! the change's models with their plan reasons, schema changes, lineage delta, data diffs,
//! tests and promotion gates, and the headline counts of SPEC §109 over them.

use phlo_transform_compiler::SqlChange;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::schema_change::{ChangeKind, SchemaChange, Severity};
use phlo_transform_plan::{ChangedPath, Decision, Reason};
use phlo_transform_project::Materialization;
use serde::Serialize;

use super::data::DataReview;
use super::tests_state::TestReview;
use crate::environments::promote::Gate;
use crate::lineage_diff::LineageDiffReport;

/// How a model takes part in the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelChange {
    /// Its own inputs changed (its file, its configuration, a test or source of it).
    Changed,
    /// Downstream of a changed model.
    Downstream,
    /// Its file changed, but only in formatting or comments: nothing to build.
    NoSemanticChange,
    /// Its file was deleted: main's relation stays until it is dropped by hand.
    Removed,
}

/// One model of the change.
#[derive(Clone, Debug, Serialize)]
pub struct ModelReview {
    pub name: String,
    pub path: String,
    pub change: ModelChange,
    /// The plan's decision against main (`None`: not planned — no semantic change).
    pub decision: Option<Decision>,
    pub materialization: Option<Materialization>,
    /// How the SQL changed since main's materialisation (none, text, ast, semantic).
    pub sql_change: Option<SqlChange>,
    pub reasons: Vec<Reason>,
    /// Why Git counts it as changed (`transforms/x.sql modified since main`).
    pub causes: Vec<String>,
}

/// The gates of promoting the candidate environment into main (`promote --check`).
#[derive(Clone, Debug, Serialize)]
pub struct PromotionReview {
    pub from: String,
    pub to: String,
    pub passed: bool,
    pub gates: Vec<Gate>,
}

/// SPEC §109's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Headline {
    pub models_changed: usize,
    pub downstream_rebuilt: usize,
    pub no_semantic_change: usize,
    pub models_removed: usize,
    pub blocked: usize,
    pub columns_added: usize,
    pub columns_removed: usize,
    pub columns_changed: usize,
    pub breaking_changes: usize,
    pub review_changes: usize,
    pub rows_added: u64,
    pub rows_removed: u64,
    pub records_modified: u64,
    pub models_diffed: usize,
    pub models_not_diffed: usize,
    pub diff_policy_violations: usize,
    pub tests_passed: usize,
    pub tests_failed: usize,
    /// Tests without a result at their current version (never run, or run before the change).
    pub tests_not_run: usize,
}

/// The review of a change.
#[derive(Debug, Serialize)]
pub struct ReviewReport {
    /// The reference the plan and schema changes are against (main: where the change goes).
    pub planned_against: String,
    /// The candidate environment (`--ref`), whose data, tests and gates are reported.
    pub candidate: Option<String>,
    /// Compile errors of the work tree (the diagnostics name them; the models they block are
    /// `blocked` in the plan).
    pub compile_errors: usize,
    pub headline: Headline,
    pub models: Vec<ModelReview>,
    /// Every changed path since the base and what it meant.
    pub files: Vec<ChangedPath>,
    pub schema_changes: Vec<SchemaChange>,
    pub lineage: LineageDiffReport,
    pub data: Vec<DataReview>,
    pub tests: Vec<TestReview>,
    pub promotion: Option<PromotionReview>,
    /// Problems met on the way that did not stop the review (the engine's warnings).
    #[serde(skip)]
    pub warnings: Vec<Diagnostic>,
    /// `[schema] breaking_changes = "error"`: the workspace refuses BREAKING changes, so the
    /// review fails on them as with `--fail-on breaking`.
    #[serde(skip)]
    pub breaking_refused: bool,
}

/// What `--fail-on` makes the review fail on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    /// A BREAKING schema change.
    Breaking,
    /// A data diff violates its `[model."x".diff]` policy.
    DiffPolicy,
    /// A test failed at its current version.
    Tests,
}

impl FailOn {
    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Breaking => "breaking",
            FailOn::DiffPolicy => "diff-policy",
            FailOn::Tests => "tests",
        }
    }
}

impl Headline {
    pub(super) fn new(
        models: &[ModelReview],
        schema: &[SchemaChange],
        data: &[DataReview],
        tests: &[TestReview],
    ) -> Self {
        let mut h = Headline::default();
        for m in models {
            match m.change {
                ModelChange::Changed => h.models_changed += 1,
                ModelChange::Downstream if m.decision == Some(Decision::Build) => {
                    h.downstream_rebuilt += 1
                }
                ModelChange::Downstream => {}
                ModelChange::NoSemanticChange => h.no_semantic_change += 1,
                ModelChange::Removed => h.models_removed += 1,
            }
            if m.decision == Some(Decision::Blocked) {
                h.blocked += 1;
            }
        }
        for ch in schema.iter().flat_map(|s| &s.changes) {
            match ch.kind {
                ChangeKind::Added => h.columns_added += 1,
                ChangeKind::Removed => h.columns_removed += 1,
                _ => h.columns_changed += 1,
            }
            match ch.severity {
                Severity::Breaking => h.breaking_changes += 1,
                Severity::Review => h.review_changes += 1,
                Severity::Safe => {}
            }
        }
        for d in data {
            let Some(s) = &d.summary else {
                h.models_not_diffed += 1;
                continue;
            };
            h.models_diffed += 1;
            h.diff_policy_violations += s.violations.len();
            match &s.records {
                Some(r) => {
                    h.rows_added += r.added;
                    h.rows_removed += r.removed;
                    h.records_modified += r.modified;
                }
                // Keyless: only the counts say how many rows came and went.
                None if s.rows.delta >= 0 => h.rows_added += s.rows.delta as u64,
                None => h.rows_removed += s.rows.delta.unsigned_abs(),
            }
        }
        for t in tests {
            if t.passed() {
                h.tests_passed += 1;
            } else if t.failed() {
                h.tests_failed += 1;
            } else {
                h.tests_not_run += 1;
            }
        }
        h
    }
}

impl ReviewReport {
    /// The errors (L018) `--fail-on` turns what the review found into: one per condition
    /// met, naming what met it. Empty: the review passes.
    pub fn refusals(&self, fail_on: &[FailOn]) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let mut conditions = fail_on.to_vec();
        if self.breaking_refused && !conditions.contains(&FailOn::Breaking) {
            conditions.insert(0, FailOn::Breaking);
        }
        for f in conditions {
            let found: Vec<String> = match f {
                FailOn::Breaking => self
                    .schema_changes
                    .iter()
                    .flat_map(|s| {
                        s.changes
                            .iter()
                            .filter(|ch| ch.severity == Severity::Breaking)
                            .map(move |ch| format!("{}.{} ({})", s.model, ch.column, ch.rule))
                    })
                    .collect(),
                FailOn::DiffPolicy => self
                    .data
                    .iter()
                    .filter_map(|d| Some((d, d.summary.as_ref()?)))
                    .flat_map(|(d, s)| s.violations.iter().map(|v| format!("{}: {v}", d.model)))
                    .collect(),
                FailOn::Tests => self
                    .tests
                    .iter()
                    .filter(|t| t.failed())
                    .map(|t| format!("{} ({})", t.name, t.status))
                    .collect(),
            };
            if found.is_empty() {
                continue;
            }
            let what = match f {
                FailOn::Breaking => "breaking schema change(s)",
                FailOn::DiffPolicy => "diff policy violation(s)",
                FailOn::Tests => "failed test(s)",
            };
            let help = match f {
                FailOn::Breaking => "update the readers, declare a rename in [model.\"…\"].renames, or drop `--fail-on breaking` to report it only",
                FailOn::DiffPolicy => "check the data change, or adjust the model's [model.\"…\".diff] policy",
                FailOn::Tests => "fix the models or tests, then `run` (or `test`) again before reviewing",
            };
            out.push(
                Diagnostic::error(
                    codes::REVIEW_REFUSED,
                    format!(
                        "--fail-on {}: {} {what}: {}",
                        f.as_str(),
                        found.len(),
                        found.join(", ")
                    ),
                )
                .with_help(help),
            );
        }
        out
    }
}
