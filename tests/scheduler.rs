//! The scheduler against a fault-injecting engine (SPEC §62–65): the local engine wrapped so
//! chosen models fail transiently, fail with an SQL error, take long or hang. Calls
//! `phlo_transform_exec::execute` directly and checks the report and the state store.

mod common;

use async_trait::async_trait;
use common::write_file;
use phlo_transform_adapter::{
    Adapter, AdapterError, InFlight, LocalEngine, MaterializeJob, MaterializeOutcome, QueryId,
    Relation, RelationInfo, SourceState,
};
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_exec::{execute, CancelHandle, Category, RetryPolicy, RunOptions, RunReport};
use phlo_transform_plan::{Plan, PlanInputs, SelectorSpec};
use phlo_transform_project::Workspace;
use phlo_transform_sql::sqlparser::ast::Query;
use phlo_transform_state::{AttemptRecord, SqliteStateStore, StateStore};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the engine does to one attempt of a model.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// A failure the engine marks retryable (an I/O hiccup).
    Transient,
    /// The model's SQL fails (never retryable).
    Sql,
    /// The attempt never finishes.
    Hang,
}

/// `LocalEngine` with scripted faults per model (one per attempt, in order) and delays.
struct FaultyEngine {
    inner: LocalEngine,
    faults: Mutex<HashMap<String, VecDeque<Fault>>>,
    delays: HashMap<String, Duration>,
    /// Attempts each model received.
    calls: Mutex<BTreeMap<String, u32>>,
    /// Query ids the scheduler asked the engine to cancel.
    cancelled: Mutex<Vec<String>>,
}

impl FaultyEngine {
    fn calls(&self, model: &str) -> u32 {
        self.calls.lock().unwrap().get(model).copied().unwrap_or(0)
    }
}

#[async_trait]
impl Adapter for FaultyEngine {
    fn kind(&self) -> phlo_transform_project::AdapterKind {
        self.inner.kind()
    }
    fn dialect(&self) -> &str {
        self.inner.dialect()
    }
    fn model_relation(&self, model_name: &str) -> Relation {
        self.inner.model_relation(model_name)
    }
    fn source_relation(&self, source_name: &str) -> Relation {
        self.inner.source_relation(source_name)
    }
    async fn introspect_relation(
        &self,
        relation: &Relation,
    ) -> Result<Option<RelationInfo>, AdapterError> {
        self.inner.introspect_relation(relation).await
    }
    async fn execute(&self, query: &Query, inflight: &InFlight) -> Result<u64, AdapterError> {
        self.inner.execute(query, inflight).await
    }
    async fn create_table(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.inner.create_table(job, inflight).await
    }
    async fn create_view(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.inner.create_view(job, inflight).await
    }
    async fn apply_incremental(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.inner.apply_incremental(job, inflight).await
    }
    async fn drop_relation(&self, relation: &Relation) -> Result<(), AdapterError> {
        self.inner.drop_relation(relation).await
    }
    async fn source_state(
        &self,
        source: &phlo_transform_project::SourceDecl,
        timestamp_column: Option<&str>,
    ) -> Result<SourceState, AdapterError> {
        self.inner.source_state(source, timestamp_column).await
    }
    /// Records which hanging queries the scheduler cancelled.
    async fn cancel(&self, query: &QueryId) -> Result<(), AdapterError> {
        self.cancelled.lock().unwrap().push(query.0.clone());
        Ok(())
    }
    async fn output_identity(&self, relation: &Relation) -> Result<Option<String>, AdapterError> {
        self.inner.output_identity(relation).await
    }
    fn statements(&self, job: &MaterializeJob) -> Result<Vec<String>, AdapterError> {
        self.inner.statements(job)
    }
    async fn materialize(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        *self
            .calls
            .lock()
            .unwrap()
            .entry(job.model_name.clone())
            .or_default() += 1;
        if let Some(d) = self.delays.get(&job.model_name) {
            tokio::time::sleep(*d).await;
        }
        let fault = self
            .faults
            .lock()
            .unwrap()
            .get_mut(&job.model_name)
            .and_then(VecDeque::pop_front);
        match fault {
            Some(Fault::Transient) => Err(AdapterError::retryable(
                codes::WRITE_FAILED,
                "connection reset by peer",
            )),
            Some(Fault::Sql) => Err(AdapterError::new(
                codes::QUERY_FAILED,
                "Cast error: Cannot cast string 'seven' to value of Int32 type",
            )),
            Some(Fault::Hang) => {
                // A warehouse query that never ends, registered like a real one.
                let _running = inflight.track(QueryId(format!("hang:{}", job.model_name)));
                std::future::pending::<()>().await;
                unreachable!()
            }
            None => self.inner.materialize(job, inflight).await,
        }
    }
}

