//! `plan` (SPEC §36–40, §51) from the compilation to the stored plan: the one call every front
//! end makes. Over compile errors no plan is made, but the schema changes against the bound
//! environment's records are still reported; otherwise the environment is bound, its state
//! and relations read, the selection planned, the plan stored under its id (what `apply`
//! loads) and written to the artifacts.

use phlo_transform_adapter::Purpose;
use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::{ArtifactDir, Compilation};
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::{BlockedPlan, Plan, SelectorSpec};
use phlo_transform_state::StateStore;
use std::sync::Arc;

use crate::command::FrontEnd;
use crate::planning::{blocked_plan, make_plan_in};
use crate::target::CommandTarget;

/// One `plan`.
pub struct Request<'a> {
    pub compilation: &'a Compilation,
    pub target: CommandTarget<'a>,
    pub artifacts: &'a ArtifactDir,
    pub spec: &'a SelectorSpec,
}

/// What `plan` ends with.
pub enum Planned<'c> {
    /// The plan; `plan` stored it under its id and wrote it to the artifacts ([`preview`]
    /// does neither).
    Plan(Box<Plan>),
    /// The compilation has errors: no plan, and nothing stored. Every model's row and the
    /// schema changes against the recorded columns; the command fails.
    Blocked(BlockedPlan<'c>),
}

/// The report itself: a plan, or the blocked plan.
impl serde::Serialize for Planned<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Planned::Plan(p) => p.serialize(s),
            Planned::Blocked(b) => b.serialize(s),
        }
    }
}

/// Plans `request` (see the module's documentation). `Err` carries the diagnostics that
/// stopped it; warnings found on the way went to `front` as found.
pub async fn plan<'c>(
    request: Request<'c>,
    front: &dyn FrontEnd,
) -> Result<Planned<'c>, Vec<Diagnostic>> {
    let c = request.compilation;
    let target = &request.target;
    if c.has_errors() {
        return Ok(Planned::Blocked(blocked(c, target).await));
    }
    let store = target.open_state().await.map_err(|d| vec![d])?;
    let (p, warnings) = plan_in(c, target, store.clone(), request.spec).await?;
    front.warnings(warnings);
    phlo_transform_plan::store_plan(store.as_ref(), &p)
        .await
        .map_err(|d| vec![d])?;
    phlo_transform_openlineage::write_compile_artifacts(
        request.artifacts,
        c,
        target.warehouse,
        LineageArtifacts::RefreshExisting,
    )
    .and_then(|_| request.artifacts.write("plan.json", &p))
    .map_err(|d| vec![d])?;
    Ok(Planned::Plan(Box::new(p)))
}

/// What `plan` would plan now, as a preview (the daemon's `GET /v1/plan`, the language
/// server's plan command): the state is only read and the plan is neither stored nor written
/// to the artifacts. The engine's warnings come back beside it.
pub async fn preview<'c>(
    c: &'c Compilation,
    target: &CommandTarget<'_>,
    spec: &SelectorSpec,
) -> Result<(Planned<'c>, Vec<Diagnostic>), Vec<Diagnostic>> {
    if c.has_errors() {
        return Ok((Planned::Blocked(blocked(c, target).await), Vec::new()));
    }
    let store = target.open_state_read_only().await.map_err(|d| vec![d])?;
    let (p, warnings) = plan_in(c, target, store, spec).await?;
    Ok((Planned::Plan(Box::new(p)), warnings))
}

/// The plan of `spec` against `store` in the environment `target` binds, with the engine's
/// warnings.
async fn plan_in(
    c: &Compilation,
    target: &CommandTarget<'_>,
    store: Arc<dyn StateStore>,
    spec: &SelectorSpec,
) -> Result<(Plan, Vec<Diagnostic>), Vec<Diagnostic>> {
    let binding = target.bind(c, store.clone()).await.map_err(|d| vec![d])?;
    // Planning only asks whether relations exist: nothing needs opening.
    let (engine, warnings) = target
        .open_engine(c, binding.as_ref(), Purpose::Plan)
        .await
        .map_err(|d| vec![d])?;
    let p = make_plan_in(c, binding.as_ref(), engine.as_ref(), store.as_ref(), spec).await?;
    Ok((p, warnings))
}

/// [`preview`] of model `model` alone, as the document `plan -s <model> --json` prints
/// (the language server's plan command).
pub async fn preview_model(
    c: &Compilation,
    target: &CommandTarget<'_>,
    model: &str,
) -> Result<serde_json::Value, Vec<Diagnostic>> {
    let spec = SelectorSpec {
        include: vec![model.to_string()],
        ..SelectorSpec::default()
    };
    let (planned, mut warnings) = preview(c, target, &spec).await?;
    warnings.extend(c.diagnostics.iter().cloned());
    Ok(serde_json::to_value(phlo_transform_core::Envelope {
        report: &planned,
        diagnostics: &warnings,
    })
    .expect("reports serialise"))
}

/// The blocked plan of `c` against the environment `target` binds (`--ref` on `--adapter`'s
/// target; main's records on a target without environments). The state is only read
/// (nothing is created for a workspace that does not compile); a state or an environment
/// that cannot be read or bound shows as nothing recorded — never as main's records, which
/// are not what `--ref` asked about — since the compile errors are the news.
async fn blocked<'c>(c: &'c Compilation, target: &CommandTarget<'_>) -> BlockedPlan<'c> {
    let Ok(store) = target.open_state_read_only().await else {
        return blocked_plan(c, None, None).await;
    };
    match target.bind(c, store.clone()).await {
        Ok(binding) => blocked_plan(c, binding.as_ref(), Some(store.as_ref())).await,
        Err(_) => blocked_plan(c, None, None).await,
    }
}
