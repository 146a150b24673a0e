//! One function per command. Each builds its report, prints it (text or JSON) and returns
//! the exit code.

use phlo_transform_adapter::Adapter;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics};
use phlo_transform_exec::{execute, RunOptions};
use phlo_transform_plan::{Decision, Plan, PlanInputs};
use phlo_transform_state::StateStore;
use serde_json::json;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::{
    compile, open_engine, open_state, render, Paths, EXIT_ERRORS, EXIT_FAILURES, EXIT_OK,
    LOCAL_ENVIRONMENT,
};

fn fatal(d: Diagnostic, json: bool) -> u8 {
    render::diagnostics(&Diagnostics(vec![d]), None, json);
    EXIT_ERRORS
}

fn write_artifact(
    paths: &Paths,
    name: &str,
    value: &impl serde::Serialize,
) -> Result<(), Diagnostic> {
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(&paths.artifacts)?;
        let path = paths.artifacts.join(name);
        let tmp = path.with_extension("json.tmp");
        // Compact: the manifest of a 10,000-model workspace is tens of megabytes.
        std::fs::write(&tmp, serde_json::to_vec(value).expect("reports serialise"))?;
        std::fs::rename(tmp, path)
    };
    write().map_err(|e| {
        Diagnostic::error(
            codes::STATE_WRITE_FAILED,
            format!("cannot write artifact {name}: {e}"),
        )
        .with_help(format!(
            "check that {} is writable",
            paths.artifacts.display()
        ))
    })
}

fn write_compile_artifacts(paths: &Paths, c: &Compilation) -> Result<(), Diagnostic> {
    write_artifact(paths, "manifest.json", &c.manifest())?;
    write_artifact(paths, "graph.json", &c.graph_document())
}

fn model_rows(c: &Compilation) -> Vec<serde_json::Value> {
    c.models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            json!({
                "name": m.name,
                "id": m.id,
                "uri": m.name.uri(),
                "path": m.path,
                "materialization": m.materialization,
                "depends_on": c.dependencies(i).iter().map(|d| match d {
                    phlo_transform_compiler::Dependency::Model(n) | phlo_transform_compiler::Dependency::Source(n) => n.clone(),
                }).collect::<Vec<_>>(),
                "version": m.version.as_ref().map(|v| &v.version),
            })
        })
        .collect()
}

/// The `check --json` document: models and every diagnostic.
fn print_check_json(c: &Compilation) {
    println!(
        "{}",
        json!({ "models": model_rows(c), "diagnostics": c.diagnostics })
    );
}

/// Compiles, prints diagnostics, and returns the compilation if it has no errors.
fn compile_or_report(paths: &Paths, json: bool) -> Result<&'static Compilation, u8> {
    let c = compile(paths).map_err(|d| fatal(d, json))?;
    if c.has_errors() {
        if json {
            print_check_json(c);
        } else {
            render::diagnostics(&c.diagnostics, Some(&c.workspace), false);
            eprintln!("error: compilation failed: {}", render::summary_line(c));
        }
        return Err(EXIT_ERRORS);
    }
    if !json {
        render::diagnostics(&c.diagnostics, Some(&c.workspace), false);
    }
    Ok(c)
}

