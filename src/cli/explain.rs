//! `explain <model>` (SPEC §80): the per-model companion to `plan` — identity, dependencies,
//! recorded state and the build decision with the same structured reasons `plan` gives. The
//! model is planned with its dependencies (selector `+model`), exactly as `plan +model` would.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::explain::Explanation;
use phlo_transform_plan::SelectorSpec;

use super::commands::{fatal, resolve_model};
use super::render::Output;
use super::{compile, open_state_read_only, Paths, EXIT_OK, LOCAL_ENVIRONMENT};

pub async fn explain(paths: &Paths, name: &str, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let i = match resolve_model(c, name) {
        Ok(i) => i,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    if c.has_errors() {
        return out.fail([]);
    }
    let m = &c.models[i];
    let store = match open_state_read_only(paths).await {
        Ok(s) => s,
        Err(d) => return out.fail([d]),
    };
    let binding = match super::bind(paths, c, store.clone()).await {
        Ok(b) => b,
        Err(d) => return out.fail([d]),
    };
    let recorded = match &binding {
        Some(b) => b.recorded(store.as_ref(), &m.id).await,
        None => store
            .materializations(LOCAL_ENVIRONMENT)
            .await
            .map(|mut all| all.remove(&m.id))
            .map_err(|e| {
                Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
                    .with_help("check the state database")
            }),
    };
    let recorded = match recorded {
        Ok(r) => r,
        Err(d) => return out.fail([d]),
    };
    let purpose = phlo_transform_adapter::Purpose::Plan;
    let engine = match super::open_bound_engine(paths, c, binding.as_ref(), purpose).await {
        Ok((engine, warnings)) => {
            out.diagnostics(warnings);
            engine
        }
        Err(d) => return out.fail([d]),
    };
    let spec = SelectorSpec {
        include: vec![format!("+{}", m.name)],
        ..SelectorSpec::default()
    };
    let plan =
        match super::make_plan(c, binding.as_ref(), engine.as_ref(), store.as_ref(), &spec).await {
            Ok(p) => p,
            Err(diags) => return out.fail(diags),
        };
    let planned = plan
        .models
        .iter()
        .find(|p| p.name == m.name.as_str())
        .cloned();
    let schema_change = plan
        .schema_changes
        .iter()
        .find(|s| s.model == m.name.as_str())
        .cloned();
    let e = Explanation {
        name: m.name.to_string(),
        uri: m.name.uri(),
        id: m.id.clone(),
        path: m.path.clone(),
        materialization: m.materialization,
        depends_on: c.dependencies(i),
        version: m.version.as_ref().map(|v| v.version.clone()),
        recorded,
        environment: binding
            .as_ref()
            .map_or(LOCAL_ENVIRONMENT.to_string(), |b| b.environment.clone()),
        planned,
        schema_change,
    };
    out.report(&e);
    EXIT_OK
}
