//! The execution flags of `run`/`apply` (SPEC §79), the continuations `run --resume` and
//! `run --retry-failed` (SPEC §65a), and running a plan with its event consumers (progress,
//! `--events`, OpenLineage) and Ctrl-C.

use clap::Args;
use phlo_transform_adapter::LocalEngine;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::{
    execute, CancelHandle, Continuation, EventSink, RetryPolicy, RunOptions, RunReport,
};
use phlo_transform_plan::{Decision, Plan, SelectorSpec};
use phlo_transform_state::{StateError, StateStore};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use super::progress::{JsonLines, Progress};
use super::Paths;

#[derive(Args, Clone, Debug, Default)]
pub struct ExecutionArgs {
    /// Models built at once (default: [transform.execution] max_concurrency, else 4).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Extra attempts for failures the engine marks transient, with exponential backoff
    /// (1 s, 2 s, 4 s, … at most 30 s). SQL errors, timeouts and test failures are never
    /// retried.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub retries: u32,
    /// Stop at the first failure that will not be retried: block its dependents, cancel
    /// everything not started and abort what is running.
    #[arg(long)]
    pub fail_fast: bool,
    /// The longest one attempt of one model may run (`90s`, `30m`, `1h 30m`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub model_timeout: Option<Duration>,
    /// Print the run's events as JSON Lines on stdout (the last, `run_finished`, carries the
    /// run report) instead of the text report.
    #[arg(long)]
    pub events: bool,
    /// Run every data test, even those cached: passed earlier at their current version (same
    /// test SQL, same versions of the models and sources it reads).
    #[arg(long)]
    pub rerun_tests: bool,
}

/// How one command executes its plan.
pub struct Execution {
    pub args: ExecutionArgs,
    pub continuation: Continuation,
}

impl Execution {
    pub fn new(args: ExecutionArgs) -> Self {
        Execution {
            args,
            continuation: Continuation::Fresh,
        }
    }

    fn jobs(&self, c: &Compilation) -> usize {
        self.args
            .jobs
            .or(c.workspace.config.transform.execution.max_concurrency)
            .unwrap_or(4)
    }
}

fn unavailable(e: StateError) -> Diagnostic {
    Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
        .with_help("check --state / PHLO_STATE_URL")
}

/// The selection and execution of `run --resume <run>` (`resume`) or `run --retry-failed
/// <run>`; an unknown, ambiguous or unsuitable run is reported and its exit code returned.
pub async fn continuation(
    paths: &Paths,
    args: ExecutionArgs,
    run: &str,
    resume: bool,
    json: bool,
) -> Result<(SelectorSpec, Execution), u8> {
    let store = super::open_state(paths)
        .await
        .map_err(|d| super::commands::fatal(d, json))?;
    let found = if resume {
        self::resume(store.as_ref(), run).await
    } else {
        retry_failed(store.as_ref(), run).await
    };
    let (spec, continuation) = found.map_err(|d| super::commands::fatal(d, json))?;
    Ok((spec, Execution { args, continuation }))
}

/// `run --resume <run>`: the interrupted run and the selection it was planned with. Only a
/// run still `running` (its process died) or `cancelled` can be resumed.
async fn resume(
    store: &dyn StateStore,
    prefix: &str,
) -> Result<(SelectorSpec, Continuation), Diagnostic> {
    let run = super::state::find_run(store, prefix).await?;
    match run.status.as_str() {
        "running" | "cancelled" => {}
        finished => {
            let help = if finished == "failed" {
                format!(
                    "a failed run is continued by a new one: `phlo-transform run --retry-failed {}`",
                    run.run_id
                )
            } else {
                "a passed run has nothing left to do".to_string()
            };
            return Err(Diagnostic::error(
                codes::RUN_NOT_CONTINUABLE,
                format!("run `{}` finished ({finished}): only an interrupted run (running or cancelled) can be resumed", run.run_id),
            )
            .with_help(help));
        }
    }
    let plan: Option<Plan> = store
        .load_plan(&run.plan_id)
        .await
        .map_err(unavailable)?
        .and_then(|v| serde_json::from_value(v).ok());
    let Some(plan) = plan else {
        return Err(Diagnostic::error(
            codes::UNKNOWN_PLAN,
            format!("run `{}` has no stored plan `{}`", run.run_id, run.plan_id),
        )
        .with_help("start a new run instead"));
    };
    Ok((plan.selection.spec, Continuation::Resume(run)))
}

