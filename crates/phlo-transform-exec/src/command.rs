//! A command that executes a plan (`run`, `apply`, `test`) from the writer lease to the
//! artifacts: the one call every front end (the command line, a daemon) makes. The front end
//! sees the steps through [`PlanFrontEnd`] and renders what comes back.

use phlo_transform_adapter::Purpose;
use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::{ArtifactDir, Compilation};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_openlineage::{RecordedModel, RunEmitter, RunLineage};
use phlo_transform_plan::{Plan, SelectorSpec};
use phlo_transform_project::Materialization;
use phlo_transform_state::{MaterializedVersion, StateError, StateStore};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::environments::{Binding, MAIN_ENVIRONMENT};
use crate::target::CommandTarget;
use crate::{
    execute, CancelHandle, Continuation, EventSink, RetryPolicy, RunOptions, RunReport,
    WriterLease, TEST_JOBS,
};

/// How long a run waits for another writer of the same environment to finish.
const WRITER_WAIT: Duration = Duration::from_secs(5);

/// Which command executes the plan, and how it turns the fresh plan into what it executes.
pub enum PlanCommand {
    /// `run`: the plan as made, every selected incremental model rebuilt with `full_refresh`.
    Run { full_refresh: bool },
    /// `apply`: exactly the stored plan, refused as stale when the fresh plan differs.
    Apply { stored: Box<Plan> },
    /// `test`: nothing built; models whose relation is missing block their tests.
    Test,
}

impl PlanCommand {
    /// `apply <plan_id>`: the plan stored under `plan_id` ([`phlo_transform_plan::load_stored`]:
    /// a coded error for no such plan, one of another format and one that cannot be read),
    /// and the selection it was made with, which `apply` plans again unless given another.
    pub async fn apply(
        store: &dyn StateStore,
        plan_id: &str,
    ) -> Result<(PlanCommand, SelectorSpec), Diagnostic> {
        let stored = phlo_transform_plan::load_stored(store, plan_id).await?;
        let spec = stored.selection.spec.clone();
        Ok((
            PlanCommand::Apply {
                stored: Box::new(stored),
            },
            spec,
        ))
    }

    /// The name runs are recorded under.
    pub fn name(&self) -> &'static str {
        match self {
            PlanCommand::Run { .. } => "run",
            PlanCommand::Apply { .. } => "apply",
            PlanCommand::Test => "test",
        }
    }

    /// Whether the command builds models (`test` only tests what exists).
    pub fn builds(&self) -> bool {
        !matches!(self, PlanCommand::Test)
    }

    fn rewrite(&self, fresh: Plan) -> Result<Plan, Diagnostic> {
        match self {
            PlanCommand::Run { full_refresh: true } => {
                Ok(phlo_transform_plan::with_full_refresh(fresh))
            }
            PlanCommand::Run {
                full_refresh: false,
            } => Ok(fresh),
            PlanCommand::Apply { stored } => match phlo_transform_plan::staleness(stored, &fresh) {
                None => Ok(fresh),
                Some(stale) => Err(stale),
            },
            PlanCommand::Test => Ok(phlo_transform_plan::for_tests(fresh)),
        }
    }

    /// A run emits the lineage documents (SPEC §71); `test` only keeps existing ones current.
    fn lineage(&self) -> LineageArtifacts {
        if self.builds() {
            LineageArtifacts::Wanted
        } else {
            LineageArtifacts::RefreshExisting
        }
    }
}

/// How the run executes (SPEC §79, §65a).
#[derive(Clone, Debug, Default)]
pub struct ExecutionOptions {
    /// Models built at once; `None`: [`crate::jobs`]'s default. `test` always uses
    /// [`TEST_JOBS`].
    pub jobs: Option<usize>,
    /// Extra attempts for transient failures.
    pub retries: u32,
    pub fail_fast: bool,
    pub model_timeout: Option<Duration>,
    pub rerun_tests: bool,
    pub continuation: Continuation,
    /// `--artifacts dbt`: also write dbt's `manifest.json` and `run_results.json`
    /// ([`crate::dbt_artifacts`]); `[artifacts] dbt = true` does it for every run.
    pub dbt_artifacts: bool,
}

/// One command that executes a plan.
pub struct PlanRequest<'a> {
    pub compilation: &'a Compilation,
    pub target: CommandTarget<'a>,
    pub store: Arc<dyn StateStore>,
    pub artifacts: &'a ArtifactDir,
    pub command: PlanCommand,
    pub spec: &'a SelectorSpec,
    pub options: ExecutionOptions,
}

/// A future a front end returns from [`PlanFrontEnd::execute`].
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// What every command that plans (`plan`, and the commands that execute a plan) needs from
/// its front end.
pub trait FrontEnd {
    /// Problems that leave the engine usable (a relation it cannot read), as found.
    fn warnings(&self, diagnostics: Vec<Diagnostic>);
}

