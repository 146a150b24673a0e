//! The data tests, run after the models, `jobs` at once. A test over a model that did not
//! materialise is blocked; once the run has stopped (`--fail-fast`, an interrupt) the tests
//! that were never started are cancelled. A test that passed at its current version (its SQL, the versions of
//! the models it reads and the states of the sources it reads) is `cached`, not run again.

use crate::recorder::Recorder;
use crate::scheduler::NodeState;
use crate::CancelHandle;
use datafusion::sql::sqlparser::ast::Query;
use phlo_transform_adapter::{Adapter, InFlight};
use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::{Compilation, CompiledTest};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Fingerprint;
use phlo_transform_events::Category;
use phlo_transform_events::{ErrorInfo, TestResult};
use phlo_transform_plan::Plan;
use phlo_transform_state::StateError;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::task::{Id, JoinError, JoinSet};

/// Tests that passed before: name → (the version it passed at, the run it passed in).
pub(crate) type Passes = HashMap<String, (String, String)>;

/// The version of a test: its query and the versions of what it reads. `None` when a model it
/// reads has no version (errors) or a source no state: such a test always runs.
pub(crate) fn test_version(c: &Compilation, test: &CompiledTest) -> Option<String> {
    let mut f = Fingerprint::new("phlo-transform/test-version/1");
    f.field("query", test.query.to_string());
    for r in &test.relations {
        match r.target.as_ref()? {
            Target::Model(i) => {
                let m = &c.models[*i];
                f.field("model", m.name.as_str())
                    .field("version", &m.version.as_ref()?.version);
            }
            Target::Source(s) => {
                f.field("source", s)
                    .field("state", &c.catalog.sources.get(s)?.state);
            }
        }
    }
    Some(f.finish())
}

/// The tests the latest earlier run of `environment` passed (or carried as cached), with the
/// version each passed at.
pub(crate) async fn earlier_passes(
    state: &dyn phlo_transform_state::StateStore,
    environment: &str,
    current_run: &str,
) -> Result<Passes, StateError> {
    let Some(run) = state
        .runs(50)
        .await?
        .into_iter()
        .find(|r| r.environment == environment && r.run_id != current_run)
    else {
        return Ok(Passes::new());
    };
    Ok(state
        .run_nodes(&run.run_id)
        .await?
        .into_iter()
        .filter(|n| n.kind == "test" && matches!(n.status.as_str(), "passed" | "cached"))
        .filter_map(|n| Some((n.node, (n.version?, run.run_id.clone()))))
        .collect())
}

/// What the tests of a run need to know about it.
pub(crate) struct TestRun<'a> {
    pub c: &'a Compilation,
    pub plan: &'a Plan,
    pub adapter: &'a Arc<dyn Adapter>,
    /// The models' end states: a test over one that did not materialise is blocked.
    pub states: &'a HashMap<&'a str, NodeState>,
    pub passed_before: &'a Passes,
    /// The run stopped (`--fail-fast`): no test starts.
    pub stopped: bool,
    pub cancel: &'a CancelHandle,
    /// Tests executing at once (the run's `jobs`).
    pub jobs: usize,
}

/// Runs the plan's tests, `jobs` at once, and records every result. Results are written as
/// they come: each state write takes every result that ended since the last one (tests that
/// ran nothing, cached, blocked or cancelled, included), so a run with many quick tests
/// makes far fewer writes than tests. The results are returned in the plan's order.
pub(crate) async fn run_tests(
    run: TestRun<'_>,
    recorder: &Recorder<'_>,
) -> Result<Vec<TestResult>, StateError> {
    let by_name: HashMap<&str, &CompiledTest> =
        run.c.tests.iter().map(|t| (t.name.as_str(), t)).collect();
    let physical = |t: &Target| crate::jobs::physical_parts(run.c, run.adapter.as_ref(), t);
    let stopped = || run.stopped || run.cancel.is_cancelled();
    let mut progress = Progress::new(recorder, run.plan.tests.len());
    for (index, planned) in run.plan.tests.iter().enumerate() {
        let test = by_name[planned.name.as_str()];
        let version = test_version(run.c, test);
        let mut r = TestResult {
            name: planned.name.clone(),
            status: "passed".into(),
            violations: None,
            duration_ms: None,
            error: None,
            version: version.clone(),
            reason: None,
        };
        let cached_from = run
            .passed_before
            .get(&planned.name)
            .filter(|(v, _)| version.as_ref() == Some(v))
            .map(|(_, run)| run);
        let blocked = planned.targets.iter().any(|t| {
            run.states
                .get(t.as_str())
                .is_some_and(|s| !s.satisfies_dependents())
        });
        if blocked {
            progress.ran_nothing(index, blocked_result(r));
            continue;
        }
        if let Some(from) = cached_from.filter(|_| !stopped()) {
            r.status = "cached".into();
            r.reason = Some(format!(
                "passed in run {from} at this version: its SQL and what it reads are unchanged (`--rerun-tests` runs it)"
            ));
            progress.ran_nothing(index, r);
            continue;
        }
        progress.wait_for_a_slot(run.jobs.max(1)).await?;
        if stopped() {
            progress.ran_nothing(index, cancelled_result(r));
            continue;
        }
        let query = run.c.executable_test_query(test, &physical);
        progress.start(index, run.adapter.clone(), query, r);
    }
    progress.finish().await
}