/// `run --retry-failed <run>`: a selection of the finished run's failed, blocked and cancelled
/// models and the models of its tests that did not pass (their tests re-verify); the planner
/// adds the dependencies they still need.
async fn retry_failed(
    store: &dyn StateStore,
    prefix: &str,
) -> Result<(SelectorSpec, Continuation), Diagnostic> {
    let run = super::state::find_run(store, prefix).await?;
    if run.status == "running" {
        return Err(Diagnostic::error(
            codes::RUN_NOT_CONTINUABLE,
            format!("run `{}` has not finished", run.run_id),
        )
        .with_help(format!(
            "an interrupted run is continued under its own id: `phlo-transform run --resume {}`",
            run.run_id
        )));
    }
    let plan: Option<Plan> = store
        .load_plan(&run.plan_id)
        .await
        .map_err(unavailable)?
        .and_then(|v| serde_json::from_value(v).ok());
    let nodes = store.run_nodes(&run.run_id).await.map_err(unavailable)?;
    let unfinished = |s: &str| matches!(s, "failed" | "blocked" | "cancelled" | "error");
    let mut include = BTreeSet::new();
    for n in nodes.iter().filter(|n| unfinished(&n.status)) {
        if n.kind == "model" {
            include.insert(n.node.clone());
        } else if let Some(test) = plan
            .as_ref()
            .and_then(|p| p.tests.iter().find(|t| t.name == n.node))
        {
            include.extend(test.targets.iter().cloned());
        }
    }
    if include.is_empty() {
        return Err(Diagnostic::error(
            codes::RUN_NOT_CONTINUABLE,
            format!(
                "run `{}` has no failed, blocked or cancelled work",
                run.run_id
            ),
        )
        .with_help("nothing to retry; `phlo-transform run` plans what changed since"));
    }
    let spec = SelectorSpec {
        include: include.into_iter().collect(),
        ..SelectorSpec::default()
    };
    Ok((spec, Continuation::RetryFailed(run.run_id)))
}

/// Executes `plan` with the run's event consumers: the progress display (text mode),
/// `--events` JSON Lines, OpenLineage; Ctrl-C cancels the run (a second one exits at once).
#[allow(clippy::too_many_arguments)]
pub async fn run_plan(
    paths: &Paths,
    c: &Compilation,
    plan: &Plan,
    engine: Arc<LocalEngine>,
    store: Arc<dyn StateStore>,
    command: &str,
    exec: &Execution,
    json: bool,
) -> Result<RunReport, StateError> {
    // OpenLineage only for the commands that build; `test` builds nothing.
    let lineage = match command {
        "run" | "apply" => super::openlineage::RunLineage::start(paths, c, store.as_ref()).await,
        _ => None,
    };
    let lineage_sink = lineage
        .as_ref()
        .map(|l| phlo_transform_openlineage::RunEmitter::new(c, &l.config, &l.emitter, command));
    let building = plan
        .models
        .iter()
        .filter(|m| m.decision == Decision::Build)
        .count();
    let progress =
        (!json && !exec.args.events && command != "test").then(|| Progress::new(building));
    let mut events: Vec<&dyn EventSink> = Vec::new();
    if let Some(p) = &progress {
        events.push(p);
    }
    if exec.args.events {
        events.push(&JsonLines);
    }
    if let Some(l) = &lineage_sink {
        events.push(l);
    }
    let cancel = CancelHandle::default();
    let on_interrupt = tokio::spawn(interrupt(cancel.clone()));
    let options = RunOptions {
        jobs: exec.jobs(c),
        command: command.to_string(),
        retry: RetryPolicy::new(exec.args.retries),
        fail_fast: exec.args.fail_fast,
        model_timeout: exec.args.model_timeout,
        cancel,
        events,
        continuation: exec.continuation.clone(),
        rerun_tests: exec.args.rerun_tests,
    };
    let executed = execute(c, plan, engine, store, &options).await;
    on_interrupt.abort();
    drop(options);
    drop(lineage_sink);
    if let Some(l) = lineage {
        l.emitter.finish().await;
    }
    executed
}

/// Ctrl-C: the first cancels the run cleanly (in-flight models recorded `cancelled`, the run
/// `cancelled`); a second one exits at once.
async fn interrupt(cancel: CancelHandle) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    eprintln!("interrupted: cancelling the run (press Ctrl-C again to exit at once)");
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        std::process::exit(130);
    }
}
