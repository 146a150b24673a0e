//! The data impact of a review: a diff summary for each materialised model the plan builds
//! (`diff <model>`'s library call, bounded by `--diff-rows`), or why it was not diffed.

use phlo_transform_compiler::Compilation;
use phlo_transform_diff::{DiffOptions, DiffReport, KeySource, Records, RowCounts, SchemaDiff};
use phlo_transform_plan::{Decision, Membership, Plan, PlannedModel};
use phlo_transform_project::Materialization;
use serde::Serialize;

use crate::diff::{diff_model, DiffArgs};
use crate::environments::MAIN;
use crate::target::CommandTarget;

/// One model's data diff, or why there is none.
#[derive(Clone, Debug, Serialize)]
pub struct DataReview {
    pub model: String,
    /// `diffed` or `skipped`.
    pub status: &'static str,
    /// Why the model was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The code of the diagnostic a diff that failed ended with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<DataSummary>,
}

/// What a diff found, without its samples.
#[derive(Clone, Debug, Serialize)]
pub struct DataSummary {
    /// What each side read.
    pub base: String,
    pub candidate: String,
    pub key: Vec<String>,
    pub key_source: KeySource,
    /// `full`, `partition`, `aggregate` or `sampled`.
    pub strategy: &'static str,
    pub strategy_reason: String,
    pub rows: RowCounts,
    /// `null` when the strategy does not match rows (keyless, aggregate).
    pub records: Option<Records>,
    /// Changed values per compared column.
    pub changed_columns: Vec<ChangedColumn>,
    pub schema: SchemaDiff,
    pub identical: bool,
    pub policy_passed: bool,
    /// The `[model."x".diff]` policy violations: `D010 …`.
    pub violations: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChangedColumn {
    pub column: String,
    pub values: u64,
}

impl DataSummary {
    fn new(r: &DiffReport) -> Self {
        DataSummary {
            base: r.base.description.clone(),
            candidate: r.candidate.description.clone(),
            key: r.key.clone(),
            key_source: r.key_source.clone(),
            strategy: r.strategy.as_str(),
            strategy_reason: r.strategy_reason.clone(),
            rows: r.rows.clone(),
            records: r.records.clone(),
            changed_columns: r
                .changed_values
                .iter()
                .map(|(column, n)| ChangedColumn {
                    column: column.clone(),
                    values: n.as_u64().unwrap_or(0),
                })
                .filter(|c| c.values > 0)
                .collect(),
            schema: r.schema.clone(),
            identical: r.identical(),
            policy_passed: r.policy.passed,
            violations: r
                .policy
                .violations
                .iter()
                .map(|d| format!("{} {}", d.code, d.message))
                .collect(),
        }
    }
}

/// The models the review diffs: the materialised models (tables, incremental tables and
/// views: a view's old definition is compared with its new one over the same data) the plan
/// builds because of the change (selected or downstream), and the blocked ones, reported
/// skipped. Ephemeral models have no relation to compare; their readers show their effect.
fn diffed(p: &PlannedModel) -> bool {
    p.materialization != Materialization::Ephemeral
        && matches!(p.membership, Membership::Selected | Membership::Expanded)
        && matches!(p.decision, Decision::Build | Decision::Blocked)
}

/// Diffs the changed table models of `plan`. Without a candidate environment: the model's
/// SQL now (run over the materialised upstream relations) against main's materialisation.
/// With one (`--ref`): main's dataset against the candidate's. A model main never
/// materialised, or that does not compile, is skipped with the reason; so is one whose diff
/// fails (the diagnostic's code and message).
pub async fn data_reviews(
    c: &Compilation,
    target: &CommandTarget<'_>,
    plan: &Plan,
    diff_rows: u64,
) -> Vec<DataReview> {
    let mut out = Vec::new();
    for p in plan.models.iter().filter(|p| diffed(p)) {
        let skipped = |reason: String, code: Option<String>| DataReview {
            model: p.name.clone(),
            status: "skipped",
            reason: Some(reason),
            code,
            summary: None,
        };
        if p.decision == Decision::Blocked {
            let why = p
                .reasons
                .first()
                .map(|r| r.detail.clone())
                .unwrap_or_else(|| "blocked".into());
            out.push(skipped(format!("blocked: {why}"), None));
            continue;
        }
        if p.previous_version.is_none() {
            out.push(skipped(
                "not materialised in main: nothing to compare with".into(),
                None,
            ));
            continue;
        }
        let (from, to) = match target.reference {
            Some(r) => (Some(format!("ref:{MAIN}")), Some(format!("ref:{r}"))),
            None => (None, None),
        };
        let args = DiffArgs {
            model: p.name.clone(),
            from,
            to,
            options: DiffOptions {
                large_table_rows: diff_rows,
                ..DiffOptions::default()
            },
            ..DiffArgs::default()
        };
        // The diff's own warnings (a relation it could not register) are the diff's detail,
        // not the review's: its outcome is what is reported.
        let mut warnings = Vec::new();
        out.push(match diff_model(c, target, args, &mut warnings).await {
            Ok(report) => DataReview {
                model: p.name.clone(),
                status: "diffed",
                reason: None,
                code: None,
                summary: Some(DataSummary::new(&report)),
            },
            Err(d) => skipped(d.message, Some(d.code.to_string())),
        });
    }
    out
}
