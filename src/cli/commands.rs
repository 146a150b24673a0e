//! One function per command. Each builds its report, prints it (text or JSON) and returns
//! the exit code.

use phlo_transform_adapter::{Adapter, Purpose};
use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::{ArtifactDir, Compilation, ModelLookup};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::command::{PlanCommand, PlanRequest};
use phlo_transform_exec::inspect::{ModelInspection, ModelSql, SourceInspection};
use phlo_transform_plan::list::ListReport;
use phlo_transform_plan::{CompileErrorBlocking, SelectorSpec};
use std::collections::BTreeSet;

use super::execute::{CommandLine, Execution, ExecutionArgs};
use super::render::{Output, Report};
use super::{
    compile, compile_refreshed, open_state, open_state_read_only, render, Paths, EXIT_ERRORS,
    EXIT_FAILURES, EXIT_OK, MAIN_ENVIRONMENT,
};

/// P008 for a name that is no model's, with did-you-mean suggestions.
fn unknown_model(c: &Compilation, name: &str) -> Diagnostic {
    let names = c.models.iter().map(|m| m.name.as_str());
    Diagnostic::error(codes::UNKNOWN_MODEL, format!("no model named `{name}`"))
        .with_suggestions(phlo_transform_core::did_you_mean(name, names))
        .with_help("`phlo-transform list` shows every model")
}

/// The model a name given on the command line means: an exact name or URI, or a unique
/// suffix (as selectors read it). P008 with did-you-mean for none, L006 with the candidates
/// for several.
pub(super) fn resolve_model(c: &Compilation, name: &str) -> Result<usize, Diagnostic> {
    match c.lookup_model(name) {
        ModelLookup::Found(i) => Ok(i),
        ModelLookup::Missing => Err(unknown_model(c, name)),
        ModelLookup::Ambiguous(hits) => {
            let candidates: Vec<String> =
                hits.iter().map(|&i| c.models[i].name.to_string()).collect();
            Err(Diagnostic::error(
                codes::AMBIGUOUS_SELECTOR,
                format!("`{name}` is ambiguous: {} models end with it", hits.len()),
            )
            .with_note(format!("candidates: {}", candidates.join(", ")))
            .with_suggestions(candidates)
            .with_help("write more of the name, e.g. one of the candidates"))
        }
    }
}

pub(super) use super::render::{fatal, fatal_all};

/// The workspace's artifact directory (`.phlo/transform/`).
fn artifacts(paths: &Paths) -> ArtifactDir {
    ArtifactDir::new(&paths.artifacts)
}

fn write_artifact(
    paths: &Paths,
    name: &str,
    value: &impl serde::Serialize,
) -> Result<(), Diagnostic> {
    artifacts(paths).write(name, value)
}

/// manifest.json and graph.json, and the lineage documents when `lineage` says so.
fn write_compile_artifacts(
    paths: &Paths,
    c: &Compilation,
    lineage: LineageArtifacts,
) -> Result<(), Diagnostic> {
    phlo_transform_openlineage::write_compile_artifacts(
        &artifacts(paths),
        c,
        &paths.warehouse,
        lineage,
    )
}

/// lineage.json and openlineage.json, unless they are current or `wanted` says not to create
/// them.
pub(super) fn write_lineage_artifacts(
    paths: &Paths,
    c: &Compilation,
    wanted: LineageArtifacts,
) -> Result<(), Diagnostic> {
    phlo_transform_openlineage::write_lineage_artifacts(
        &artifacts(paths),
        c,
        &paths.warehouse,
        wanted,
    )
}

/// Compiles, shows the diagnostics, and returns the compilation (with the output holding
/// its warnings for the report) if it has no errors.
pub(super) fn compile_or_report(
    paths: &Paths,
    json: bool,
) -> Result<(&'static Compilation, Output<'static>), u8> {
    let c = compile(paths).map_err(|d| fatal(d, json))?;
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    if c.has_errors() {
        return Err(compile_failed(c, out));
    }
    Ok((c, out))
}

/// A command a compile error stopped (its diagnostics already given to `out`): `--json`
/// prints the `check` report with them.
fn compile_failed(c: &Compilation, out: Output) -> u8 {
    if out.json() {
        out.report(&c.check_report());
    } else {
        eprintln!(
            "error: compilation failed: {}",
            render::summary_line(&c.counts())
        );
    }
    EXIT_ERRORS
}

