//! `review` (SPEC §101, §108–109, §119): one deterministic report of a change for a pull
//! request, composed from what the other commands compute —
//!
//! - the plan against main's state of the models the change touches (`--since <base>`'s
//!   `changed+`: each changed model and what it reaches downstream), with the reasons;
//! - the schema changes of that plan, classified SAFE / REVIEW / BREAKING with the readers
//!   they reach (`plan`'s classifier, also over compile errors);
//! - the lineage delta against the base (`lineage --diff`);
//! - a data diff summary per changed table model (`diff <model>`);
//! - every test's latest result from state, and whether it is of the current version;
//! - with a candidate environment (`--ref`), the gates of promoting it into main.
//!
//! Nothing is written: the state is only read and no plan is stored. A model whose file
//! changed only in formatting or comments is reported as `no_semantic_change`.

mod data;
mod report;
mod tests_state;

pub use data::{ChangedColumn, DataReview, DataSummary};
pub use report::{FailOn, Headline, ModelChange, ModelReview, PromotionReview, ReviewReport};
pub use tests_state::TestReview;

use phlo_transform_adapter::Purpose;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::{Membership, Plan, SelectorSpec};
use phlo_transform_project::config::BreakingChanges;
use std::collections::BTreeMap;

use crate::environments::promote::PromoteOptions;
use crate::environments::{MAIN, MAIN_ENVIRONMENT};
use crate::lineage_diff::LineageDiffReport;
use crate::planning::make_plan_reporting_in;
use crate::target::CommandTarget;

/// The diff's default bound: base rows above which a table is sampled, not compared in full.
pub const DEFAULT_DIFF_ROWS: u64 = 1_000_000;

/// One `review`.
pub struct Request<'a> {
    pub compilation: &'a Compilation,
    /// Where it runs; `reference` is the candidate environment (`--ref`), if any.
    pub target: CommandTarget<'a>,
    /// The Git ref the change is compared with (merge-base with HEAD).
    pub base: &'a str,
    /// Base rows above which a data diff samples instead of comparing every row.
    pub diff_rows: u64,
}

/// Reviews the work tree's change against `request.base` (see the module's documentation).
pub async fn review(request: Request<'_>) -> Result<ReviewReport, Vec<Diagnostic>> {
    let c = request.compilation;
    let lineage = crate::lineage_diff::lineage_diff(c, request.target.adapter, request.base)
        .map_err(|d| vec![d])?;
    // The plan and the schema changes are against main, the environment the change goes to.
    let main = CommandTarget {
        reference: None,
        ..request.target
    };
    let store = main.open_state_read_only().await.map_err(|d| vec![d])?;
    let binding = main.bind(c, store.clone()).await.map_err(|d| vec![d])?;
    let (engine, warnings) = main
        .open_engine(c, binding.as_ref(), Purpose::Plan)
        .await
        .map_err(|d| vec![d])?;
    let spec = SelectorSpec {
        include: vec!["changed+".into()],
        since: Some(request.base.to_string()),
        ..SelectorSpec::default()
    };
    let plan =
        make_plan_reporting_in(c, binding.as_ref(), engine.as_ref(), store.as_ref(), &spec).await?;
    let models = model_reviews(c, &plan, &lineage);
    // The candidate is bound before anything reads it: an unknown one stops the review.
    // `--ref main` names no candidate: main is what the change is compared with.
    let candidate = request.target.reference.filter(|r| *r != MAIN);
    let target = CommandTarget {
        reference: candidate,
        ..request.target
    };
    let environment = match candidate {
        None => MAIN_ENVIRONMENT.to_string(),
        Some(_) => target
            .bind(c, store.clone())
            .await
            .map_err(|d| vec![d])?
            .map(|b| b.environment)
            .unwrap_or_else(|| MAIN_ENVIRONMENT.to_string()),
    };
    let data = data::data_reviews(c, &target, &plan, request.diff_rows).await;
    let promotion = match candidate {
        None => None,
        Some(candidate) => Some(promotion(&target, candidate).await?),
    };
    let tests = tests_state::latest_results(c, store.as_ref(), &environment)
        .await
        .map_err(|d| vec![d])?;
    let headline = Headline::new(&models, &plan.schema_changes, &data, &tests);
    Ok(ReviewReport {
        planned_against: MAIN.to_string(),
        candidate: candidate.map(str::to_string),
        compile_errors: c.diagnostics.error_count(),
        headline,
        models,
        files: plan
            .selection
            .git
            .as_ref()
            .map(|g| g.paths.clone())
            .unwrap_or_default(),
        schema_changes: plan.schema_changes,
        lineage,
        data,
        tests,
        promotion,
        warnings,
        breaking_refused: c.workspace.config.schema.breaking_changes == BreakingChanges::Error,
    })
}