/// A → B → C and D → E (SPEC §64), tables.
fn spec_workspace(root: &Path) {
    write_file(root, "transforms/x/a.sql", "-- @table\nselect 1 as id\n");
    write_file(
        root,
        "transforms/x/b.sql",
        "-- @table\nselect id from x.a\n",
    );
    write_file(
        root,
        "transforms/x/c.sql",
        "-- @table\nselect id from x.b\n",
    );
    write_file(root, "transforms/x/d.sql", "-- @table\nselect 2 as id\n");
    write_file(
        root,
        "transforms/x/e.sql",
        "-- @table\nselect id from x.d\n",
    );
}

struct Harness {
    _dir: tempfile::TempDir,
    c: &'static Compilation,
    plan: Plan,
    engine: Arc<FaultyEngine>,
    state: Arc<dyn StateStore>,
}

async fn harness(faults: &[(&str, &[Fault])], delays: &[(&str, u64)]) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    spec_workspace(dir.path());
    let ws = Workspace::load(dir.path()).unwrap();
    let (catalog, diags) = CatalogSnapshot::load(&ws);
    let c: &'static Compilation = Box::leak(Box::new(Compilation::compile(ws, catalog, diags)));
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let warehouse = dir.path().join(".phlo/warehouse");
    let (inner, problems) = LocalEngine::open(&warehouse, c, None).await;
    assert!(problems.is_empty());
    let engine = Arc::new(FaultyEngine {
        inner,
        faults: Mutex::new(
            faults
                .iter()
                .map(|(m, f)| (m.to_string(), f.iter().copied().collect()))
                .collect(),
        ),
        delays: delays
            .iter()
            .map(|(m, ms)| (m.to_string(), Duration::from_millis(*ms)))
            .collect(),
        calls: Mutex::new(BTreeMap::new()),
        cancelled: Mutex::new(Vec::new()),
    });
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(&dir.path().join(".phlo/transform/state.db"))
            .await
            .unwrap(),
    );
    let materialized = HashMap::new();
    let existing = HashSet::new();
    let relation_of = |i: usize| engine.model_relation(c.models[i].name.as_str()).to_string();
    let inputs = PlanInputs {
        environment: "local",
        adapter: engine.name(),
        materialized: &materialized,
        existing_relations: &existing,
        relation_of: &relation_of,
        built_strategies: &HashMap::new(),
        freshness: &[],
        adoptable: &Default::default(),
        output_identities: &Default::default(),
    };
    let selection = phlo_transform_plan::select(
        c,
        &SelectorSpec::default(),
        &std::collections::BTreeSet::new,
    )
    .unwrap();
    let plan = phlo_transform_plan::plan(c, &inputs, &selection).unwrap();
    Harness {
        _dir: dir,
        c,
        plan,
        engine,
        state,
    }
}

impl Harness {
    async fn run(&self, options: &RunOptions<'_>) -> RunReport {
        execute(
            self.c,
            &self.plan,
            self.engine.clone(),
            self.state.clone(),
            options,
        )
        .await
        .unwrap()
    }

    /// `{model: status}` as the state store recorded it.
    async fn recorded(&self, run_id: &str) -> BTreeMap<String, String> {
        self.state
            .run_nodes(run_id)
            .await
            .unwrap()
            .into_iter()
            .filter(|n| n.kind == "model")
            .map(|n| (n.node, n.status))
            .collect()
    }

