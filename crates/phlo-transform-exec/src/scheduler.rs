//! The model scheduler (SPEC §62–65): models in plan (topological) order with at most `jobs`
//! attempts in flight, each a tokio task. A failure blocks its dependents while independent
//! branches go on; retryable adapter failures are retried with backoff, each failed attempt
//! recorded before its wait; `--fail-fast`, cancellation and `--model-timeout` first cancel
//! the warehouse queries each attempt registered in its [`InFlight`] (`Adapter::cancel`),
//! then drop the attempt's future (which stops an in-process engine's stream).
//!
//! Final states do not depend on timing except where stopping early makes them: without
//! `--fail-fast` or an interrupt, a model fails exactly when its own SQL fails and is blocked
//! exactly when something upstream failed or was blocked.

use crate::failure::{now, RetryPolicy};
use crate::recorder::{EndedAttempt, Recorder};
use crate::{CancelHandle, RunEvent};
use phlo_transform_adapter::{Adapter, InFlight, MaterializeJob, MaterializeOutcome};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_events::Category;
use phlo_transform_events::{ErrorInfo, ModelResult};
use phlo_transform_plan::as_of::Clocks;
use phlo_transform_plan::Plan;
use phlo_transform_state::StateError;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::{Id, JoinError, JoinSet};

/// The node states of SPEC §63.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeState {
    Pending,
    Ready,
    Running,
    Passed,
    Failed,
    Skipped,
    Cached,
    Blocked,
    Cancelled,
}

impl NodeState {
    pub fn label(self) -> &'static str {
        match self {
            NodeState::Pending => "pending",
            NodeState::Ready => "ready",
            NodeState::Running => "running",
            NodeState::Passed => "passed",
            NodeState::Failed => "failed",
            NodeState::Skipped => "skipped",
            NodeState::Cached => "cached",
            NodeState::Blocked => "blocked",
            NodeState::Cancelled => "cancelled",
        }
    }

    /// Not started yet: waiting for its upstream models or for a slot. States only move
    /// forward, so a model leaves this for good.
    pub fn is_open(self) -> bool {
        matches!(self, NodeState::Pending | NodeState::Ready)
    }

    /// Skipped and cached satisfy dependents; failed, blocked and cancelled do not.
    pub fn satisfies_dependents(self) -> bool {
        matches!(
            self,
            NodeState::Passed | NodeState::Skipped | NodeState::Cached
        )
    }
}

/// Why scheduling stopped before everything ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `--fail-fast` after the first unrecoverable failure.
    FailFast,
    /// The run was cancelled (Ctrl-C, an API call).
    Interrupted,
}

/// How the scheduler runs attempts.
pub(crate) struct Limits {
    pub jobs: usize,
    pub retry: RetryPolicy,
    pub fail_fast: bool,
    pub model_timeout: Option<Duration>,
    pub cancel: CancelHandle,
}

/// What one attempt's task hands back.
struct Ended {
    index: usize,
    attempt: u32,
    started_at: String,
    finished_at: String,
    duration_ms: u64,
    outcome: Result<MaterializeOutcome, ErrorInfo>,
}

pub(crate) struct Scheduler<'a> {
    pub c: &'a Compilation,
    pub plan: &'a Plan,
    pub adapter: Arc<dyn Adapter>,
    pub recorder: &'a Recorder<'a>,
    pub generation: i64,
    pub limits: Limits,
    pub states: Vec<NodeState>,
    pub results: Vec<ModelResult>,
    /// The number the next attempt of each model gets (a resumed run continues counting).
    pub next_attempt: Vec<u32>,
    /// The plan positions of each model's upstream models in the plan, resolved once: every
    /// task that ends rescans the open models, so name lookups there cost O(models²).
    upstream: Vec<Vec<usize>>,
    /// Models before this position are no longer open ([`NodeState::is_open`]): the rescans
    /// start here.
    first_open: usize,
    jobs: HashMap<usize, Arc<MaterializeJob>>,
    running: JoinSet<Ended>,
    /// The model and attempt number of each task.
    task_of: HashMap<Id, (usize, u32)>,
    /// The warehouse queries each task has in flight.
    inflight: HashMap<Id, InFlight>,
    stop: Option<Stop>,
    /// What each model is current as of: recorded, or as built by this run.
    clocks: Clocks<'a>,
}