/// The compilation's artifacts being written while the run executes
/// ([`PlanFrontEnd::start_compile_artifacts`]).
pub struct PendingArtifacts(Box<dyn FnOnce() -> Result<(), Diagnostic>>);

impl PendingArtifacts {
    /// Writes `c`'s compile artifacts into `artifacts` (the lineage documents as `lineage`
    /// says) on a thread of its own. `c` is whatever keeps the compilation alive for that
    /// thread: the command line's leaked `&'static`, the daemon's `Arc`.
    pub fn write_in_background<C>(
        c: C,
        artifacts: &Path,
        warehouse: &Path,
        lineage: LineageArtifacts,
    ) -> PendingArtifacts
    where
        C: std::ops::Deref<Target = Compilation> + Send + 'static,
    {
        let (artifacts, warehouse) = (artifacts.to_path_buf(), warehouse.to_path_buf());
        let write = std::thread::spawn(move || {
            phlo_transform_openlineage::write_compile_artifacts(
                &ArtifactDir::new(&artifacts),
                &c,
                &warehouse,
                lineage,
            )
        });
        PendingArtifacts(Box::new(move || {
            write.join().expect("the artifact thread does not panic")
        }))
    }

    /// Waits for the write to end.
    pub fn written(self) -> Result<(), Diagnostic> {
        (self.0)()
    }
}

/// What a front end sees of the steps of a plan's execution, and what it adds around it.
pub trait PlanFrontEnd: FrontEnd {
    /// Starts writing the compilation's artifacts (manifest, graph, and the lineage documents
    /// as `lineage` says: `phlo_transform_openlineage::write_compile_artifacts`) alongside the
    /// run: they depend on the compilation only, and at 1,000 models the lineage documents
    /// alone (30 MB of JSON) took about half a second after the run. A hook of the front end
    /// because the writing thread needs a compilation that outlives it, which only the front
    /// end can promise (the command line's lives as long as the process).
    fn start_compile_artifacts(&self, lineage: LineageArtifacts) -> PendingArtifacts;
    /// Runs a writer that is gone left `running`, marked interrupted once the lease is held.
    fn interrupted(&self, _runs: &[String]) {}
    /// The plan as the command will execute it, before anything runs.
    fn planned(&self, _plan: &Plan) {}
    /// Executes `run` with the front end's event consumers ([`PendingRun::with`]) and
    /// whatever surrounds them (cancelling on a signal, transports started and drained).
    fn execute<'a>(&'a self, run: PendingRun<'a>)
        -> LocalFuture<'a, Result<RunReport, StateError>>;
}

/// A run made and ready: the front end starts it with its event consumers.
pub struct PendingRun<'a> {
    pub compilation: &'a Compilation,
    pub plan: &'a Plan,
    /// The command's recorded name (`run`, `apply`, `test`).
    pub command: &'static str,
    /// Whether the command builds models.
    pub builds: bool,
    /// Cancels the run cleanly (in-flight models recorded `cancelled`).
    pub cancel: CancelHandle,
    /// The state the run is recorded in.
    pub store: Arc<dyn StateStore>,
    /// The embedded engine's warehouse root (OpenLineage names datasets under it).
    warehouse: &'a Path,
    engine: Arc<dyn phlo_transform_adapter::Adapter>,
    jobs: usize,
    options: &'a ExecutionOptions,
}

impl PendingRun<'_> {
    /// The models the main environment has recorded, compared with the workspace by `@id` to
    /// announce renames (OpenLineage). Without a readable state there is nothing to compare
    /// with: no renames, and no error, since the run itself reports an unusable state.
    async fn recorded_in_main(&self) -> Vec<RecordedModel> {
        let recorded = self.store.materializations(MAIN_ENVIRONMENT).await;
        recorded
            .map(|all| all.into_values().map(recorded_model).collect())
            .unwrap_or_default()
    }

    /// Executes the run, every event handed to `events` and, for a command that builds, to
    /// OpenLineage when a transport is configured (its queues drained before this returns).
    pub async fn with(self, events: Vec<&dyn EventSink>) -> Result<RunReport, StateError> {
        let lineage = match self.builds {
            true => RunLineage::start(self.compilation, self.warehouse),
            false => None,
        };
        if let Some(l) = &lineage {
            l.announce_renames(self.compilation, &self.recorded_in_main().await);
        }
        let lineage_sink = lineage
            .as_ref()
            .map(|l| RunEmitter::new(self.compilation, &l.config, &l.emitter, self.command));
        let mut events: Vec<&dyn EventSink> = events;
        if let Some(sink) = &lineage_sink {
            events.push(sink);
        }
        let options = RunOptions {
            jobs: self.jobs,
            command: self.command.to_string(),
            retry: RetryPolicy::new(self.options.retries),
            fail_fast: self.options.fail_fast,
            model_timeout: self.options.model_timeout,
            cancel: self.cancel,
            events,
            continuation: self.options.continuation.clone(),
            rerun_tests: self.options.rerun_tests,
        };
        let executed = execute(
            self.compilation,
            self.plan,
            self.engine,
            self.store,
            &options,
        )
        .await;
        drop(options);
        drop(lineage_sink);
        if let Some(l) = lineage {
            l.emitter.finish().await;
        }
        executed
    }
}

