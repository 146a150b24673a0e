//! The [`Worker`]: one thread that executes the queued operations one after the other, each
//! through the library call the command line makes (`exec::command::execute_plan` for run,
//! test, resume and retry; `LiveWorkspace::reload` for reload), with the daemon as the
//! plan's front end: progress from the run's events, cancellation through the run's
//! `CancelHandle`, the result the command's `--json` prints.

use super::operation::{now, Kind, Operation, Status, Submission};
use super::registry::Operations;
use crate::api_error::ErrorBody;
use crate::context::Context;
use crate::document::{envelope, Nothing};
use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::{ArtifactDir, Compilation};
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::command::{
    execute_plan, ExecutionOptions, FrontEnd, LocalFuture, PendingArtifacts, PendingRun,
    PlanCommand, PlanFrontEnd, PlanRequest,
};
use phlo_transform_exec::environments::promote::PromoteOptions;
use phlo_transform_exec::{continuation, planning, Continuation, EventSink, RunEvent, RunReport};
use phlo_transform_plan::CompileErrorBlocking;
use phlo_transform_plan::Plan;
use phlo_transform_state::StateError;
use serde_json::Value;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub struct Worker;

impl Worker {
    /// Executes the operations whose ids arrive on `queue` until it closes.
    pub fn spawn(
        cx: Arc<Context>,
        operations: Arc<Operations>,
        queue: Receiver<String>,
    ) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("phlo-daemon-operations".into())
            .spawn(move || {
                for id in queue {
                    execute_one(&cx, &operations, &id);
                }
            })
    }
}

fn execute_one(cx: &Context, operations: &Operations, id: &str) {
    let Ok(op) = operations.get(id) else {
        return;
    };
    if op.cancel_requested {
        operations.update(id, |o| o.finish(Status::Cancelled, None, None));
        return;
    }
    if op.status != Status::Queued {
        return;
    }
    operations.update(id, |o| {
        o.status = Status::Running;
        o.started_at = Some(now());
    });
    let (status, result, error) = match op.submission.kind {
        Kind::Reload => reload(cx),
        Kind::Promote => promote(cx, &op.submission),
        _ => match cx.runtime.block_on(execute_run(cx, operations, &op)) {
            Ok((status, report)) => (status, Some(report), None),
            Err(diagnostics) => {
                let error = diagnostics
                    .iter()
                    .find(|d| d.is_error())
                    .or(diagnostics.first())
                    .map(ErrorBody::of);
                let report = envelope(&Nothing {}, &diagnostics);
                (Status::Failed, Some(report), error)
            }
        },
    };
    operations.update(id, |o| o.finish(status, result, error));
}

fn reload(cx: &Context) -> (Status, Option<Value>, Option<ErrorBody>) {
    let published = cx.live.reload();
    let report = envelope(
        &published.compilation.check_report(),
        &published.diagnostics,
    );
    match &published.fatal {
        None => (Status::Succeeded, Some(report), None),
        Some(d) => (Status::Failed, Some(report), Some(ErrorBody::of(d))),
    }
}

/// `promote <candidate> --to <to>` as the command line runs it: succeeded when published
/// (or, with `check`, when every gate passed), failed with PROMOTION_BLOCKED when a gate did
/// not; the result is `promote --json`'s document either way.
fn promote(cx: &Context, sub: &Submission) -> (Status, Option<Value>, Option<ErrorBody>) {
    let candidate = sub.candidate.as_deref().unwrap_or_default();
    let to = sub
        .to
        .as_deref()
        .unwrap_or(phlo_transform_exec::environments::MAIN);
    let options = PromoteOptions {
        check: sub.check,
        require_diff: sub.require_diff,
    };
    let target = cx.target(None);
    let promoted = cx.runtime.block_on(async {
        let environments = target.environments().await?;
        environments.promote(candidate, to, options).await
    });
    match promoted {
        Ok(p) => match p.blocked() {
            None => (Status::Succeeded, Some(envelope(&p, &[])), None),
            Some(blocked) => {
                let error = ErrorBody::of(&blocked);
                (Status::Failed, Some(envelope(&p, &[blocked])), Some(error))
            }
        },
        Err(d) => (
            Status::Failed,
            Some(envelope(&Nothing {}, std::slice::from_ref(&d))),
            Some(ErrorBody::of(&d)),
        ),
    }
}

