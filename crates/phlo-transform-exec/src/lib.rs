//! Executes a plan (SPEC §62–65a): models in dependency order with bounded concurrency,
//! independent branches continuing after a failure, dependents of a failure `blocked`,
//! retryable failures retried, then the tests. The run row and the plan are written before
//! scheduling and every node record and attempt as it changes; a state-store write failure
//! ends the run with an error. `run --resume` continues an interrupted run under its own id.

mod cancel;
pub mod clean;
pub mod command;
mod compile;
pub mod continuation;
pub mod dbt_artifacts;
pub mod diff;
pub mod docs;
pub mod environments;
pub mod explain;
mod failure;
pub mod gates;
pub mod history;
pub mod inspect;
pub mod inspect_command;
mod jobs;
pub mod lease;
pub mod lineage_diff;
pub mod plan_command;
pub mod planning;
mod recorder;
pub mod review;
mod scheduler;
mod source_failure;
pub mod target;
mod tests_run;
pub mod watch;

pub use cancel::CancelHandle;
pub use compile::{compile_for_target, compile_for_target_with, recompile_edited, SourceStates};
pub use failure::RetryPolicy;
pub use jobs::model_job;
pub use lease::WriterLease;
pub use phlo_transform_events::{
    Category, ErrorInfo, EventSink, ModelResult, RunEvent, RunReport, StatusCounts, TestResult,
};

use failure::now;
use phlo_transform_adapter::Adapter;
use phlo_transform_compiler::Compilation;
use phlo_transform_plan::{Decision, Plan, PlannedModel};
use phlo_transform_state::{NodeRecord, RunRecord, StateError, StateStore};
use recorder::{EndedAttempt, Recorder};
use scheduler::{Limits, NodeState, Scheduler, Stop};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Models built at once when neither the command line nor `[transform.execution]
/// max_concurrency` says.
pub const DEFAULT_JOBS: usize = 4;

/// Models at once in a `test` run: it builds nothing and tests one model at a time.
pub const TEST_JOBS: usize = 1;

/// Models built at once: `requested` (`-j`), else the workspace's `max_concurrency`, else
/// [`DEFAULT_JOBS`]; never 0, which would build nothing and wait forever.
pub fn jobs(requested: Option<usize>, configured: Option<usize>) -> usize {
    requested.or(configured).unwrap_or(DEFAULT_JOBS).max(1)
}

pub struct RunOptions<'a> {
    /// Models executed at once (at least 1).
    pub jobs: usize,
    pub command: String,
    pub retry: RetryPolicy,
    /// Stop at the first unrecoverable failure: block its dependents, cancel everything else
    /// not started, abort what is in flight.
    pub fail_fast: bool,
    /// The longest one attempt of one model may take.
    pub model_timeout: Option<Duration>,
    pub cancel: CancelHandle,
    /// Consumers of the run's events (progress display, `--events`, OpenLineage).
    pub events: Vec<&'a dyn EventSink>,
    pub continuation: Continuation,
    /// Run every planned test, even those that passed at their current version.
    pub rerun_tests: bool,
}

impl RunOptions<'_> {
    /// `jobs` at once, no retries, no timeout, not fail-fast, a fresh run.
    pub fn new(command: &str, jobs: usize) -> Self {
        RunOptions {
            jobs,
            command: command.to_string(),
            retry: RetryPolicy::new(0),
            fail_fast: false,
            model_timeout: None,
            cancel: CancelHandle::default(),
            events: Vec::new(),
            continuation: Continuation::Fresh,
            rerun_tests: false,
        }
    }
}

/// Where a run comes from (SPEC §65a).
#[derive(Clone, Debug, Default)]
pub enum Continuation {
    #[default]
    Fresh,
    /// `run --retry-failed`: a new run over the failed part of this finished run.
    RetryFailed(String),
    /// `run --resume`: this interrupted run again, under its own id and generation.
    Resume(RunRecord),
}

/// How many models a run of `plan` ends with a result of their own (passed, failed, blocked
/// or cancelled): the ones it builds, and the ones the plan blocks, which the run reports
/// blocked without building them. Skipped and cached models end nothing. What a progress
/// counter counts up to.
pub fn models_ending(plan: &Plan) -> usize {
    plan.models
        .iter()
        .filter(|m| matches!(m.decision, Decision::Build | Decision::Blocked))
        .count()
}