impl<'a> Scheduler<'a> {
    pub fn new(
        c: &'a Compilation,
        plan: &'a Plan,
        adapter: Arc<dyn Adapter>,
        recorder: &'a Recorder<'a>,
        generation: i64,
        limits: Limits,
        initial: Vec<(NodeState, ModelResult, u32)>,
    ) -> Self {
        let mut states = Vec::with_capacity(initial.len());
        let mut results = Vec::with_capacity(initial.len());
        let mut next_attempt = Vec::with_capacity(initial.len());
        for (s, r, a) in initial {
            states.push(s);
            results.push(r);
            next_attempt.push(a);
        }
        Scheduler {
            c,
            plan,
            adapter,
            recorder,
            generation,
            limits,
            states,
            results,
            next_attempt,
            upstream: upstream_positions(plan),
            first_open: 0,
            jobs: HashMap::new(),
            running: JoinSet::new(),
            task_of: HashMap::new(),
            inflight: HashMap::new(),
            stop: None,
            clocks: Clocks::new(
                c,
                &plan.sources,
                plan.models
                    .iter()
                    .map(|m| (m.name.as_str(), m.current_as_of)),
            ),
        }
    }

    /// Runs every pending model to a final state. Returns why it stopped early, if it did.
    pub async fn run(&mut self) -> Result<Option<Stop>, StateError> {
        let cancel = self.limits.cancel.clone();
        loop {
            if self.stop.is_none() {
                self.schedule().await?;
            }
            if self.running.is_empty() {
                break;
            }
            let halt = tokio::select! {
                biased;
                () = cancel.cancelled(), if self.stop.is_none() => Some(Stop::Interrupted),
                joined = self.running.join_next_with_id() => {
                    let joined = joined.expect("the set is not empty");
                    self.ended(joined).await?
                }
            };
            if let Some(stop) = halt {
                self.halt(stop).await?;
            }
        }
        // Cancelled after the last task ended: what never started is still cancelled.
        if self.stop.is_none() && cancel.is_cancelled() {
            self.halt(Stop::Interrupted).await?;
        }
        Ok(self.stop)
    }

