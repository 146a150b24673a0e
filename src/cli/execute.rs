//! The execution flags of `run`/`apply` (SPEC §79), the continuations `run --resume` and
//! `run --retry-failed` (SPEC §65a), and running a plan with its event consumers (progress,
//! `--events`, OpenLineage) and Ctrl-C.

use clap::Args;
use phlo_transform_adapter::Adapter;
use phlo_transform_compiler::Compilation;
use phlo_transform_exec::{
    execute, CancelHandle, Continuation, EventSink, RetryPolicy, RunOptions, RunReport,
};
use phlo_transform_plan::{Plan, SelectorSpec};
use phlo_transform_state::{StateError, StateStore};
use std::sync::Arc;
use std::time::Duration;

use super::progress::{JsonLines, Progress};
use super::Paths;

#[derive(Args, Clone, Debug, Default)]
pub struct ExecutionArgs {
    /// Models built at once (default: [transform.execution] max_concurrency, else 4).
    #[arg(long, short = 'j', value_parser = at_least_one)]
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

    pub fn jobs(&self, c: &Compilation) -> usize {
        phlo_transform_exec::jobs(
            self.args.jobs,
            c.workspace.config.transform.execution.max_concurrency,
        )
    }
}

/// `-j`: a count of models built at once; 0 would build nothing and wait forever.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
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
        .map_err(|d| super::render::fatal(d, json))?;
    let found = if resume {
        phlo_transform_exec::continuation::resume(store.as_ref(), run).await
    } else {
        phlo_transform_exec::continuation::retry_failed(store.as_ref(), run).await
    };
    let (spec, continuation) = found.map_err(|d| super::render::fatal(d, json))?;
    Ok((spec, Execution { args, continuation }))
}

/// Executes `plan` with the run's event consumers: the progress display (text mode),
/// `--events` JSON Lines, OpenLineage; Ctrl-C cancels the run (a second one exits at once).
#[allow(clippy::too_many_arguments)]
pub async fn run_plan(
    paths: &Paths,
    c: &Compilation,
    plan: &Plan,
    engine: Arc<dyn Adapter>,
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
    let progress = (!json && !exec.args.events && command != "test")
        .then(|| Progress::new(phlo_transform_exec::models_ending(plan)));
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

/// Ctrl-C or SIGTERM (what `kill`, systemd and container runtimes send): the first cancels
/// the run cleanly (in-flight models recorded `cancelled`, the run `cancelled`); a second one
/// exits at once.
async fn interrupt(cancel: CancelHandle) {
    let Some(mut signals) = Signals::new() else {
        return;
    };
    signals.next().await;
    eprintln!("interrupted: cancelling the run (press Ctrl-C again to exit at once)");
    cancel.cancel();
    signals.next().await;
    std::process::exit(130);
}

/// SIGINT and SIGTERM as one stream.
struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Option<Self> {
        Some(Signals {
            #[cfg(unix)]
            terminate: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .ok()?,
        })
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = self.terminate.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
