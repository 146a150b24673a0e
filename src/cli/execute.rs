//! The execution flags of `run`/`apply` (SPEC §79), the continuations `run --resume` and
//! `run --retry-failed` (SPEC §65a), and the command line as the front end of a plan's
//! execution: its event consumers (progress, `--events`, OpenLineage), Ctrl-C, and the
//! diagnostics and plan it shows as the library goes.

use clap::Args;
use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::command::{
    ExecutionOptions, FrontEnd, LocalFuture, PendingArtifacts, PendingRun, PlanFrontEnd,
};
use phlo_transform_exec::{CancelHandle, Continuation, EventSink, RunReport};
use phlo_transform_plan::{Plan, SelectorSpec};
use phlo_transform_state::StateError;
use std::cell::RefCell;
use std::time::Duration;

use super::progress::{JsonLines, Progress};
use super::render::{Output, Report};
use super::Paths;

#[derive(Args, Clone, Debug, Default)]
pub struct ExecutionArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// Print the run's events as JSON Lines on stdout (the last, `run_finished`, carries the
    /// run report) instead of the text report.
    #[arg(long)]
    pub events: bool,
}

/// How a run builds: the flags `run`, `apply` and `watch` share.
#[derive(Args, Clone, Debug, Default)]
pub struct BuildArgs {
    #[arg(long, short = 'j', value_parser = at_least_one, help = jobs_help())]
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
    /// Run every data test, even those cached: passed earlier at their current version (same
    /// test SQL, same versions of the models and sources it reads).
    #[arg(long)]
    pub rerun_tests: bool,
    /// Also write another tool's artifacts after the run: `dbt` writes dbt's
    /// target/manifest.json (schema v12) and target/run_results.json (v6). `[artifacts] dbt =
    /// true` in phlo.toml does it for every run.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub artifacts: Vec<ArtifactFormat>,
}

impl BuildArgs {
    /// The library's options for a run that continues `continuation`.
    pub fn options(&self, continuation: Continuation) -> ExecutionOptions {
        ExecutionOptions {
            jobs: self.jobs,
            retries: self.retries,
            fail_fast: self.fail_fast,
            model_timeout: self.model_timeout,
            rerun_tests: self.rerun_tests,
            continuation,
            dbt_artifacts: self.artifacts.contains(&ArtifactFormat::Dbt),
        }
    }
}

/// `--artifacts`: the formats of other tools a run also writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArtifactFormat {
    /// dbt's manifest.json and run_results.json in target/.
    Dbt,
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

    /// The library's options for this execution.
    pub fn options(&self) -> ExecutionOptions {
        self.args.build.options(self.continuation.clone())
    }
}

/// `-j`'s help: its default is the library's ([`phlo_transform_exec::jobs`]), so the number
/// shown is the constant that decides it.
fn jobs_help() -> String {
    format!(
        "Models built at once (default: [transform.execution] max_concurrency, else {})",
        phlo_transform_exec::DEFAULT_JOBS
    )
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

/// The command line as the front end of `plan`, `run`, `apply` and `test`: diagnostics collected in
/// its output, the plan printed before a build runs, the run's events on stderr (progress) or
/// stdout (`--events`) and to OpenLineage, Ctrl-C cancelling the run.
pub struct CommandLine<'a> {
    paths: &'a Paths,
    /// Leaked by the command ([`super::context::compile`]), so threads may read it.
    c: &'static Compilation,
    /// `--events`.
    events: bool,
    /// Whether the command builds (the plan and the progress are shown only then).
    builds: bool,
    out: RefCell<Output<'a>>,
}

impl<'a> CommandLine<'a> {
    pub fn new(
        paths: &'a Paths,
        c: &'static Compilation,
        exec: &Execution,
        builds: bool,
        out: Output<'a>,
    ) -> Self {
        CommandLine {
            paths,
            c,
            events: exec.args.events,
            builds,
            out: RefCell::new(out),
        }
    }

    /// The command line as the front end of `plan`: it builds nothing, so it only collects
    /// the diagnostics and writes the artifacts.
    pub fn for_plan(paths: &'a Paths, c: &'static Compilation, out: Output<'a>) -> Self {
        CommandLine {
            paths,
            c,
            events: false,
            builds: false,
            out: RefCell::new(out),
        }
    }

    /// The output, with the diagnostics collected so far.
    pub fn into_output(self) -> Output<'a> {
        self.out.into_inner()
    }

    fn json(&self) -> bool {
        self.out.borrow().json()
    }

    async fn run_with_consumers(&self, run: PendingRun<'_>) -> Result<RunReport, StateError> {
        let progress = (!self.json() && !self.events && run.builds)
            .then(|| Progress::new(phlo_transform_exec::models_ending(run.plan)));
        let mut events: Vec<&dyn EventSink> = Vec::new();
        if let Some(p) = &progress {
            events.push(p);
        }
        if self.events {
            events.push(&JsonLines);
        }
        let on_interrupt = tokio::spawn(interrupt(run.cancel.clone(), "run"));
        let executed = run.with(events).await;
        on_interrupt.abort();
        executed
    }
}

impl FrontEnd for CommandLine<'_> {
    fn warnings(&self, diagnostics: Vec<Diagnostic>) {
        self.out.borrow_mut().diagnostics(diagnostics);
    }
}

impl PlanFrontEnd for CommandLine<'_> {
    /// On a thread of its own: the compilation lives as long as the process.
    fn start_compile_artifacts(&self, lineage: LineageArtifacts) -> PendingArtifacts {
        let paths = self.paths;
        PendingArtifacts::write_in_background(self.c, &paths.artifacts, &paths.warehouse, lineage)
    }

    fn interrupted(&self, runs: &[String]) {
        if !self.json() {
            eprintln!(
                "note: marked {} run(s) left running by a writer that is gone as interrupted: {}",
                runs.len(),
                runs.join(", ")
            );
        }
    }

    fn planned(&self, plan: &Plan) {
        if !self.json() && !self.events && self.builds {
            print!("{}", plan.human());
            println!();
        }
    }

    fn execute<'f>(
        &'f self,
        run: PendingRun<'f>,
    ) -> LocalFuture<'f, Result<RunReport, StateError>> {
        Box::pin(self.run_with_consumers(run))
    }
}

/// Ctrl-C or SIGTERM (what `kill`, systemd and container runtimes send): the first cancels
/// `what` cleanly (a run: in-flight models recorded `cancelled`, the run `cancelled`; a diff:
/// its warehouse queries cancelled there); a second one exits at once.
pub(super) async fn interrupt(cancel: CancelHandle, what: &str) {
    let Some(mut signals) = Signals::new() else {
        return;
    };
    signals.next().await;
    eprintln!("interrupted: cancelling the {what} (press Ctrl-C again to exit at once)");
    cancel.cancel();
    signals.next().await;
    std::process::exit(130);
}

/// SIGINT and SIGTERM as one stream.
pub(super) struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub(super) fn new() -> Option<Self> {
        Some(Signals {
            #[cfg(unix)]
            terminate: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .ok()?,
        })
    }

    pub(super) async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = self.terminate.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