    fn upstream(&self, i: usize) -> impl Iterator<Item = NodeState> + '_ {
        self.upstream[i].iter().map(|&j| self.states[j])
    }

    fn upstream_failed(&self, i: usize) -> bool {
        self.upstream(i)
            .any(|s| matches!(s, NodeState::Failed | NodeState::Blocked))
    }

    /// Blocks what an upstream failure reaches, marks ready what can run, and starts ready
    /// models in plan order while slots are free. One pass suffices: the plan is in
    /// topological order, so a block reaches every dependent in the same pass.
    async fn schedule(&mut self) -> Result<(), StateError> {
        let past = |s: &NodeState| !s.is_open();
        while self.states.get(self.first_open).is_some_and(past) {
            self.first_open += 1;
        }
        for i in self.first_open..self.states.len() {
            if !self.states[i].is_open() {
                continue;
            }
            if self.upstream_failed(i) {
                self.block(i).await?;
                continue;
            }
            if !self.upstream(i).all(NodeState::satisfies_dependents) {
                continue;
            }
            let free = self.running.len() < self.limits.jobs.max(1);
            if self.states[i] == NodeState::Pending {
                self.set(i, NodeState::Ready);
                // A ready model waiting for a slot is recorded; one that starts at once is
                // only announced (its `running` record follows immediately).
                if free {
                    self.recorder.announce(&self.results[i]);
                } else {
                    self.recorder.model(&self.results[i]).await?;
                }
            }
            if free {
                self.start(i).await?;
            }
        }
        Ok(())
    }

    fn set(&mut self, i: usize, s: NodeState) {
        self.states[i] = s;
        self.results[i].status = s.label().into();
    }

    async fn block(&mut self, i: usize) -> Result<(), StateError> {
        self.set(i, NodeState::Blocked);
        self.results[i].error = Some(ErrorInfo::new(
            Category::Dependency,
            codes::UPSTREAM_FAILED,
            "an upstream model did not materialise",
        ));
        self.recorder.model(&self.results[i]).await
    }

    async fn start(&mut self, i: usize) -> Result<(), StateError> {
        let Some(job) = self.job(i) else {
            // Only a model without a parsed query gets here, and those never plan to build.
            let attempt = self.next_attempt[i];
            self.set(i, NodeState::Failed);
            self.results[i].error = Some(
                ErrorInfo::new(
                    Category::Internal,
                    codes::TASK_PANICKED,
                    "the model's executable SQL could not be built",
                )
                .at_attempt(attempt),
            );
            return self.recorder.model(&self.results[i]).await;
        };
        let attempt = self.next_attempt[i];
        self.set(i, NodeState::Running);
        let r = &mut self.results[i];
        r.started_at = Some(now());
        r.attempts = r.attempts.max(attempt);
        self.recorder.model(&self.results[i]).await?;
        self.spawn(i, job, attempt, Duration::ZERO);
        Ok(())
    }

    fn job(&mut self, i: usize) -> Option<Arc<MaterializeJob>> {
        if let Some(job) = self.jobs.get(&i) {
            return Some(job.clone());
        }
        let job = Arc::new(crate::jobs::materialize_job(
            self.c,
            &self.plan.models[i],
            self.adapter.as_ref(),
            &self.recorder.run_id,
            self.generation,
        )?);
        self.jobs.insert(i, job.clone());
        Some(job)
    }

    /// Starts attempt `attempt` of model `i` after `delay` (the retry backoff, which holds
    /// the model's slot).
    fn spawn(&mut self, index: usize, job: Arc<MaterializeJob>, attempt: u32, delay: Duration) {
        let adapter = self.adapter.clone();
        let timeout = self.limits.model_timeout;
        let file = self
            .c
            .model_index(&self.plan.models[index].name)
            .map(|m| self.c.models[m].path.clone());
        let failed = move |e, attempt| crate::failure::adapter_failure(e, attempt).in_file(file);
        let inflight = InFlight::default();
        let queries = inflight.clone();
        let handle = self.running.spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let started_at = now();
            let t0 = Instant::now();
            let mut work = adapter.materialize(&job, &queries);
            let done = match timeout {
                None => Ok(work.as_mut().await),
                Some(limit) => tokio::time::timeout(limit, work.as_mut()).await,
            };
            let outcome = match done {
                Ok(done) => done.map_err(|e| failed(e, attempt)),
                Err(_) => {
                    // Cancel on the server while the attempt still holds its queries, then
                    // give the engine a moment to end them before the future is dropped.
                    cancel_queries(adapter.as_ref(), &queries).await;
                    let _ = tokio::time::timeout(CANCEL_GRACE, work.as_mut()).await;
                    Err(ErrorInfo::new(
                        Category::Timeout,
                        codes::MODEL_TIMEOUT,
                        format!(
                            "attempt {attempt} ran longer than the model timeout ({})",
                            humanize(timeout.unwrap_or_default())
                        ),
                    )
                    .at_attempt(attempt))
                }
            };
            Ended {
                index,
                attempt,
                started_at,
                finished_at: now(),
                duration_ms: t0.elapsed().as_millis() as u64,
                outcome,
            }
        });
        self.task_of.insert(handle.id(), (index, attempt));
        self.inflight.insert(handle.id(), inflight);
    }

    /// Records an attempt's end. Returns `Some(FailFast)` when the run must stop.
    async fn ended(
        &mut self,
        joined: Result<(Id, Ended), JoinError>,
    ) -> Result<Option<Stop>, StateError> {
        let (ended, queries) = match joined {
            Ok((id, ended)) => {
                self.task_of.remove(&id);
                let queries: Vec<_> = self
                    .inflight
                    .remove(&id)
                    .map(|q| q.statistics())
                    .unwrap_or_default()
                    .into_iter()
                    .map(crate::recorder::query_record)
                    .collect();
                (ended, queries)
            }
            Err(e) => {
                self.inflight.remove(&e.id());
                let (i, attempt) = self.task_of.remove(&e.id()).expect("every task is known");
                return self.lost(i, attempt, e).await;
            }
        };
        let i = ended.index;
        let name = self.plan.models[i].name.clone();
        let attempt = EndedAttempt {
            attempt: ended.attempt,
            status: "",
            started_at: Some(ended.started_at.clone()),
            finished_at: Some(ended.finished_at.clone()),
            duration_ms: Some(ended.duration_ms),
            failure: None,
            queries: queries.clone(),
        };
        {
            let r = &mut self.results[i];
            r.queries.extend(queries.into_iter().map(|query| {
                phlo_transform_events::AttemptQuery {
                    attempt: ended.attempt,
                    query,
                }
            }));
            r.attempts = ended.attempt;
            r.finished_at = Some(ended.finished_at);
            r.duration_ms = Some(ended.duration_ms);
        }
        match ended.outcome {
            Ok(o) => {
                self.recorder
                    .attempt(
                        &name,
                        EndedAttempt {
                            status: "passed",
                            ..attempt
                        },
                    )
                    .await?;
                // The materialised version first: a run killed between the two writes leaves
                // a version recorded by this run, which `--resume` counts as passed; the other
                // order would leave a pass the planner knows nothing of.
                let current_as_of = self
                    .c
                    .model_index(&name)
                    .and_then(|model| self.clocks.built(model));
                crate::jobs::record_materialization(
                    self.c,
                    &self.plan.models[i],
                    self.recorder.state,
                    crate::jobs::Written {
                        run_id: &self.recorder.run_id,
                        generation: self.generation,
                        environment: &self.plan.environment,
                        adapter: self.adapter.name(),
                        outcome: &o,
                        current_as_of,
                    },
                )
                .await?;
                self.set(i, NodeState::Passed);
                let r = &mut self.results[i];
                r.current_as_of = current_as_of;
                r.rows = o.rows;
                r.reused_commit = o.already_committed;
                r.write = o.write;
                r.error = None;
                self.recorder.model(&self.results[i]).await?;
                Ok(None)
            }
            Err(failure) => {
                let failure = crate::source_failure::explain(self.c, &name, failure);
                // Written before any backoff: a run killed while waiting keeps the attempt.
                self.recorder
                    .attempt(
                        &name,
                        EndedAttempt {
                            status: "failed",
                            failure: Some(&failure),
                            ..attempt
                        },
                    )
                    .await?;
                self.results[i].failures.push(failure.clone());
                let retry = self
                    .stop
                    .is_none()
                    .then(|| self.limits.retry.retry_after(&failure))
                    .flatten();
                if let Some(delay) = retry {
                    self.results[i].error = Some(failure.clone());
                    self.recorder.model(&self.results[i]).await?;
                    self.recorder.emit(&RunEvent::Retry {
                        run_id: &self.recorder.run_id,
                        model: &name,
                        delay_ms: delay.as_millis() as u64,
                        failure: &failure,
                    });
                    let job = self.jobs[&i].clone();
                    self.next_attempt[i] = ended.attempt + 1;
                    self.spawn(i, job, ended.attempt + 1, delay);
                    return Ok(None);
                }
                self.set(i, NodeState::Failed);
                self.results[i].error = Some(failure);
                self.recorder.model(&self.results[i]).await?;
                Ok((self.limits.fail_fast && self.stop.is_none()).then_some(Stop::FailFast))
            }
        }
    }

    /// A task that never handed back its attempt: aborted (cancelled) or panicked (a bug).
    async fn lost(
        &mut self,
        i: usize,
        attempt: u32,
        e: JoinError,
    ) -> Result<Option<Stop>, StateError> {
        let (state, failure) = if e.is_cancelled() {
            let why = match self.stop {
                Some(Stop::FailFast) => "aborted: --fail-fast stopped the run after a failure",
                _ => "aborted: the run was interrupted",
            };
            (
                NodeState::Cancelled,
                ErrorInfo::new(Category::Cancelled, codes::CANCELLED, why),
            )
        } else {
            (
                NodeState::Failed,
                ErrorInfo::new(Category::Internal, codes::TASK_PANICKED, e.to_string()),
            )
        };
        let failure = failure.at_attempt(attempt);
        let name = self.plan.models[i].name.clone();
        let finished = now();
        self.recorder
            .attempt(
                &name,
                EndedAttempt {
                    attempt,
                    status: state.label(),
                    started_at: self.results[i].started_at.clone(),
                    finished_at: Some(finished.clone()),
                    duration_ms: None,
                    failure: Some(&failure),
                    queries: Vec::new(),
                },
            )
            .await?;
        self.set(i, state);
        let r = &mut self.results[i];
        r.finished_at = Some(finished);
        r.failures.push(failure.clone());
        r.error = Some(failure);
        self.recorder.model(&self.results[i]).await?;
        Ok(
            (state == NodeState::Failed && self.limits.fail_fast && self.stop.is_none())
                .then_some(Stop::FailFast),
        )
    }

    /// Stops scheduling: what never started is blocked (downstream of a failure) or
    /// cancelled, in-flight tasks are aborted and each is recorded as it really ended.
    async fn halt(&mut self, stop: Stop) -> Result<(), StateError> {
        self.stop = Some(stop);
        for queries in self.inflight.values() {
            cancel_queries(self.adapter.as_ref(), queries).await;
        }
        self.running.abort_all();
        for i in 0..self.states.len() {
            if !self.states[i].is_open() {
                continue;
            }
            if self.upstream_failed(i) {
                self.block(i).await?;
                continue;
            }
            let why = match stop {
                Stop::FailFast => "not started: --fail-fast stopped the run after a failure",
                Stop::Interrupted => "not started: the run was interrupted",
            };
            self.set(i, NodeState::Cancelled);
            self.results[i].error =
                Some(ErrorInfo::new(Category::Cancelled, codes::CANCELLED, why));
            self.recorder.model(&self.results[i]).await?;
        }
        // A task that finished before the abort reached it reports its real outcome.
        while let Some(joined) = self.running.join_next_with_id().await {
            self.ended(joined).await?;
        }
        Ok(())
    }
}

/// How long a cancelled attempt may take to end its queries before its future is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Asks the engine to cancel every query `queries` has in flight. A failed cancel is not
/// fatal: the attempt's future is dropped next either way.
async fn cancel_queries(adapter: &dyn Adapter, queries: &InFlight) {
    for q in queries.running() {
        let _ = adapter.cancel(&q).await;
    }
}

/// `30m`, `1h 5m`, `250ms`: durations as people write them.
fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 || !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    let parts: Vec<String> = [(h, "h"), (m, "m"), (s, "s")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, u)| format!("{n}{u}"))
        .collect();
    parts.join(" ")
}

/// For each model of `plan`, the positions of the models it depends on that the plan holds
/// (a dependency outside the plan is not waited for).
fn upstream_positions(plan: &Plan) -> Vec<Vec<usize>> {
    let position: HashMap<&str, usize> = plan
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name.as_str(), i))
        .collect();
    plan.models
        .iter()
        .map(|m| {
            m.depends_on
                .iter()
                .filter_map(|d| position.get(d.as_str()).copied())
                .collect()
        })
        .collect()
}