fn recorded_model(m: MaterializedVersion) -> RecordedModel {
    RecordedModel {
        materialization: Materialization::parse(&m.materialization)
            .unwrap_or(Materialization::Table),
        id: m.model_id,
        name: m.model_name,
    }
}

/// What an executed command ends with.
pub struct Executed {
    pub report: RunReport,
    /// The artifacts could not be written: reported, but the run stands.
    pub artifacts: Option<Diagnostic>,
}

/// Executes the plan of `request`: the environment's writer lease, the binding read again
/// under it, the engine, the plan and the command's rewrite of it, the run, the run's writes
/// committed to the environment, the artifacts. `Err` carries the diagnostics that stopped
/// it.
pub async fn execute_plan(
    request: PlanRequest<'_>,
    front: &dyn PlanFrontEnd,
) -> Result<Executed, Vec<Diagnostic>> {
    let c = request.compilation;
    let store = request.store.clone();
    let binding = request
        .target
        .bind(c, store.clone())
        .await
        .map_err(|d| vec![d])?;
    let environment = binding
        .as_ref()
        .map_or(MAIN_ENVIRONMENT, |b| b.environment.as_str());
    // One writer per environment, from before planning until the run is recorded.
    let lease = WriterLease::acquire(store.clone(), environment, WRITER_WAIT)
        .await
        .map_err(|d| vec![d])?;
    if !lease.interrupted.is_empty() {
        front.interrupted(&lease.interrupted);
    }
    // The lease is held: the environment's pointers are read again, now that no other writer
    // can move them.
    let executed = match request.target.bind(c, store.clone()).await {
        Ok(binding) => execute_leased(&request, binding.as_ref(), front).await,
        Err(d) => Err(vec![d]),
    };
    lease.release().await;
    executed
}

async fn execute_leased(
    request: &PlanRequest<'_>,
    binding: Option<&Binding>,
    front: &dyn PlanFrontEnd,
) -> Result<Executed, Vec<Diagnostic>> {
    let c = request.compilation;
    let store = &request.store;
    let jobs = if request.command.builds() {
        crate::jobs(
            request.options.jobs,
            c.workspace.config.transform.execution.max_concurrency,
        )
    } else {
        TEST_JOBS
    };
    let (engine, warnings) = request
        .target
        .open_engine(c, binding, Purpose::Run { jobs })
        .await
        .map_err(|d| vec![d])?;
    front.warnings(warnings);
    let plan =
        crate::planning::make_plan_in(c, binding, engine.as_ref(), store.as_ref(), request.spec)
            .await
            .and_then(|p| request.command.rewrite(p).map_err(|d| vec![d]))?;
    front.planned(&plan);
    // The engine's names of the relations, asked before the run takes the engine.
    let dbt = (request.options.dbt_artifacts || c.workspace.config.artifacts.dbt)
        .then(|| crate::dbt_artifacts::Relations::of(c, engine.as_ref()));
    let run = PendingRun {
        compilation: c,
        plan: &plan,
        command: request.command.name(),
        builds: request.command.builds(),
        cancel: CancelHandle::default(),
        engine,
        store: store.clone(),
        warehouse: request.target.warehouse,
        jobs,
        options: &request.options,
    };
    let artifacts = front.start_compile_artifacts(request.command.lineage());
    let report = front.execute(run).await;
    // Waited for on every path: the process must not exit in the middle of the write.
    let artifacts = artifacts.written();
    let report = report.map_err(|e| {
        vec![Diagnostic::error(
            codes::STATE_WRITE_FAILED,
            format!("the run stopped: its progress could not be recorded: {}", e.message),
        )
        .with_help("check that the state database is writable; the run cannot be trusted without its record")]
    })?;
    // The run's writes become the environment's pointers, and the run is bound to them.
    if let Some(b) = binding {
        b.commit_run(store, &report, c, request.artifacts.path())
            .await
            .map_err(|d| vec![d])?;
    }
    let artifacts = artifacts
        .and_then(|_| request.artifacts.write("plan.json", &plan))
        .and_then(|_| request.artifacts.write("run.json", &report))
        .and_then(|_| match &dbt {
            Some(relations) => crate::dbt_artifacts::write(
                request.target.root,
                c,
                relations,
                &report,
                request.command.name(),
            ),
            None => Ok(()),
        })
        .err();
    Ok(Executed { report, artifacts })
}
