//! `explain <model>` (SPEC §80): the per-model companion to `plan` — identity, dependencies,
//! recorded state and the build decision with the same structured reasons `plan` gives. The
//! model is planned with its dependencies (selector `+model`), exactly as `plan +model` would.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::schema_change::SchemaChange;
use phlo_transform_plan::{PlannedModel, SelectorSpec};
use phlo_transform_project::Materialization;
use phlo_transform_state::MaterializedVersion;
use serde::Serialize;

use super::commands::{fatal, fatal_all, resolve_model};
use super::{
    compile, open_state_read_only, render, Paths, EXIT_ERRORS, EXIT_OK, LOCAL_ENVIRONMENT,
};

#[derive(Serialize)]
struct Explanation<'a> {
    /// `name`, as in every other model report (`inspect`, `list`, `plan`).
    name: &'a str,
    uri: String,
    id: &'a str,
    path: &'a str,
    materialization: Materialization,
    depends_on: Vec<phlo_transform_compiler::Dependency>,
    version: Option<&'a str>,
    recorded: Option<MaterializedVersion>,
    environment: String,
    /// `None` for an ephemeral model: it is inlined, never planned.
    planned: Option<PlannedModel>,
    schema_change: Option<SchemaChange>,
}

pub async fn explain(paths: &Paths, name: &str, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let i = match resolve_model(c, name) {
        Ok(i) => i,
        Err(d) => return fatal(d, json),
    };
    if c.has_errors() {
        render::diagnostics(&c.diagnostics, Some(&c.workspace), json);
        return EXIT_ERRORS;
    }
    let m = &c.models[i];
    let store = match open_state_read_only(paths).await {
        Ok(s) => s,
        Err(d) => return fatal(d, json),
    };
    let binding = match super::bind(paths, c, store.clone()).await {
        Ok(b) => b,
        Err(d) => return fatal(d, json),
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
        Err(d) => return fatal(d, json),
    };
    let purpose = phlo_transform_adapter::Purpose::Plan;
    let engine = match super::open_bound_engine(paths, c, binding.as_ref(), purpose).await {
        Ok((engine, _)) => engine,
        Err(d) => return fatal(d, json),
    };
    let spec = SelectorSpec {
        include: vec![format!("+{}", m.name)],
        ..SelectorSpec::default()
    };
    let plan =
        match super::make_plan(c, binding.as_ref(), engine.as_ref(), store.as_ref(), &spec).await {
            Ok(p) => p,
            Err(diags) => return fatal_all(diags, json),
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
        name: m.name.as_str(),
        uri: m.name.uri(),
        id: &m.id,
        path: &m.path,
        materialization: m.materialization,
        depends_on: c.dependencies(i),
        version: m.version.as_ref().map(|v| v.version.as_str()),
        recorded,
        environment: binding
            .as_ref()
            .map_or(LOCAL_ENVIRONMENT.to_string(), |b| b.environment.clone()),
        planned,
        schema_change,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&e).expect("serialises"));
    } else {
        print_text(&e);
    }
    EXIT_OK
}

fn print_text(e: &Explanation) {
    println!("Model:         {}", e.name);
    println!("ID:            {}", e.uri);
    println!("Path:          {}", e.path);
    println!("Materialised:  {}", e.materialization);
    if !e.depends_on.is_empty() {
        println!("Depends on:");
        for d in &e.depends_on {
            let (kind, name) = match d {
                phlo_transform_compiler::Dependency::Model(n) => ("model", n),
                phlo_transform_compiler::Dependency::Source(n) => ("source", n),
            };
            println!("  {name} ({kind})");
        }
    }
    println!("Version:       {}", e.version.unwrap_or("-"));
    match &e.recorded {
        Some(r) => println!(
            "Recorded:      {} in {} (materialised {})",
            r.version, r.environment, r.materialized_at
        ),
        None => println!("Recorded:      nothing in {}", e.environment),
    }
    match &e.planned {
        None => println!("Decision:      none (ephemeral: inlined into the models that read it)"),
        Some(p) => {
            println!("Decision:      {}", p.decision.label().to_lowercase());
            if let Some(change) = p.sql_change {
                println!(
                    "SQL change:    {}",
                    serde_json::to_value(change)
                        .expect("serialises")
                        .as_str()
                        .unwrap_or("?")
                );
            }
            println!("Reasons:");
            for r in &p.reasons {
                println!("  {}", r.detail);
            }
        }
    }
    if let Some(s) = &e.schema_change {
        print!("{}", render::schema_changes(std::slice::from_ref(s)));
    }
}
