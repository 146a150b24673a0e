//! `explain <model>` (SPEC §80): identity, dependencies, recorded state and the build
//! decision with the same structured reasons `plan` gives.

use crate::environments::{Binding, MAIN_ENVIRONMENT};
use crate::target::CommandTarget;
use phlo_transform_adapter::{Adapter, Purpose};
use phlo_transform_compiler::{Compilation, Dependency};
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::schema_change::SchemaChange;
use phlo_transform_plan::{PlannedModel, SelectorSpec};
use phlo_transform_project::Materialization;
use phlo_transform_state::{MaterializedVersion, StateStore};
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Explanation {
    /// `name`, as in every other model report (`inspect`, `list`, `plan`).
    pub name: String,
    pub uri: String,
    pub id: String,
    pub path: String,
    pub materialization: Materialization,
    pub depends_on: Vec<Dependency>,
    pub version: Option<String>,
    pub recorded: Option<MaterializedVersion>,
    pub environment: String,
    /// `None` for an ephemeral model: it is inlined, never planned.
    pub planned: Option<PlannedModel>,
    pub schema_change: Option<SchemaChange>,
}

/// The version of model `model_id` recorded for the environment `binding` binds (its own
/// record, else the one it inherits), or without a binding for `environment`.
pub async fn recorded(
    binding: Option<&Binding>,
    environment: &str,
    store: &dyn StateStore,
    model_id: &str,
) -> Result<Option<MaterializedVersion>, Diagnostic> {
    match binding {
        Some(b) => b.recorded(store, model_id).await,
        None => crate::environments::binding::own_record(store, environment, model_id).await,
    }
}

/// `explain <model>` where `target` runs: the state only read, the environment `--ref` names
/// bound, the engine opened for planning (the relations it cannot read handed to `warnings`
/// as found), then [`explain`] in the bound environment (the main one without a binding).
pub async fn explain_in(
    c: &Compilation,
    i: usize,
    target: &CommandTarget<'_>,
    warnings: &mut dyn FnMut(Vec<Diagnostic>),
) -> Result<Explanation, Vec<Diagnostic>> {
    let store = target.open_state_read_only().await.map_err(|d| vec![d])?;
    let binding = target.bind(c, store.clone()).await.map_err(|d| vec![d])?;
    let (engine, found) = target
        .open_engine(c, binding.as_ref(), Purpose::Plan)
        .await
        .map_err(|d| vec![d])?;
    warnings(found);
    let store = store.as_ref();
    explain(
        c,
        i,
        binding.as_ref(),
        MAIN_ENVIRONMENT,
        engine.as_ref(),
        store,
    )
    .await
}

/// Explains model `i` of `c` (which compiles): its recorded version, and the decision and
/// reasons of planning it with its dependencies (selector `+model`), exactly as
/// `plan +model` would — in `binding`'s environment, or without one in `environment`.
pub async fn explain(
    c: &Compilation,
    i: usize,
    binding: Option<&Binding>,
    environment: &str,
    engine: &dyn Adapter,
    store: &dyn StateStore,
) -> Result<Explanation, Vec<Diagnostic>> {
    let m = &c.models[i];
    let recorded = recorded(binding, environment, store, &m.id)
        .await
        .map_err(|d| vec![d])?;
    let spec = SelectorSpec {
        include: vec![format!("+{}", m.name)],
        ..SelectorSpec::default()
    };
    let plan = match binding {
        Some(b) => crate::planning::make_plan_bound(c, b, engine, store, &spec).await?,
        None => crate::planning::make_plan(c, environment, engine, store, &spec).await?,
    };
    Ok(Explanation {
        name: m.name.to_string(),
        uri: m.name.uri(),
        id: m.id.clone(),
        path: m.path.clone(),
        materialization: m.materialization,
        depends_on: c.dependencies(i),
        version: m.version.as_ref().map(|v| v.version.clone()),
        recorded,
        environment: binding.map_or(environment.to_string(), |b| b.environment.clone()),
        planned: plan
            .models
            .iter()
            .find(|p| p.name == m.name.as_str())
            .cloned(),
        schema_change: plan
            .schema_changes
            .iter()
            .find(|s| s.model == m.name.as_str())
            .cloned(),
    })
}