/// The tests of a run as they go: those executing (by task), the results not written yet and
/// every result in its place in the plan.
struct Progress<'r, 'a> {
    recorder: &'r Recorder<'a>,
    executing: JoinSet<TestResult>,
    started: HashMap<Id, (usize, TestResult)>,
    unrecorded: Vec<(usize, TestResult)>,
    results: Vec<Option<TestResult>>,
}

impl<'r, 'a> Progress<'r, 'a> {
    fn new(recorder: &'r Recorder<'a>, tests: usize) -> Self {
        Progress {
            recorder,
            executing: JoinSet::new(),
            started: HashMap::new(),
            unrecorded: Vec::new(),
            results: vec![None; tests],
        }
    }

    /// A test that ran nothing: written with the next executed test's result, or at the end.
    fn ran_nothing(&mut self, index: usize, r: TestResult) {
        self.unrecorded.push((index, r));
    }

    /// Starts executing test `index` (`r`: its result so far).
    fn start(
        &mut self,
        index: usize,
        adapter: Arc<dyn Adapter>,
        query: Option<Query>,
        r: TestResult,
    ) {
        let task = self.executing.spawn(execute(adapter, query, r.clone()));
        self.started.insert(task.id(), (index, r));
    }

    async fn wait_for_a_slot(&mut self, jobs: usize) -> Result<(), StateError> {
        while self.executing.len() >= jobs {
            self.wait().await?;
        }
        Ok(())
    }

    /// Waits for every executing test, writes what is left and hands back all the results.
    async fn finish(mut self) -> Result<Vec<TestResult>, StateError> {
        while !self.executing.is_empty() {
            self.wait().await?;
        }
        self.record().await?;
        Ok(self.results.into_iter().flatten().collect())
    }

    /// Waits for an executing test to end, takes every other one that ended meanwhile, and
    /// writes them all.
    async fn wait(&mut self) -> Result<(), StateError> {
        let Some(first) = self.executing.join_next_with_id().await else {
            return Ok(());
        };
        self.joined(first);
        while let Some(more) = self.executing.try_join_next_with_id() {
            self.joined(more);
        }
        self.record().await
    }

    /// A test task's end; one that panicked (a bug) is a test that errored, as a model's
    /// task is a model that failed.
    fn joined(&mut self, done: Result<(Id, TestResult), JoinError>) {
        let task = match &done {
            Ok((id, _)) => *id,
            Err(e) => e.id(),
        };
        let (index, mut r) = self.started.remove(&task).expect("every task is known");
        match done {
            Ok((_, ended)) => r = ended,
            Err(e) => {
                r.status = "error".into();
                r.error = Some(
                    ErrorInfo::new(Category::Internal, codes::TASK_PANICKED, e.to_string())
                        .at_attempt(1),
                );
            }
        }
        self.unrecorded.push((index, r));
    }

    /// Writes the unrecorded results in one state write and puts them in their places.
    async fn record(&mut self) -> Result<(), StateError> {
        let mut batch = std::mem::take(&mut self.unrecorded);
        batch.sort_by_key(|(index, _)| *index);
        let (indices, tests): (Vec<usize>, Vec<TestResult>) = batch.into_iter().unzip();
        self.recorder.tests(&tests).await?;
        for (index, t) in indices.into_iter().zip(tests) {
            self.results[index] = Some(t);
        }
        Ok(())
    }
}

fn blocked_result(mut r: TestResult) -> TestResult {
    r.status = "blocked".into();
    r.error = Some(ErrorInfo::new(
        Category::Dependency,
        codes::UPSTREAM_FAILED,
        "a tested model did not materialise",
    ));
    r
}

fn cancelled_result(mut r: TestResult) -> TestResult {
    r.status = "cancelled".into();
    r.error = Some(ErrorInfo::new(
        Category::Cancelled,
        codes::CANCELLED,
        "not started: the run stopped",
    ));
    r
}

/// Runs one test's query (`None`: it could not be built) and reads its violations.
async fn execute(adapter: Arc<dyn Adapter>, query: Option<Query>, mut r: TestResult) -> TestResult {
    let t0 = Instant::now();
    let outcome = match query {
        Some(q) => adapter.execute(&q, &InFlight::default()).await,
        None => Err(phlo_transform_adapter::AdapterError::new(
            codes::TEST_ERROR,
            "test query could not be built",
        )),
    };
    r.duration_ms = Some(t0.elapsed().as_millis() as u64);
    match outcome {
        Ok(0) => r.violations = Some(0),
        Ok(n) => {
            r.status = "failed".into();
            r.violations = Some(n);
            r.error = Some(
                ErrorInfo::new(
                    Category::Test,
                    codes::TEST_FAILED,
                    format!("{n} violating row(s)"),
                )
                .at_attempt(1),
            );
        }
        Err(e) => {
            r.status = "error".into();
            r.error =
                Some(ErrorInfo::new(Category::Test, codes::TEST_ERROR, e.message).at_attempt(1));
        }
    }
    r
}