/// `run`, `test`, `run --resume`, `run --retry-failed`: compiled afresh with the warehouse's
/// relations read again, as the command line's `run` does.
async fn execute_run(
    cx: &Context,
    operations: &Operations,
    op: &Operation,
) -> Result<(Status, Value), Vec<Diagnostic>> {
    let sub = &op.submission;
    let c = phlo_transform_exec::compile_for_target(
        &cx.files.root,
        cx.adapter.as_deref(),
        SchemaRead::Refresh,
        Some(&cx.files.state),
    )
    .map_err(|d| vec![d])?;
    let c = Arc::new(c);
    let target = cx.target(sub.environment.as_deref());
    let store = target.open_state().await.map_err(|d| vec![d])?;
    let continued = match (sub.kind, &sub.run) {
        (Kind::Resume, Some(run)) => Some(continuation::resume(store.as_ref(), run).await),
        (Kind::RetryFailed, Some(run)) => {
            Some(continuation::retry_failed(store.as_ref(), run).await)
        }
        _ => None,
    };
    let (spec, continuation) = match continued {
        None => (sub.selection(), Continuation::Fresh),
        Some(found) => found.map_err(|d| vec![d])?,
    };
    // As `run`: compile errors block the models they reach; nothing left to run is refused.
    if planning::compile_error_blocking(&c, &target, &spec).await? == CompileErrorBlocking::All {
        return Err(c.diagnostics.iter().cloned().collect());
    }
    let command = match sub.kind {
        Kind::Test => PlanCommand::Test,
        _ => PlanCommand::Run {
            full_refresh: sub.full_refresh,
        },
    };
    let artifacts = ArtifactDir::new(&cx.files.artifacts);
    let front = Daemon {
        c: c.clone(),
        cx,
        operations,
        id: &op.id,
        warnings: Mutex::default(),
    };
    let request = PlanRequest {
        compilation: &c,
        target,
        store,
        artifacts: &artifacts,
        command,
        spec: &spec,
        options: ExecutionOptions {
            jobs: sub.jobs,
            continuation,
            ..ExecutionOptions::default()
        },
    };
    let executed = execute_plan(request, &front).await?;
    let mut diagnostics: Vec<Diagnostic> = c.diagnostics.iter().cloned().collect();
    diagnostics.extend(
        front
            .warnings
            .into_inner()
            .unwrap_or_else(|e| e.into_inner()),
    );
    diagnostics.extend(executed.artifacts);
    let status = match executed.report.status.as_str() {
        "passed" => Status::Succeeded,
        "cancelled" => Status::Cancelled,
        _ => Status::Failed,
    };
    Ok((status, envelope(&executed.report, &diagnostics)))
}

/// The daemon as the front end of one operation's plan.
struct Daemon<'a> {
    /// Shared with the thread writing the compilation's artifacts.
    c: Arc<Compilation>,
    cx: &'a Context,
    operations: &'a Operations,
    id: &'a str,
    warnings: Mutex<Vec<Diagnostic>>,
}

impl FrontEnd for Daemon<'_> {
    fn warnings(&self, diagnostics: Vec<Diagnostic>) {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(diagnostics);
    }
}

impl PlanFrontEnd for Daemon<'_> {
    fn start_compile_artifacts(&self, lineage: LineageArtifacts) -> PendingArtifacts {
        let files = &self.cx.files;
        PendingArtifacts::write_in_background(
            self.c.clone(),
            &files.artifacts,
            &files.warehouse,
            lineage,
        )
    }

    fn planned(&self, plan: &Plan) {
        let models = phlo_transform_exec::models_ending(plan);
        self.operations
            .update(self.id, |o| o.progress.models_total = models);
    }

    fn execute<'f>(
        &'f self,
        run: PendingRun<'f>,
    ) -> LocalFuture<'f, Result<RunReport, StateError>> {
        Box::pin(async move {
            self.operations.running_with(self.id, run.cancel.clone());
            let progress = ProgressSink {
                operations: self.operations,
                id: self.id,
            };
            let report = run.with(vec![&progress]).await;
            self.operations.done_running(self.id);
            report
        })
    }
}

/// Keeps the operation's `run_id` and `progress` current from the run's events: a model is
/// done when it ends built, failed, blocked or cancelled, out of the models the plan builds
/// (as the command line's progress counts).
struct ProgressSink<'a> {
    operations: &'a Operations,
    id: &'a str,
}

impl EventSink for ProgressSink<'_> {
    fn event(&self, event: &RunEvent<'_>) {
        match event {
            RunEvent::RunStarted { run_id, tests, .. } => {
                self.operations.update(self.id, |o| {
                    o.run_id = Some(run_id.to_string());
                    o.progress.tests_total = *tests;
                });
            }
            RunEvent::Model { model, .. } => {
                if matches!(
                    model.status.as_str(),
                    "passed" | "failed" | "blocked" | "cancelled"
                ) {
                    self.operations
                        .update(self.id, |o| o.progress.models_done += 1);
                }
            }
            RunEvent::Test { .. } => {
                self.operations
                    .update(self.id, |o| o.progress.tests_done += 1);
            }
            RunEvent::Retry { .. } | RunEvent::RunFinished { .. } => {}
        }
    }
}