pub async fn check(paths: &Paths, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let _ = write_compile_artifacts(paths, c);
    if json {
        print_check_json(c);
    } else {
        render::diagnostics(&c.diagnostics, Some(&c.workspace), false);
        let order: Vec<&str> = c.order.iter().map(|&i| c.models[i].name.as_str()).collect();
        if !c.has_errors() && order.len() <= 20 {
            println!("Build order: {}", order.join(" → "));
        }
        println!("Checked {}", render::summary_line(c));
    }
    if c.has_errors() {
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

pub async fn list(paths: &Paths, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    if json {
        print_check_json(c);
    } else {
        let width = c
            .models
            .iter()
            .map(|m| m.name.as_str().len())
            .max()
            .unwrap_or(0);
        for m in &c.models {
            println!(
                "{:<width$}  {:<11} {}",
                m.name.as_str(),
                m.materialization.as_str(),
                m.path
            );
        }
    }
    if c.has_errors() {
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

pub async fn inspect(paths: &Paths, name: &str, config: bool, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let Some(i) = c.model_index(name) else {
        let names = c.models.iter().map(|m| m.name.as_str());
        let d = Diagnostic::error(codes::UNKNOWN_MODEL, format!("no model named `{name}`"))
            .with_suggestions(phlo_transform_core::did_you_mean(name, names))
            .with_help("`phlo-transform list` shows every model");
        return fatal(d, json);
    };
    let m = &c.models[i];
    let file = &c.workspace.models[i];
    let recorded = match open_state(paths).await {
        Ok(store) => store
            .materializations(LOCAL_ENVIRONMENT)
            .await
            .ok()
            .and_then(|mut all| all.remove(&m.id)),
        Err(_) => None,
    };
    let desired = m.version.as_ref().map(|v| v.version.clone());
    let status = match (&desired, &recorded) {
        (None, _) => "unknown (compile errors)",
        (Some(_), None) => "not materialised",
        (Some(d), Some(r)) if *d == r.version => "current",
        _ => "changed",
    };
    let sql_change = match (&recorded, &m.version) {
        (Some(r), Some(v)) => Some(phlo_transform_compiler::SqlChange::classify(
            r.text_hash.as_deref(),
            &r.sql_hash,
            r.plan_hash.as_deref(),
            v,
        )),
        _ => None,
    };
    let used_by: Vec<&str> = c
        .graph
        .downstream(i)
        .iter()
        .map(|&d| c.models[d].name.as_str())
        .collect();
    let tests: Vec<&str> = c
        .tests
        .iter()
        .filter(|t| t.targets.contains(&i))
        .map(|t| t.name.as_str())
        .collect();
    let diags: Vec<&Diagnostic> = c
        .diagnostics
        .iter()
        .filter(|d| d.file.as_deref() == Some(m.path.as_str()))
        .collect();
    if json {
        println!(
            "{}",
            json!({
                "name": m.name, "id": m.id, "uri": m.name.uri(), "path": m.path,
                "namespace": file.namespace, "materialization": m.materialization,
                "depends_on": c.dependencies(i), "used_by": used_by, "tests": tests,
                "config": file.config, "directives": file.directives, "schema": m.schema,
                "state": { "desired": desired, "current": recorded.as_ref().map(|r| &r.version), "status": status, "sql_change": sql_change,
                           "materialized_at": recorded.as_ref().map(|r| &r.materialized_at) },
                "diagnostics": diags,
            })
        );
        return EXIT_OK;
    }
    println!("Model: {}", m.name);
    println!(
        "ID: {}{}",
        m.name.uri(),
        if m.id != m.name.as_str() {
            format!(" (pinned @id {})", m.id)
        } else {
            String::new()
        }
    );
    println!("Path: {}\n", m.path);
    println!("Materialisation: {}", m.materialization);
    if !file.config.key.value.is_empty() {
        println!("Key: {}", file.config.key.value.join(", "));
    }
    if config {
        println!("\nConfiguration:");
        for (key, value, origin) in file.config.rows() {
            println!("  {key:<13} {value:<24} from {}", origin.describe());
        }
    }
    match &m.schema {
        Some(phlo_transform_compiler::ModelSchema::Known { columns, .. }) => {
            println!("\nColumns:");
            let width = columns.iter().map(|c| c.name.len()).max().unwrap_or(0);
            for col in columns {
                println!(
                    "  {:<width$}  {}{}",
                    col.name,
                    col.data_type,
                    if col.nullable { "" } else { " NOT NULL" }
                );
            }
        }
        Some(phlo_transform_compiler::ModelSchema::Unknown { reason }) => {
            println!("\nColumns: unknown ({reason})")
        }
        None => println!("\nColumns: not inferred (the model or an upstream has errors)"),
    }
    let deps = c.dependencies(i);
    println!("\nDepends on:");
    for d in &deps {
        match d {
            phlo_transform_compiler::Dependency::Model(n) => println!("  {n}"),
            phlo_transform_compiler::Dependency::Source(n) => println!("  {n} (source)"),
        }
    }
    if deps.is_empty() {
        println!("  (nothing)");
    }
    println!("\nUsed by:");
    for u in &used_by {
        println!("  {u}");
    }
    if used_by.is_empty() {
        println!("  (nothing)");
    }
    if !tests.is_empty() {
        println!("\nTests:");
        for t in &tests {
            println!("  {t}");
        }
    }
    let short = |v: Option<&String>| {
        v.map(|s| s[..12.min(s.len())].to_string())
            .unwrap_or_else(|| "-".into())
    };
    println!("\nState:");
    println!("  desired: {}", short(desired.as_ref()));
    println!(
        "  current: {}",
        short(recorded.as_ref().map(|r| &r.version))
    );
    println!("  status: {status}");
    if let Some(change) = sql_change {
        let text = match change {
            phlo_transform_compiler::SqlChange::None => "none",
            phlo_transform_compiler::SqlChange::Text => "text only (formatting or comments)",
            phlo_transform_compiler::SqlChange::Ast => "AST only (same logical plan)",
            phlo_transform_compiler::SqlChange::Semantic => "semantic",
        };
        println!("  SQL change: {text}");
    }
    EXIT_OK
}

/// Plans `c` against the recorded state and the relations the engine sees.
async fn make_plan(
    c: &Compilation,
    engine: &dyn Adapter,
    store: &dyn StateStore,
) -> Result<Plan, Diagnostic> {
    let materialized = store
        .materializations(LOCAL_ENVIRONMENT)
        .await
        .map_err(|e| {
            Diagnostic::error(codes::STATE_UNAVAILABLE, e.message).with_help(
                "the state database may be damaged; `phlo-transform clean --all` resets it",
            )
        })?;
    let mut existing = HashSet::new();
    for m in &c.models {
        if engine
            .relation_exists(m.name.as_str(), m.materialization)
            .await
        {
            existing.insert(m.id.clone());
        }
    }
    let relation_of = |i: usize| engine.relation_name(c.models[i].name.as_str());
    Ok(phlo_transform_plan::plan(
        c,
        &PlanInputs {
            environment: LOCAL_ENVIRONMENT,
            adapter: engine.name(),
            materialized: &materialized,
            existing_relations: &existing,
            relation_of: &relation_of,
        },
    ))
}

pub async fn plan(paths: &Paths, json: bool) -> u8 {
    let c = match compile_or_report(paths, json) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let store = match open_state(paths).await {
        Ok(s) => s,
        Err(d) => return fatal(d, json),
    };
    // Planning only asks whether relations exist: nothing needs opening.
    let engine = phlo_transform_adapter::LocalEngine::unregistered(&paths.warehouse);
    let p = match make_plan(c, &engine, &store).await {
        Ok(p) => p,
        Err(d) => return fatal(d, json),
    };
    let stored = store
        .store_plan(
            &p.plan_id,
            &serde_json::to_value(&p).expect("plans serialise"),
        )
        .await;
    if let Err(e) = stored {
        return fatal(
            Diagnostic::error(codes::STATE_WRITE_FAILED, e.message)
                .with_help("check that the state database is writable"),
            json,
        );
    }
    let artifacts =
        write_compile_artifacts(paths, c).and_then(|_| write_artifact(paths, "plan.json", &p));
    if let Err(d) = artifacts {
        return fatal(d, json);
    }
    if json {
        println!("{}", serde_json::to_string(&p).expect("plans serialise"));
    } else {
        print!("{}", render::plan(&p));
    }
    EXIT_OK
}

pub async fn run(paths: &Paths, jobs: Option<usize>, json: bool) -> u8 {
    let c = match compile_or_report(paths, json) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let jobs = jobs
        .or(c.workspace.config.transform.execution.max_concurrency)
        .unwrap_or(4);
    execute_plan(paths, c, jobs, json, "run", Ok).await
}

/// Executes exactly the stored plan `plan_id`, or rejects it as stale when planning again now
/// gives a different plan (model files, configuration, dependencies, source states or recorded
/// versions changed since it was made).
pub async fn apply(paths: &Paths, plan_id: &str, jobs: Option<usize>, json: bool) -> u8 {
    let c = match compile_or_report(paths, json) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let stored = match open_state(paths).await {
        Ok(store) => store.load_plan(plan_id).await,
        Err(d) => return fatal(d, json),
    };
    let stored: Plan = match stored.map(|p| p.and_then(|v| serde_json::from_value(v).ok())) {
        Ok(Some(p)) => p,
        Ok(None) => {
            return fatal(
                Diagnostic::error(codes::UNKNOWN_PLAN, format!("no stored plan `{plan_id}`"))
                    .with_help("`phlo-transform plan` prints the id of the plan it stores"),
                json,
            )
        }
        Err(e) => {
            return fatal(
                Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
                    .with_help("check the state database"),
                json,
            )
        }
    };
    let jobs = jobs
        .or(c.workspace.config.transform.execution.max_concurrency)
        .unwrap_or(4);
    execute_plan(paths, c, jobs, json, "apply", move |fresh| {
        if fresh.plan_id == stored.plan_id {
            return Ok(fresh);
        }
        let mut changes = Vec::new();
        for m in &fresh.models {
            match stored.models.iter().find(|s| s.name == m.name) {
                None => changes.push(format!("{}: new in the workspace", m.name)),
                Some(s)
                    if (s.decision, &s.version, &s.previous_version)
                        != (m.decision, &m.version, &m.previous_version) =>
                {
                    let short = |v: &Option<String>| {
                        v.as_deref()
                            .map(|v| v[..12.min(v.len())].to_string())
                            .unwrap_or_else(|| "-".into())
                    };
                    changes.push(format!(
                        "{}: {} {} (recorded {}) then, {} {} (recorded {}) now",
                        m.name,
                        s.decision.label(),
                        short(&s.version),
                        short(&s.previous_version),
                        m.decision.label(),
                        short(&m.version),
                        short(&m.previous_version)
                    ))
                }
                Some(_) => {}
            }
        }
        for s in stored
            .models
            .iter()
            .filter(|s| !fresh.models.iter().any(|m| m.name == s.name))
        {
            changes.push(format!("{}: no longer in the workspace", s.name));
        }
        let mut d = Diagnostic::error(
            codes::STALE_PLAN,
            format!(
                "plan `{}` is stale: the workspace or its state changed since it was made",
                stored.plan_id
            ),
        )
        .with_help(format!(
            "review the new plan (`phlo-transform plan`) and apply its id (`{}`)",
            fresh.plan_id
        ));
        for change in changes {
            d = d.with_note(change);
        }
        Err(d)
    })
    .await
}

pub async fn test(paths: &Paths, json: bool) -> u8 {
    let c = match compile_or_report(paths, json) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // Test what exists: nothing is built; models whose relation is missing block their tests.
    execute_plan(
        paths,
        c,
        1,
        json,
        "test",
        |mut p| -> Result<Plan, Diagnostic> {
            for m in &mut p.models {
                if m.decision == Decision::Build {
                    let never = m
                        .reasons
                        .iter()
                        .any(|r| r.kind == phlo_transform_plan::ReasonKind::MissingRelation);
                    m.decision = if never {
                        Decision::Blocked
                    } else {
                        Decision::Skip
                    };
                }
            }
            Ok(p)
        },
    )
    .await
}

async fn execute_plan(
    paths: &Paths,
    c: &Compilation,
    jobs: usize,
    json: bool,
    command: &str,
    adjust: impl FnOnce(Plan) -> Result<Plan, Diagnostic>,
) -> u8 {
    let store = match open_state(paths).await {
        Ok(s) => Arc::new(s),
        Err(d) => return fatal(d, json),
    };
    let (engine, engine_diags) = open_engine(paths, c).await;
    if !json {
        render::diagnostics(&Diagnostics(engine_diags), Some(&c.workspace), false);
    }
    let engine = Arc::new(engine);
    let p = match make_plan(c, engine.as_ref(), store.as_ref())
        .await
        .and_then(adjust)
    {
        Ok(p) => p,
        Err(d) => return fatal(d, json),
    };
    if !json && command != "test" {
        print!("{}", render::plan(&p));
        println!();
    }
    let options = RunOptions {
        jobs,
        command: command.to_string(),
    };
    let report = match execute(c, &p, engine, store, &options).await {
        Ok(r) => r,
        Err(e) => {
            return fatal(
                Diagnostic::error(codes::STATE_WRITE_FAILED, format!("the run stopped: its progress could not be recorded: {}", e.message))
                    .with_help("check that the state database is writable; the run cannot be trusted without its record"),
                json,
            )
        }
    };
    let artifacts = write_compile_artifacts(paths, c)
        .and_then(|_| write_artifact(paths, "plan.json", &p))
        .and_then(|_| write_artifact(paths, "run.json", &report));
    if let Err(d) = artifacts {
        render::diagnostics(&Diagnostics(vec![d]), None, json);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("reports serialise")
        );
    } else {
        print!("{}", render::run(&report));
    }
    if report.failed() {
        EXIT_FAILURES
    } else {
        EXIT_OK
    }
}

pub fn clean(paths: &Paths, all: bool, json: bool) -> u8 {
    let mut removed = Vec::new();
    let mut targets = vec![paths.warehouse.clone()];
    for name in ["manifest.json", "graph.json", "plan.json", "run.json"] {
        targets.push(paths.artifacts.join(name));
    }
    if all {
        for suffix in ["", "-wal", "-shm"] {
            targets.push(Path::new(&format!("{}{suffix}", paths.state.display())).to_path_buf());
        }
    }
    for t in targets {
        let result = if t.is_dir() {
            std::fs::remove_dir_all(&t)
        } else if t.exists() {
            std::fs::remove_file(&t)
        } else {
            continue;
        };
        match result {
            Ok(()) => removed.push(t.display().to_string()),
            Err(e) => {
                return fatal(
                    Diagnostic::error(
                        codes::STATE_WRITE_FAILED,
                        format!("cannot remove {}: {e}", t.display()),
                    )
                    .with_help("check permissions"),
                    json,
                )
            }
        }
    }
    if json {
        println!("{}", json!({ "removed": removed }));
    } else if removed.is_empty() {
        println!("Nothing to remove.");
    } else {
        for r in &removed {
            println!("removed {r}");
        }
    }
    EXIT_OK
}