    async fn attempts(&self, run_id: &str, model: &str) -> Vec<AttemptRecord> {
        self.state
            .run_attempts(run_id)
            .await
            .unwrap()
            .into_iter()
            .filter(|a| a.node == model)
            .collect()
    }
}

fn statuses(report: &RunReport) -> BTreeMap<String, String> {
    report
        .models
        .iter()
        .map(|m| (m.name.clone(), m.status.clone()))
        .collect()
}

fn expect(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn fast_retries(n: u32) -> RetryPolicy {
    RetryPolicy {
        retries: n,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_64_independent_branches_continue_and_dependents_are_blocked() {
    for jobs in [1, 4] {
        let h = harness(&[("x.b", &[Fault::Sql])], &[]).await;
        let report = h.run(&RunOptions::new("run", jobs)).await;
        let want = expect(&[
            ("x.a", "passed"),
            ("x.b", "failed"),
            ("x.c", "blocked"),
            ("x.d", "passed"),
            ("x.e", "passed"),
        ]);
        assert_eq!(statuses(&report), want, "--jobs {jobs}");
        assert_eq!(h.recorded(&report.run_id).await, want, "--jobs {jobs}");
        assert_eq!(report.status, "failed");
        let c = &report.models[report.models.iter().position(|m| m.name == "x.c").unwrap()];
        let blocked = c.error.as_ref().unwrap();
        assert_eq!(
            (blocked.category, blocked.code.as_str()),
            (Category::Dependency, "E001")
        );
        assert_eq!(h.engine.calls("x.c"), 0, "a blocked model's SQL never runs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_64_with_fail_fast_cancels_unrelated_work_and_aborts_in_flight_tasks() {
    // D is still running when B fails: it is aborted, and E never starts.
    let h = harness(&[("x.b", &[Fault::Sql])], &[("x.b", 100), ("x.d", 5_000)]).await;
    let mut options = RunOptions::new("run", 4);
    options.fail_fast = true;
    let started = std::time::Instant::now();
    let report = h.run(&options).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "D was not aborted"
    );
    let want = expect(&[
        ("x.a", "passed"),
        ("x.b", "failed"),
        ("x.c", "blocked"),
        ("x.d", "cancelled"),
        ("x.e", "cancelled"),
    ]);
    assert_eq!(statuses(&report), want);
    assert_eq!(h.recorded(&report.run_id).await, want);
    assert_eq!(report.status, "failed");
    assert_eq!(h.engine.calls("x.e"), 0);
    let d = h.attempts(&report.run_id, "x.d").await;
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].status.as_str(), d[0].error_category.as_deref()),
        ("cancelled", Some("cancelled"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_are_retried_and_every_attempt_is_recorded() {
    let h = harness(&[("x.a", &[Fault::Transient, Fault::Transient])], &[]).await;
    let mut options = RunOptions::new("run", 2);
    options.retry = fast_retries(3);
    let report = h.run(&options).await;
    assert_eq!(report.status, "passed");
    let a = &report.models[0];
    assert_eq!((a.name.as_str(), a.attempts), ("x.a", 3));
    assert_eq!(a.failures.len(), 2);
    assert!(a
        .failures
        .iter()
        .all(|f| f.retryable && f.category == Category::Adapter));
    assert_eq!(
        a.failures.iter().map(|f| f.attempt).collect::<Vec<_>>(),
        vec![1, 2]
    );
    let attempts = h.attempts(&report.run_id, "x.a").await;
    let summary: Vec<(i64, &str, Option<&str>, bool)> = attempts
        .iter()
        .map(|a| {
            (
                a.attempt,
                a.status.as_str(),
                a.error_code.as_deref(),
                a.retryable,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (1, "failed", Some("A002"), true),
            (2, "failed", Some("A002"), true),
            (3, "passed", None, false),
        ]
    );
    let node = h
        .state
        .run_nodes(&report.run_id)
        .await
        .unwrap()
        .into_iter()
        .find(|n| n.node == "x.a")
        .unwrap();
    assert_eq!((node.status.as_str(), node.attempt), ("passed", 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_are_bounded() {
    let h = harness(&[("x.d", &[Fault::Transient; 5])], &[]).await;
    let mut options = RunOptions::new("run", 2);
    options.retry = fast_retries(2);
    let report = h.run(&options).await;
    assert_eq!(h.engine.calls("x.d"), 3, "one attempt and two retries");
    let d = report.models.iter().find(|m| m.name == "x.d").unwrap();
    assert_eq!((d.status.as_str(), d.attempts), ("failed", 3));
    let error = d.error.as_ref().unwrap();
    assert_eq!((error.attempt, error.retryable), (3, true));
    assert_eq!(statuses(&report)["x.e"], "blocked");
    assert_eq!(h.attempts(&report.run_id, "x.d").await.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_errors_are_never_retried() {
    let h = harness(&[("x.a", &[Fault::Sql])], &[]).await;
    let mut options = RunOptions::new("run", 2);
    options.retry = fast_retries(3);
    let report = h.run(&options).await;
    assert_eq!(h.engine.calls("x.a"), 1);
    let a = &report.models[0];
    let error = a.error.as_ref().unwrap();
    assert_eq!(
        (
            a.status.as_str(),
            error.category,
            error.code.as_str(),
            error.retryable
        ),
        ("failed", Category::Sql, "A001", false)
    );
    let attempts = h.attempts(&report.run_id, "x.a").await;
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].error_category.as_deref(), Some("sql"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_over_the_model_timeout_fails_as_a_timeout_and_is_not_retried() {
    let h = harness(&[("x.d", &[Fault::Hang, Fault::Hang])], &[]).await;
    let mut options = RunOptions::new("run", 4);
    // Long enough for a real Delta write on a loaded machine; x.d hangs forever anyway.
    options.model_timeout = Some(Duration::from_secs(3));
    options.retry = fast_retries(3);
    let report = h.run(&options).await;
    assert_eq!(h.engine.calls("x.d"), 1);
    let errors: Vec<_> = report
        .models
        .iter()
        .map(|m| {
            (
                m.name.as_str(),
                m.error.as_ref().map(|e| e.message.as_str()),
            )
        })
        .collect();
    assert_eq!(
        report.models.iter().filter(|m| m.error.is_some()).count(),
        2,
        "{errors:?}"
    );
    let d = report.models.iter().find(|m| m.name == "x.d").unwrap();
    let error = d.error.as_ref().unwrap();
    assert_eq!(
        (d.status.as_str(), error.category, error.code.as_str()),
        ("failed", Category::Timeout, "E003")
    );
    assert_eq!(
        statuses(&report),
        expect(&[
            ("x.a", "passed"),
            ("x.b", "passed"),
            ("x.c", "passed"),
            ("x.d", "failed"),
            ("x.e", "blocked"),
        ])
    );
    let attempts = h.attempts(&report.run_id, "x.d").await;
    assert_eq!(attempts[0].error_category.as_deref(), Some("timeout"));
    // The timed-out attempt's warehouse query was cancelled on the engine (SPEC §64).
    assert_eq!(*h.engine.cancelled.lock().unwrap(), vec!["hang:x.d"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_records_in_flight_and_unstarted_work_as_cancelled() {
    let h = harness(&[("x.d", &[Fault::Hang])], &[]).await;
    let mut options = RunOptions::new("run", 1);
    let cancel = CancelHandle::default();
    options.cancel = cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let report = h.run(&options).await;
    canceller.await.unwrap();
    assert_eq!(report.status, "cancelled");
    let s = statuses(&report);
    assert_eq!(s["x.d"], "cancelled", "{s:?}");
    // x.d's hanging query, if it had started, was cancelled on the engine.
    assert!(h
        .engine
        .cancelled
        .lock()
        .unwrap()
        .iter()
        .all(|q| q == "hang:x.d"));
    assert!(
        s.values().all(|v| v == "passed" || v == "cancelled"),
        "{s:?}"
    );
    assert_eq!(h.recorded(&report.run_id).await, s);
    let run = &h.state.runs(1).await.unwrap()[0];
    assert_eq!(run.status, "cancelled");
    assert!(h
        .state
        .run_nodes(&report.run_id)
        .await
        .unwrap()
        .iter()
        .all(|n| n.status != "running" && n.status != "pending"));
}