/// Runs `plan` through `adapter`, recording everything in `state`.
pub async fn execute(
    c: &Compilation,
    plan: &Plan,
    adapter: Arc<dyn Adapter>,
    state: Arc<dyn StateStore>,
    options: &RunOptions<'_>,
) -> Result<RunReport, StateError> {
    state
        .store_plan(&plan.plan_id, &serde_json_value(plan))
        .await?;
    let (run_id, generation, started_at, continued_from) = match &options.continuation {
        Continuation::Resume(run) => {
            state.reopen_run(&run.run_id, &plan.plan_id).await?;
            (
                run.run_id.clone(),
                run.generation,
                run.started_at.clone(),
                run.continued_from.clone(),
            )
        }
        other => {
            let run = RunRecord {
                run_id: uuid::Uuid::now_v7().simple().to_string(),
                plan_id: plan.plan_id.clone(),
                environment: plan.environment.clone(),
                command: options.command.clone(),
                status: "running".into(),
                generation: chrono::Utc::now().timestamp_micros(),
                started_at: now(),
                finished_at: None,
                continued_from: match other {
                    Continuation::RetryFailed(from) => Some(from.clone()),
                    _ => None,
                },
            };
            state.begin_run(&run).await?;
            (
                run.run_id,
                run.generation,
                run.started_at,
                run.continued_from,
            )
        }
    };
    let recorder = Recorder {
        run_id: run_id.clone(),
        state: state.as_ref(),
        events: &options.events,
    };
    recorder.emit(&RunEvent::RunStarted {
        run_id: &run_id,
        plan_id: &plan.plan_id,
        command: &options.command,
        at: &started_at,
        models: plan.models.len(),
        tests: plan.tests.len(),
        resumed: matches!(options.continuation, Continuation::Resume(_)),
        continued_from: continued_from.as_deref(),
    });
    let prior = match &options.continuation {
        Continuation::Resume(_) => interrupted(&recorder, &plan.environment).await?,
        _ => Prior::default(),
    };
    let initial = initial_states(plan, &prior);
    // One state write for every model's starting record. A reused pass keeps its record,
    // unless the process died before writing it.
    let unrecorded: Vec<ModelResult> = initial
        .iter()
        .map(|(_, r, _)| r)
        .filter(|r| {
            let recorded = prior
                .nodes
                .get(&r.name)
                .is_some_and(|n| n.status == "passed");
            !(r.resumed && recorded)
        })
        .cloned()
        .collect();
    recorder.models(&unrecorded).await?;
    let mut scheduler = Scheduler::new(
        c,
        plan,
        adapter.clone(),
        &recorder,
        generation,
        Limits {
            jobs: options.jobs,
            retry: options.retry,
            fail_fast: options.fail_fast,
            model_timeout: options.model_timeout,
            cancel: options.cancel.clone(),
        },
        initial,
    );
    let stop = scheduler.run().await?;
    let states: HashMap<&str, NodeState> = plan
        .models
        .iter()
        .zip(&scheduler.states)
        .map(|(m, s)| (m.name.as_str(), *s))
        .collect();
    // `test` always runs its tests; `run` and `apply` reuse earlier passes.
    let passed_before = if options.rerun_tests || options.command == "test" {
        tests_run::Passes::new()
    } else {
        tests_run::earlier_passes(state.as_ref(), &plan.environment, &run_id).await?
    };
    let tests = tests_run::run_tests(
        tests_run::TestRun {
            c,
            plan,
            adapter: &adapter,
            states: &states,
            passed_before: &passed_before,
            stopped: stop.is_some(),
            cancel: &options.cancel,
            jobs: options.jobs,
        },
        &recorder,
    )
    .await?;
    let models = std::mem::take(&mut scheduler.results);
    let interrupted = stop == Some(Stop::Interrupted) || options.cancel.is_cancelled();
    let failed = models
        .iter()
        .any(|m| !matches!(m.status.as_str(), "passed" | "skipped" | "cached"))
        || tests.iter().any(|t| !t.ok());
    let status = match (interrupted, failed) {
        (true, _) => "cancelled",
        (false, true) => "failed",
        (false, false) => "passed",
    };
    let finished_at = now();
    state.finish_run(&run_id, status, &finished_at).await?;
    let report = RunReport::new(
        run_id,
        plan,
        status,
        continued_from,
        started_at,
        finished_at,
        models,
        tests,
    );
    recorder.emit(&RunEvent::RunFinished { report: &report });
    Ok(report)
}

/// What an interrupted run left: its node records, the versions it materialised (by model
/// name) and the next attempt number of each node.
#[derive(Default)]
struct Prior {
    nodes: HashMap<String, NodeRecord>,
    materialized: HashMap<String, String>,
    next_attempt: HashMap<String, u32>,
}

