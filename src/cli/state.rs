//! `phlo-transform state runs | show <run> | model <model>` (SPEC §77): the state database
//! queried. Each command builds one report struct; `--json` prints it serialised, text mode
//! renders the same struct.

use clap::Subcommand;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics};
use phlo_transform_state::{
    AttemptRecord, MaterializedVersion, ModelRunRecord, NodeRecord, RunRecord, RunSummary,
    StateError, StateStore,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

use super::{open_state_read_only, render, Paths, EXIT_ERRORS, EXIT_OK};

#[derive(Subcommand)]
pub enum StateCommand {
    /// Recent runs, newest first: id, status, command, start and end, node counts.
    Runs {
        /// How many runs to list.
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: i64,
    },
    /// One run's nodes with their status, timings and errors.
    Show {
        /// A run id, or a prefix of one that only one run has.
        run_id: String,
    },
    /// One model's materialised versions (one per environment) and its recent results.
    Model {
        /// The model's name (`assay.results`) or its pinned id.
        model: String,
        /// How many runs of history to show.
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: i64,
    },
}

/// `state runs`.
#[derive(Serialize)]
pub struct RunsReport {
    /// Where the state lives (a path, or a URL without its password).
    pub state: String,
    pub runs: Vec<RunSummary>,
}

/// `state show`.
#[derive(Serialize)]
pub struct RunReport {
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

pub async fn dispatch(paths: &Paths, command: StateCommand, json: bool) -> u8 {
    let store = match open_state_read_only(paths).await {
        Ok(s) => s,
        Err(d) => return fatal(d, json),
    };
    let result = match command {
        StateCommand::Runs { limit } => runs(paths, store.as_ref(), limit.max(1))
            .await
            .map(|r| emit(&r, json, render_runs)),
        StateCommand::Show { run_id } => show(store.as_ref(), &run_id)
            .await
            .map(|r| emit(&r, json, render_run)),
        StateCommand::Model { model, limit } => model_report(store.as_ref(), &model, limit.max(1))
            .await
            .map(|r| emit(&r, json, render_model)),
    };
    match result {
        Ok(()) => EXIT_OK,
        Err(d) => fatal(d, json),
    }
}

fn fatal(d: Diagnostic, json: bool) -> u8 {
    render::diagnostics(&Diagnostics(vec![d]), None, json);
    EXIT_ERRORS
}

fn emit<T: Serialize>(report: &T, json: bool, text: fn(&T) -> String) {
    if json {
        println!(
            "{}",
            serde_json::to_string(report).expect("reports serialise")
        );
    } else {
        print!("{}", text(report));
    }
}

fn unavailable(e: StateError) -> Diagnostic {
    Diagnostic::error(codes::STATE_UNAVAILABLE, e.message).with_help(
        "the state database may be damaged or unreachable; check --state / PHLO_STATE_URL",
    )
}

async fn runs(paths: &Paths, store: &dyn StateStore, limit: i64) -> Result<RunsReport, Diagnostic> {
    Ok(RunsReport {
        state: paths.state.display(),
        runs: store.run_summaries(limit).await.map_err(unavailable)?,
    })
}

/// How many candidates an ambiguous prefix lists.
async fn show(store: &dyn StateStore, prefix: &str) -> Result<RunReport, Diagnostic> {
    let run = phlo_transform_exec::continuation::find_run(store, prefix).await?;
    let nodes = store.run_nodes(&run.run_id).await.map_err(unavailable)?;
    let attempts = store.run_attempts(&run.run_id).await.map_err(unavailable)?;
    let (tests, models) = nodes.into_iter().partition(|n| n.kind == "test");
    Ok(RunReport {
        run,
        models,
        tests,
        attempts,
    })
}

async fn model_report(
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

fn counts(c: &BTreeMap<String, i64>) -> String {
    if c.is_empty() {
        return "-".into();
    }
    c.iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn duration(ms: Option<i64>) -> String {
    match ms {
        None => String::new(),
        Some(ms) if ms < 1000 => format!("{ms}ms"),
        Some(ms) => format!("{:.1}s", ms as f64 / 1000.0),
    }
}

fn short(version: &str) -> &str {
    &version[..12.min(version.len())]
}

fn render_runs(r: &RunsReport) -> String {
    let mut out = String::new();
    if r.runs.is_empty() {
        let _ = writeln!(out, "No runs recorded in {}.", r.state);
        return out;
    }
    let id_width = r.runs.iter().map(|s| s.run.run_id.len()).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "{:<id_width$}  {:<9}  {:<7}  {:<24}  {:<24}  MODELS / TESTS",
        "RUN", "STATUS", "COMMAND", "STARTED", "FINISHED"
    );
    for s in &r.runs {
        let _ = writeln!(
            out,
            "{:<id_width$}  {:<9}  {:<7}  {:<24}  {:<24}  {} / {}",
            s.run.run_id,
            s.run.status,
            s.run.command,
            s.run.started_at,
            s.run.finished_at.as_deref().unwrap_or("-"),
            counts(&s.models),
            counts(&s.tests)
        );
    }
    out
}

/// One line per node, its details in aligned columns (duration, rows, version, start): a
/// node without a row count (a view, a test) shows `-` rather than shifting the rest.
fn node_lines(out: &mut String, title: &str, nodes: &[NodeRecord]) {
    let _ = writeln!(out, "\n{title} ({})", nodes.len());
    let width = nodes.iter().map(|n| n.node.len()).max().unwrap_or(0);
    let details: Vec<[String; 4]> = nodes
        .iter()
        .map(|n| {
            [
                n.duration_ms.map(|d| duration(Some(d))),
                n.rows.map(|rows| format!("{rows} rows")),
                n.version.as_ref().map(|v| format!("version {}", short(v))),
                n.started_at.as_ref().map(|s| format!("started {s}")),
            ]
            .map(|d| d.unwrap_or_else(|| "-".into()))
        })
        .collect();
    let widths: Vec<usize> = (0..4)
        .map(|k| {
            details
                .iter()
                .map(|d| d[k].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (n, detail) in nodes.iter().zip(&details) {
        let columns: Vec<String> = detail
            .iter()
            .zip(&widths)
            .map(|(d, &w)| format!("{d:<w$}"))
            .collect();
        let line = format!(
            "  {:<8} {:<width$}  {}",
            n.status,
            n.node,
            columns.join("  ")
        );
        let _ = writeln!(out, "{}", line.trim_end());
        if let (Some(code), Some(message)) = (&n.error_code, &n.error_message) {
            let _ = writeln!(out, "           error[{code}]: {message}");
        }
    }
}

fn render_run(r: &RunReport) -> String {
    let mut out = String::new();
    let run = &r.run;
    let _ = writeln!(out, "Run:         {}", run.run_id);
    let _ = writeln!(out, "Status:      {}", run.status);
    let _ = writeln!(out, "Command:     {}", run.command);
    let _ = writeln!(out, "Plan:        {}", run.plan_id);
    let _ = writeln!(out, "Environment: {}", run.environment);
    let _ = writeln!(out, "Started:     {}", run.started_at);
    let _ = writeln!(
        out,
        "Finished:    {}",
        run.finished_at.as_deref().unwrap_or("- (not finished)")
    );
    node_lines(&mut out, "Models", &r.models);
    node_lines(&mut out, "Tests", &r.tests);
    out
}

fn render_model(r: &ModelReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Model: {}", r.model);
    let _ = writeln!(out, "\nMaterialised ({})", r.materializations.len());
    if r.materializations.is_empty() {
        let _ = writeln!(out, "  (nothing: no run has materialised it)");
    }
    for m in &r.materializations {
        let _ = writeln!(
            out,
            "  {:<10} version {}  [{}] {}  run {} at {}",
            m.environment,
            short(&m.version),
            m.materialization,
            m.relation,
            m.run_id,
            m.materialized_at
        );
    }
    let _ = writeln!(out, "\nHistory ({}), newest first", r.history.len());
    for h in &r.history {
        let mut detail = vec![duration(h.node.duration_ms)];
        if let Some(rows) = h.node.rows {
            detail.push(format!("{rows} rows"));
        }
        if let Some(v) = &h.node.version {
            detail.push(format!("version {}", short(v)));
        }
        detail.retain(|d| !d.is_empty());
        let _ = writeln!(
            out,
            "  {}  {}  {:<5} {:<8} {}",
            h.run_started_at,
            h.run_id,
            h.command,
            h.node.status,
            detail.join("  ")
        );
        if let (Some(code), Some(message)) = (&h.node.error_code, &h.node.error_message) {
            let _ = writeln!(out, "      error[{code}]: {message}");
        }
    }
    out
}
