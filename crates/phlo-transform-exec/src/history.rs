//! The state database queried (SPEC §77): `state runs | show <run> | model <model>` as
//! reports.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{
    AttemptRecord, EvidenceRecord, MaterializedVersion, ModelRunRecord, NodeRecord, RunRecord,
    RunSummary, StateError, StateStore,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// `state runs`.
#[derive(Serialize)]
pub struct RunsReport {
    /// Where the state lives (a path, or a URL without its password).
    pub state: String,
    pub runs: Vec<RunSummary>,
}

/// `state show`.
#[derive(Serialize)]
pub struct RunDetail {
    pub run: RunRecord,
    pub models: Vec<NodeRecord>,
    pub tests: Vec<NodeRecord>,
    /// Every attempt of every model, failed ones with their structured failure.
    pub attempts: Vec<AttemptRecord>,
}

/// `state model`.
#[derive(Serialize)]
pub struct ModelReport {
    pub model: String,
    /// The version materialised in each environment.
    pub materializations: Vec<MaterializedVersion>,
    /// The model's result in each recent run, newest first.
    pub history: Vec<ModelRunRecord>,
}

/// What failed in the newest runs: the agents' "which models failed previously?".
#[derive(Serialize)]
pub struct FailuresReport {
    /// The runs read, newest first.
    pub runs: usize,
    /// Failed or errored models and tests, newest run first.
    pub failures: Vec<Failure>,
}

/// One failed node of one run.
#[derive(Serialize)]
pub struct Failure {
    pub run_id: String,
    pub environment: String,
    pub run_started_at: String,
    #[serde(flatten)]
    pub node: NodeRecord,
}

/// `state evidence <ref>`: what commands established about a reference, newest first.
#[derive(Serialize)]
pub struct EvidenceReport {
    #[serde(rename = "ref")]
    pub reference: String,
    pub evidence: Vec<EvidenceRecord>,
}

/// The kinds of evidence the state records: an environment's state (`ref create`, a run), a
/// branch diff (`diff --from <ref> --to <ref>`), a lineage diff (`lineage --diff --ref`).
pub const EVIDENCE_KINDS: [&str; 3] = [
    crate::environments::evidence::ENVIRONMENT,
    crate::environments::branch_diff::BRANCH_DIFF,
    crate::environments::lineage_gate::LINEAGE_DIFF,
];

/// Whether a node's status is a failure (`failed`, or `error` for a test that could not run).
fn failed(status: &str) -> bool {
    matches!(status, "failed" | "error")
}

fn unavailable(e: StateError) -> Diagnostic {
    Diagnostic::error(codes::STATE_UNAVAILABLE, e.message).with_help(
        "the state database may be damaged or unreachable; check --state / PHLO_STATE_URL",
    )
}

/// The newest `limit` runs; `state` says where the state lives.
pub async fn runs(
    store: &dyn StateStore,
    state: String,
    limit: i64,
) -> Result<RunsReport, Diagnostic> {
    Ok(RunsReport {
        state,
        runs: store.run_summaries(limit).await.map_err(unavailable)?,
    })
}

/// One run (an id or a unique prefix of one) with its nodes and attempts.
pub async fn show(store: &dyn StateStore, prefix: &str) -> Result<RunDetail, Diagnostic> {
    let run = crate::continuation::find_run(store, prefix).await?;
    let nodes = store.run_nodes(&run.run_id).await.map_err(unavailable)?;
    let attempts = store.run_attempts(&run.run_id).await.map_err(unavailable)?;
    let (tests, models) = nodes.into_iter().partition(|n| n.kind == "test");
    Ok(RunDetail {
        run,
        models,
        tests,
        attempts,
    })
}

/// One model's materialised versions and its recent results.
pub async fn model(
    store: &dyn StateStore,
    model: &str,
    limit: i64,
) -> Result<ModelReport, Diagnostic> {
    let materializations = store
        .model_materializations(model)
        .await
        .map_err(unavailable)?;
    // History is recorded under the model's name; a pinned id finds it through its record.
    let name = materializations
        .first()
        .map(|m| m.model_name.clone())
        .unwrap_or_else(|| model.to_string());
    let history = store
        .model_history(&name, limit)
        .await
        .map_err(unavailable)?;
    if materializations.is_empty() && history.is_empty() {
        let names = store.model_names().await.map_err(unavailable)?;
        return Err(Diagnostic::error(
            codes::NO_MODEL_STATE,
            format!("the state has no record of a model `{model}`"),
        )
        .with_suggestions(phlo_transform_core::did_you_mean(
            model,
            names.iter().map(String::as_str),
        ))
        .with_help(
            "a model is recorded once a run plans it; `phlo-transform state runs` lists the runs",
        ));
    }
    Ok(ModelReport {
        model: name,
        materializations,
        history,
    })
}

/// The failed models and tests of the newest `limit` runs.
pub async fn failures(store: &dyn StateStore, limit: i64) -> Result<FailuresReport, Diagnostic> {
    let runs = store.run_summaries(limit).await.map_err(unavailable)?;
    let mut failures = Vec::new();
    for summary in &runs {
        let run = &summary.run;
        let nodes = store.run_nodes(&run.run_id).await.map_err(unavailable)?;
        failures.extend(
            nodes
                .into_iter()
                .filter(|n| failed(&n.status))
                .map(|node| Failure {
                    run_id: run.run_id.clone(),
                    environment: run.environment.clone(),
                    run_started_at: run.started_at.clone(),
                    node,
                }),
        );
    }
    Ok(FailuresReport {
        runs: runs.len(),
        failures,
    })
}

/// The newest result of every test over the newest `limit` runs, with its run's id, and how
/// many runs were read.
pub async fn last_test_results(
    store: &dyn StateStore,
    limit: i64,
) -> Result<(usize, BTreeMap<String, (String, NodeRecord)>), Diagnostic> {
    let runs = store.run_summaries(limit).await.map_err(unavailable)?;
    let mut last = BTreeMap::new();
    for summary in &runs {
        let run_id = &summary.run.run_id;
        for t in store.run_nodes(run_id).await.map_err(unavailable)? {
            if t.kind == "test" {
                last.entry(t.node.clone())
                    .or_insert_with(|| (run_id.clone(), t));
            }
        }
    }
    Ok((runs.len(), last))
}

/// The evidence recorded about `reference` (of `kind` only, when given: one of
/// [`EVIDENCE_KINDS`]), newest first.
pub async fn evidence(
    store: &dyn StateStore,
    reference: &str,
    kind: Option<&str>,
) -> Result<EvidenceReport, Diagnostic> {
    let kinds: Vec<&str> = match kind {
        None => EVIDENCE_KINDS.to_vec(),
        Some(k) if EVIDENCE_KINDS.contains(&k) => vec![k],
        Some(k) => {
            return Err(
                Diagnostic::error(codes::INVALID_OPTION, format!("no evidence kind `{k}`"))
                    .with_suggestions(phlo_transform_core::did_you_mean(k, EVIDENCE_KINDS))
                    .with_help(format!("the kinds are {}", EVIDENCE_KINDS.join(", "))),
            )
        }
    };
    let mut evidence = Vec::new();
    for kind in kinds {
        evidence.extend(store.evidence(kind, reference).await.map_err(unavailable)?);
    }
    evidence.sort_by(|a, b| (&b.at, &b.evidence_id).cmp(&(&a.at, &a.evidence_id)));
    Ok(EvidenceReport {
        reference: reference.to_string(),
        evidence,
    })
}
