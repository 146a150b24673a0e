//! One cycle's run: the watch as the front end of [`crate::command::execute_plan`], turning
//! the run's steps into [`WatchEvent`]s and a stop of the watch into the run's cancellation.

use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_events::{EventSink, RunEvent};
use phlo_transform_plan::{Decision, Plan};
use phlo_transform_state::StateError;
use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use super::event::{WatchEvent, WatchFrontEnd};
use crate::command::{FrontEnd, LocalFuture, PendingArtifacts, PendingRun, PlanFrontEnd};
use crate::{CancelHandle, RunReport};

pub(super) struct CycleFront<'a> {
    /// Shared with the thread writing the compilation's artifacts.
    pub c: Arc<Compilation>,
    pub cycle: u64,
    pub front: &'a dyn WatchFrontEnd,
    /// The watch's stop: cancels the run as Ctrl-C cancels `run`'s.
    pub stop: &'a CancelHandle,
    pub warehouse: &'a Path,
    pub artifacts: &'a Path,
    /// Met while opening the engine; said with the plan.
    pub warnings: RefCell<Vec<Diagnostic>>,
}

impl FrontEnd for CycleFront<'_> {
    fn warnings(&self, diagnostics: Vec<Diagnostic>) {
        self.warnings.borrow_mut().extend(diagnostics);
    }
}

impl PlanFrontEnd for CycleFront<'_> {
    fn start_compile_artifacts(&self, lineage: LineageArtifacts) -> PendingArtifacts {
        PendingArtifacts::write_in_background(
            self.c.clone(),
            self.artifacts,
            self.warehouse,
            lineage,
        )
    }

    fn planned(&self, plan: &Plan) {
        let named = |decision: Decision| -> Vec<&str> {
            let of = |m: &&phlo_transform_plan::PlannedModel| m.decision == decision;
            plan.models
                .iter()
                .filter(of)
                .map(|m| m.name.as_str())
                .collect()
        };
        let (build, blocked) = (named(Decision::Build), named(Decision::Blocked));
        let event = WatchEvent::Planned {
            cycle: self.cycle,
            plan_id: &plan.plan_id,
            current: plan.models.len() - build.len() - blocked.len(),
            build,
            blocked,
        };
        let warnings = self.warnings.take();
        self.front.event(&event, &warnings, Some(&self.c.workspace));
    }

    fn execute<'f>(
        &'f self,
        run: PendingRun<'f>,
    ) -> LocalFuture<'f, Result<RunReport, StateError>> {
        Box::pin(async move {
            let (stop, cancel) = (self.stop.clone(), run.cancel.clone());
            let on_stop = tokio::spawn(async move {
                stop.cancelled().await;
                cancel.cancel();
            });
            let sink = RunSink {
                cycle: self.cycle,
                front: self.front,
            };
            let report = run.with(vec![&sink]).await;
            on_stop.abort();
            report
        })
    }
}

/// The run's events as the watch's: each model's end, then the tests and the run's end.
struct RunSink<'a> {
    cycle: u64,
    front: &'a dyn WatchFrontEnd,
}

impl EventSink for RunSink<'_> {
    fn event(&self, event: &RunEvent<'_>) {
        let cycle = self.cycle;
        match event {
            RunEvent::Model { run_id, model, .. }
                if matches!(
                    model.status.as_str(),
                    "passed" | "failed" | "blocked" | "cancelled"
                ) =>
            {
                let event = WatchEvent::Model {
                    cycle,
                    run_id,
                    model,
                };
                self.front.event(&event, &[], None);
            }
            RunEvent::RunFinished { report } => {
                if !report.tests.is_empty() {
                    let count = |statuses: &[&str]| {
                        let of = |t: &&crate::TestResult| statuses.contains(&t.status.as_str());
                        report.tests.iter().filter(of).count()
                    };
                    let event = WatchEvent::Tests {
                        cycle,
                        run_id: &report.run_id,
                        passed: count(&["passed"]),
                        failed: count(&["failed", "error"]),
                        results: &report.tests,
                    };
                    self.front.event(&event, &[], None);
                }
                let event = WatchEvent::RunFinished {
                    cycle,
                    run_id: &report.run_id,
                    status: &report.status,
                    counts: &report.counts,
                };
                self.front.event(&event, &[], None);
            }
            RunEvent::Model { .. }
            | RunEvent::RunStarted { .. }
            | RunEvent::Retry { .. }
            | RunEvent::Test { .. } => {}
        }
    }
}