/// The change's models: each planned model the change selected or reaches, each model whose
/// file changed without a semantic change (so it was not selected), and each model the base
/// had that the work tree does not (renamed ones too: the lineage delta pairs them).
fn model_reviews(c: &Compilation, plan: &Plan, lineage: &LineageDiffReport) -> Vec<ModelReview> {
    let git = plan.selection.git.as_ref();
    let causes: BTreeMap<&str, &[String]> = git
        .map(|g| {
            g.models
                .iter()
                .map(|m| (m.name.as_str(), m.causes.as_slice()))
                .collect()
        })
        .unwrap_or_default();
    let mut out: Vec<ModelReview> = plan
        .models
        .iter()
        .filter_map(|p| {
            let change = match p.membership {
                Membership::Selected => ModelChange::Changed,
                Membership::Expanded => ModelChange::Downstream,
                Membership::Dependency => return None,
            };
            Some(ModelReview {
                name: p.name.clone(),
                path: p.path.clone(),
                change,
                decision: Some(p.decision),
                materialization: Some(p.materialization),
                sql_change: p.sql_change,
                reasons: p.reasons.clone(),
                causes: causes
                    .get(p.name.as_str())
                    .map(|c| c.to_vec())
                    .unwrap_or_default(),
            })
        })
        .collect();
    // Changed files of models the change does not select or reach (a dependency the plan
    // reads as it is counts too): their change has no meaning to build.
    let reviewed: Vec<String> = out.iter().map(|m| m.name.clone()).collect();
    for path in git.map(|g| g.paths.as_slice()).unwrap_or_default() {
        let Some(m) = c.models.iter().find(|m| m.path == path.path) else {
            continue;
        };
        let name = m.name.as_str();
        if causes.contains_key(name)
            || reviewed.iter().any(|r| r == name)
            || path.status != "modified"
        {
            continue;
        }
        out.push(ModelReview {
            name: name.to_string(),
            path: m.path.clone(),
            change: ModelChange::NoSemanticChange,
            decision: None,
            materialization: Some(m.materialization),
            sql_change: None,
            reasons: Vec::new(),
            causes: vec![format!("{} {}: {}", path.path, path.status, path.effect)],
        });
    }
    let base = &lineage.base.requested_ref;
    let removed = lineage.diff.models.removed.iter().map(|m| {
        let cause = format!("not in the work tree; {base} had it");
        (&m.name, &m.path, cause)
    });
    let renamed = lineage.diff.models.renamed.iter().map(|r| {
        let cause = format!("renamed to {} (by lineage)", r.to);
        (&r.from, &r.from_path, cause)
    });
    for (name, path, cause) in removed.chain(renamed) {
        out.push(ModelReview {
            name: name.clone(),
            path: path.clone().unwrap_or_default(),
            change: ModelChange::Removed,
            decision: None,
            materialization: None,
            sql_change: None,
            reasons: Vec::new(),
            causes: vec![cause],
        });
    }
    out.sort_by(|a, b| (a.change, &a.name).cmp(&(b.change, &b.name)));
    out
}

/// The gates of promoting `candidate` into main, evaluated only (`promote --check`).
async fn promotion(
    target: &CommandTarget<'_>,
    candidate: &str,
) -> Result<PromotionReview, Vec<Diagnostic>> {
    let envs = target.environments().await.map_err(|d| vec![d])?;
    let options = PromoteOptions {
        check: true,
        require_diff: false,
    };
    let p = envs
        .promote(candidate, MAIN, options)
        .await
        .map_err(|d| vec![d])?;
    Ok(PromotionReview {
        passed: p.gates_passed(),
        from: p.from,
        to: p.to,
        gates: p.gates,
    })
}