pub async fn check(paths: &Paths, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let _ = write_compile_artifacts(paths, c, LineageArtifacts::RefreshExisting);
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    out.report(&c.check_report());
    if c.has_errors() {
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

pub async fn list(paths: &Paths, spec: &SelectorSpec, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let selection = if *spec == SelectorSpec::default() {
        None
    } else {
        let state = if spec.reads_state() {
            let store = match open_state_read_only(paths).await {
                Ok(s) => s,
                Err(d) => return fatal(d, json),
            };
            let binding = match super::bind(paths, c, store.clone()).await {
                Ok(b) => b,
                Err(d) => return fatal(d, json),
            };
            let engine =
                match super::open_bound_engine(paths, c, binding.as_ref(), Purpose::Plan).await {
                    Ok((engine, _)) => engine,
                    Err(d) => return fatal(d, json),
                };
            let viewed = phlo_transform_exec::planning::state_view_in(
                c,
                binding.as_ref(),
                engine.as_ref(),
                store.as_ref(),
            )
            .await;
            match viewed {
                Ok(v) => Some((v, engine)),
                Err(d) => return fatal(d, json),
            }
        } else {
            None
        };
        let changed = || match &state {
            Some((view, engine)) => view.changed(c, engine.as_ref()),
            None => BTreeSet::new(),
        };
        match phlo_transform_plan::select(c, spec, &changed) {
            Ok(s) => Some(s),
            Err(diags) => return fatal_all(diags, json),
        }
    };
    // `list` shows the models; its diagnostics only travel in the JSON envelope.
    let mut out = Output::new(json);
    if json {
        out.diagnostics(c.diagnostics.iter().cloned());
    }
    out.report(&ListReport::new(c, selection));
    if c.has_errors() {
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

pub async fn inspect(paths: &Paths, name: &str, config: bool, sql: bool, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let i = match resolve_model(c, name) {
        Ok(i) => i,
        Err(d) => match SourceInspection::new(c, name) {
            Some(source) => return inspect_source(c, source, json),
            None => return fatal(d, json),
        },
    };
    let m = &c.models[i];
    // Naming needs the adapter; a warehouse that cannot be reached only costs the relation,
    // unless the SQL it would be sent was asked for.
    let store = open_state_read_only(paths).await;
    let binding = match &store {
        Ok(store) => match super::bind(paths, c, store.clone()).await {
            Ok(b) => b,
            Err(d) => return fatal(d, json),
        },
        Err(_) => None,
    };
    let engine = match super::open_bound_engine(paths, c, binding.as_ref(), Purpose::Plan).await {
        Ok((engine, _)) => Some(engine),
        Err(d) if sql => return fatal(d, json),
        Err(_) => None,
    };
    if sql {
        let engine = engine.expect("opened above");
        return print_model_sql(c, i, engine.as_ref(), json);
    }
    // A state that cannot be read shows as nothing recorded.
    let recorded = match &store {
        Ok(store) => phlo_transform_exec::explain::recorded(
            binding.as_ref(),
            MAIN_ENVIRONMENT,
            store.as_ref(),
            &m.id,
        )
        .await
        .ok()
        .flatten(),
        Err(_) => None,
    };
    let adapter = engine
        .as_ref()
        .map(|e| (e.name().to_string(), e.model_relation(m.name.as_str())));
    let report = ModelInspection::new(c, i, adapter, recorded.as_ref(), config);
    // The model's own diagnostics.
    let mut out = Output::new(json).with_workspace(&c.workspace);
    if json {
        out.diagnostics(
            c.diagnostics
                .iter()
                .filter(|d| d.file.as_deref() == Some(m.path.as_str()))
                .cloned(),
        );
    }
    out.report(&report);
    EXIT_OK
}

/// `inspect <source>`: where a source is read from, its state and columns, and the models
/// that read it; then the diagnostics that name it.
fn inspect_source(c: &Compilation, source: SourceInspection, json: bool) -> u8 {
    let named = format!("`{}`", source.name);
    let mut out = Output::new(json).with_workspace(&c.workspace);
    let diags = c
        .diagnostics
        .iter()
        .filter(|d| d.message.contains(&named))
        .cloned();
    out.diagnostics(diags);
    out.report(&source);
    EXIT_OK
}

/// `inspect <model> --sql`: the statements the adapter sends to materialise the model (as for
/// a first build; incremental models show their incremental statements).
fn print_model_sql(c: &Compilation, i: usize, engine: &dyn Adapter, json: bool) -> u8 {
    let m = &c.models[i];
    if m.materialization == phlo_transform_project::Materialization::Ephemeral || m.has_errors {
        let why = if m.has_errors {
            "it has compile errors"
        } else {
            "it is ephemeral: its SQL is inlined into the models that read it"
        };
        return fatal(
            Diagnostic::error(
                codes::UNKNOWN_MODEL,
                format!("`{}` is never sent to the warehouse: {why}", m.name),
            )
            .with_help("`phlo-transform check` lists the errors; inspect a model that reads it"),
            json,
        );
    }
    let statements = phlo_transform_exec::model_job(c, i, engine, false)
        .ok_or_else(|| {
            phlo_transform_adapter::AdapterError::new(
                codes::QUERY_FAILED,
                "the model's executable SQL could not be built",
            )
        })
        .and_then(|job| engine.statements(&job));
    match statements {
        Ok(statements) => {
            Output::new(json).report(&ModelSql {
                name: m.name.as_str(),
                adapter: engine.name().to_string(),
                relation: engine.model_relation(m.name.as_str()).to_string(),
                statements,
            });
            EXIT_OK
        }
        Err(e) => fatal(Diagnostic::error(e.code, e.message), json),
    }
}

pub async fn plan(paths: &Paths, spec: &SelectorSpec, json: bool) -> u8 {
    let c = match compile_refreshed(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    if c.has_errors() {
        return report_schema_impact_of_errors(paths, c, out).await;
    }
    let store = match open_state(paths).await {
        Ok(s) => s,
        Err(d) => return out.fail([d]),
    };
    let binding = match super::bind(paths, c, store.clone()).await {
        Ok(b) => b,
        Err(d) => return out.fail([d]),
    };
    // Planning only asks whether relations exist: nothing needs opening.
    let engine = match super::open_bound_engine(paths, c, binding.as_ref(), Purpose::Plan).await {
        Ok((engine, warnings)) => {
            out.diagnostics(warnings);
            engine
        }
        Err(d) => return out.fail([d]),
    };
    let p = match phlo_transform_exec::planning::make_plan_in(
        c,
        binding.as_ref(),
        engine.as_ref(),
        store.as_ref(),
        spec,
    )
    .await
    {
        Ok(p) => p,
        Err(diags) => return out.fail(diags),
    };
    let stored = store
        .store_plan(
            &p.plan_id,
            &serde_json::to_value(&p).expect("plans serialise"),
        )
        .await;
    if let Err(e) = stored {
        return out.fail([Diagnostic::error(codes::STATE_WRITE_FAILED, e.message)
            .with_help("check that the state database is writable")]);
    }
    let artifacts = write_compile_artifacts(paths, c, LineageArtifacts::RefreshExisting)
        .and_then(|_| write_artifact(paths, "plan.json", &p));
    if let Err(d) = artifacts {
        return out.fail([d]);
    }
    out.report(&p);
    EXIT_OK
}

/// A plan cannot be made over compile errors, but the schema changes against the bound
/// environment's records are still reported (SPEC §51), before anything runs.
async fn report_schema_impact_of_errors(paths: &Paths, c: &Compilation, out: Output<'_>) -> u8 {
    let store = open_state_read_only(paths).await.ok();
    let binding = match &store {
        Some(store) => super::bind(paths, c, store.clone()).await.ok(),
        None => None,
    };
    let blocked = match binding {
        Some(binding) => {
            let store = store.as_deref();
            phlo_transform_exec::planning::blocked_plan(c, binding.as_ref(), store).await
        }
        // A state or an environment that cannot be read shows as nothing recorded.
        None => phlo_transform_exec::planning::blocked_plan(c, None, None).await,
    };
    if out.json() {
        out.report(&blocked);
    } else {
        eprint!("{}", blocked.human());
        eprintln!(
            "error: compilation failed: {}",
            render::summary_line(&c.counts())
        );
    }
    EXIT_ERRORS
}

pub async fn run(
    paths: &Paths,
    exec: Execution,
    spec: &SelectorSpec,
    full_refresh: bool,
    json: bool,
) -> u8 {
    // Compile errors block the models they reach; the rest of the selection still runs, and
    // the exit code is 2 when a selected model was blocked (SPEC §63).
    let c = match compile_refreshed(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    let mut blocked = false;
    if c.has_errors() {
        let judged = match open_state(paths).await {
            Ok(store) => {
                phlo_transform_exec::planning::compile_error_blocking(
                    c,
                    &paths.warehouse,
                    store.as_ref(),
                    spec,
                )
                .await
            }
            Err(d) => Err(vec![d]),
        };
        match judged {
            Ok(CompileErrorBlocking::All) => {
                // Nothing selected can run: refused, as for a workspace that does not compile.
                return compile_failed(c, out);
            }
            Ok(blocking) => blocked = blocking == CompileErrorBlocking::Part,
            Err(diags) => return out.fail(diags),
        }
    }
    let command = PlanCommand::Run { full_refresh };
    let code = execute_plan(paths, c, exec, out, command, spec).await;
    if blocked && code != EXIT_ERRORS {
        if !json {
            eprintln!(
                "error: compile errors blocked part of the selection: {}",
                render::summary_line(&c.counts())
            );
        }
        return EXIT_ERRORS;
    }
    code
}

/// Executes exactly the stored plan `plan_id`, or rejects it as stale when planning again now
/// gives a different plan (model files, configuration, dependencies, source states or recorded
/// versions changed since it was made). The plan is made again with the stored plan's
/// selection unless `spec` gives another.
pub async fn apply(
    paths: &Paths,
    plan_id: &str,
    exec: Execution,
    spec: Option<SelectorSpec>,
    json: bool,
) -> u8 {
    let (c, out) = match compile_or_report(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let stored = match open_state(paths).await {
        Ok(store) => store.load_plan(plan_id).await,
        Err(d) => return out.fail([d]),
    };
    let stored = match stored {
        Ok(body) => phlo_transform_plan::read_stored(plan_id, body),
        Err(e) => Err(Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
            .with_help("check the state database")),
    };
    let stored = match stored {
        Ok(plan) => plan,
        Err(d) => return out.fail([d]),
    };
    let spec = spec.unwrap_or_else(|| stored.selection.spec.clone());
    let command = PlanCommand::Apply {
        stored: Box::new(stored),
    };
    execute_plan(paths, c, exec, out, command, &spec).await
}

pub async fn test(paths: &Paths, spec: &SelectorSpec, json: bool) -> u8 {
    let (c, out) = match compile_or_report(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let exec = Execution::new(ExecutionArgs::default());
    execute_plan(paths, c, exec, out, PlanCommand::Test, spec).await
}

/// `run`, `apply`, `test`: one library call, shown as it goes by [`CommandLine`], then its
/// report.
async fn execute_plan(
    paths: &Paths,
    c: &Compilation,
    exec: Execution,
    out: Output<'_>,
    command: PlanCommand,
    spec: &SelectorSpec,
) -> u8 {
    let store = match open_state(paths).await {
        Ok(s) => s,
        Err(d) => return out.fail([d]),
    };
    let artifacts = artifacts(paths);
    let front = CommandLine::new(paths, c, &exec, command.builds(), out);
    let request = PlanRequest {
        compilation: c,
        target: paths.target(),
        store,
        artifacts: &artifacts,
        command,
        spec,
        options: exec.options(),
    };
    let executed = phlo_transform_exec::command::execute_plan(request, &front).await;
    let mut out = front.into_output();
    let executed = match executed {
        Ok(executed) => executed,
        Err(diags) => return out.fail(diags),
    };
    if let Some(d) = executed.artifacts {
        out.diagnostics([d]);
    }
    // With --events the `run_finished` event already carried the report.
    if !exec.args.events {
        out.report(&executed.report);
    }
    if executed.report.failed() {
        EXIT_FAILURES
    } else {
        EXIT_OK
    }
}

pub fn clean(paths: &Paths, all: bool, json: bool) -> u8 {
    let artifacts = ArtifactDir::FILES
        .iter()
        .map(|name| paths.artifacts.join(name))
        .chain([paths.root.join(phlo_transform_compiler::cache::DIR)]);
    // A PostgreSQL state is shared: `clean` never drops it.
    let sqlite_state = match (all, &paths.state) {
        (true, phlo_transform_state::StateLocation::Sqlite(state)) => Some(state.as_path()),
        _ => None,
    };
    match phlo_transform_exec::clean::clean(&paths.warehouse, artifacts, sqlite_state) {
        Ok(report) => {
            Output::new(json).report(&report);
            EXIT_OK
        }
        Err(d) => fatal(d, json),
    }
}