/// Reads what the interrupted run recorded, closing the attempts its process never finished
/// (recorded `cancelled`), so that every attempt ever started has an end on record.
async fn interrupted(recorder: &Recorder<'_>, environment: &str) -> Result<Prior, StateError> {
    let state = recorder.state;
    let nodes = state.run_nodes(&recorder.run_id).await?;
    let attempts = state.run_attempts(&recorder.run_id).await?;
    let mut prior = Prior {
        materialized: state
            .materializations(environment)
            .await?
            .into_values()
            .filter(|m| m.run_id == recorder.run_id)
            .map(|m| (m.model_name, m.version))
            .collect(),
        ..Prior::default()
    };
    for a in attempts.iter().filter(|a| a.kind == "model") {
        let next = prior.next_attempt.entry(a.node.clone()).or_insert(1);
        *next = (*next).max(a.attempt as u32 + 1);
    }
    for n in nodes.into_iter().filter(|n| n.kind == "model") {
        let recorded = attempts
            .iter()
            .any(|a| a.kind == "model" && a.node == n.node && a.attempt == n.attempt);
        if n.status == "running" && !recorded {
            // Its version was recorded, so the attempt completed before the process died.
            let completed = prior.materialized.get(&n.node) == n.version.as_ref();
            let failure = ErrorInfo::new(
                Category::Cancelled,
                phlo_transform_core::diagnostic::codes::CANCELLED,
                "interrupted: the run's process ended during this attempt",
            )
            .at_attempt(n.attempt as u32);
            recorder
                .attempt(
                    &n.node,
                    EndedAttempt {
                        attempt: n.attempt as u32,
                        status: if completed { "passed" } else { "cancelled" },
                        started_at: n.started_at.clone(),
                        finished_at: None,
                        duration_ms: None,
                        failure: (!completed).then_some(&failure),
                        queries: Vec::new(),
                    },
                )
                .await?;
            prior
                .next_attempt
                .insert(n.node.clone(), n.attempt as u32 + 1);
        }
        prior.nodes.insert(n.node.clone(), n);
    }
    Ok(prior)
}

/// Each planned model's starting state, result and next attempt number. A model the
/// interrupted run materialised is reused as passed only when the fresh plan skips it — its
/// desired version is the one recorded and its relation still exists.
fn initial_states(plan: &Plan, prior: &Prior) -> Vec<(NodeState, ModelResult, u32)> {
    plan.models
        .iter()
        .map(|m| {
            let mut r = ModelResult::new(&m.name, m.version.clone());
            // As recorded until the run builds it (and stays so when it does not).
            r.current_as_of = m.current_as_of;
            let next = prior.next_attempt.get(&m.name).copied().unwrap_or(1);
            let materialized = prior.materialized.get(&m.name);
            if m.decision == Decision::Skip
                && materialized.is_some()
                && materialized == m.version.as_ref()
            {
                r.status = "passed".into();
                r.resumed = true;
                if let Some(n) = prior.nodes.get(&m.name) {
                    r.attempts = n.attempt as u32;
                    r.started_at = n.started_at.clone();
                    r.finished_at = n.finished_at.clone();
                    r.duration_ms = n.duration_ms.map(|d| d as u64);
                    r.rows = n.rows.map(|n| n as u64);
                }
                return (NodeState::Passed, r, next);
            }
            let s = match m.decision {
                Decision::Skip => {
                    r.outdated = outdated(m);
                    NodeState::Skipped
                }
                Decision::Cached => NodeState::Cached,
                Decision::Blocked => {
                    // Blocked by the plan: the report says why, as the plan did.
                    r.error = m.reasons.first().map(|reason| {
                        ErrorInfo::new(
                            Category::Dependency,
                            phlo_transform_core::diagnostic::codes::BLOCKED_BY_PLAN,
                            reason.detail.clone(),
                        )
                    });
                    NodeState::Blocked
                }
                Decision::Build => NodeState::Pending,
            };
            r.status = s.label().into();
            (s, r, next)
        })
        .collect()
}

/// Why a skipped model's relation is not the version the workspace gives now, when it is not.
fn outdated(m: &PlannedModel) -> Option<String> {
    let (Some(desired), Some(built)) = (&m.version, &m.previous_version) else {
        return None;
    };
    if desired == built {
        return None;
    }
    let why: Vec<&str> = m.reasons.iter().map(|r| r.detail.as_str()).collect();
    Some(format!(
        "out of date ({}): the relation built from version {} was used",
        why.join("; "),
        &built[..12.min(built.len())]
    ))
}

fn serde_json_value(plan: &Plan) -> serde_json::Value {
    serde_json::to_value(plan).expect("plans serialise")
}
