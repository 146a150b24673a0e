//! Scheduling overhead per model: a plan of N trivial models (ten independent chains of
//! views) executed by `phlo_transform_exec::execute` with the SQLite state store, twice:
//!
//! - through an engine that does nothing, so the time is the scheduler's own — tokio tasks,
//!   dependency tracking, events and the state writes of every transition (pending, running,
//!   the attempt, passed, the materialised version);
//! - through the local engine (DataFusion + Delta), where each model is a view.
//!
//! ```text
//! cargo bench --bench scheduler                              # N = 1,000, 3 runs, --jobs 4
//! PHLO_BENCH_SIZES=1000,5000 PHLO_BENCH_REPS=5 PHLO_BENCH_JOBS=8 cargo bench --bench scheduler
//! ```
//!
//! Under `cargo test --benches` (no `--bench` argument) it runs once on 50 models.
//! See docs/performance.md for the figures.

use async_trait::async_trait;
use phlo_transform_adapter::{
    Adapter, AdapterError, InFlight, LocalEngine, MaterializeJob, MaterializeOutcome, QueryId,
    Relation, RelationInfo, SourceState,
};
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_exec::{execute, RunOptions};
use phlo_transform_plan::{Plan, PlanInputs, SelectorSpec};
use phlo_transform_project::{SourceDecl, Workspace};
use phlo_transform_sql::sqlparser::ast::Query;
use phlo_transform_state::{SqliteStateStore, StateStore};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An engine whose every operation succeeds at once.
struct NoopEngine;

#[async_trait]
impl Adapter for NoopEngine {
    fn kind(&self) -> phlo_transform_project::AdapterKind {
        phlo_transform_project::AdapterKind::Local
    }
    fn dialect(&self) -> &str {
        "datafusion"
    }
    fn model_relation(&self, model_name: &str) -> Relation {
        Relation::new([model_name])
    }
    fn source_relation(&self, source_name: &str) -> Relation {
        Relation::new([source_name])
    }
    async fn introspect_relation(
        &self,
        _: &Relation,
    ) -> Result<Option<RelationInfo>, AdapterError> {
        Ok(None)
    }
    async fn execute(&self, _: &Query, _: &InFlight) -> Result<u64, AdapterError> {
        Ok(0)
    }
    async fn create_table(
        &self,
        _: &MaterializeJob,
        _: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        Ok(MaterializeOutcome::default())
    }
    async fn create_view(
        &self,
        _: &MaterializeJob,
        _: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        Ok(MaterializeOutcome::default())
    }
    async fn apply_incremental(
        &self,
        _: &MaterializeJob,
        _: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        Ok(MaterializeOutcome::default())
    }
    async fn drop_relation(&self, _: &Relation) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn source_state(
        &self,
        _: &SourceDecl,
        _: Option<&str>,
    ) -> Result<SourceState, AdapterError> {
        Ok(SourceState::default())
    }
    async fn cancel(&self, _: &QueryId) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn output_identity(&self, _: &Relation) -> Result<Option<String>, AdapterError> {
        Ok(None)
    }
    fn statements(&self, _: &MaterializeJob) -> Result<Vec<String>, AdapterError> {
        Ok(Vec::new())
    }
}

/// Ten chains: model `i` reads model `i - 10`.
fn generate(root: &Path, n: usize) {
    for i in 0..n {
        let sql = if i < 10 {
            format!("select {i} as id, 'g' as grp\n")
        } else {
            format!("select id + 1 as id, grp from bench.m{:05}\n", i - 10)
        };
        let path = root.join(format!("transforms/bench/m{i:05}.sql"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, sql).unwrap();
    }
}

fn plan(c: &Compilation, adapter: &dyn Adapter) -> Plan {
    let (materialized, existing, strategies) = (HashMap::new(), HashSet::new(), HashMap::new());
    let relation_of = |i: usize| {
        adapter
            .model_relation(c.models[i].name.as_str())
            .to_string()
    };
    let inputs = PlanInputs {
        environment: "local",
        adapter: adapter.name(),
        materialized: &materialized,
        existing_relations: &existing,
        relation_of: &relation_of,
        built_strategies: &strategies,
        freshness: &[],
        adoptable: &Default::default(),
        output_identities: &Default::default(),
    };
    let selection = phlo_transform_plan::select(c, &SelectorSpec::default(), &BTreeSet::new)
        .expect("the selection resolves");
    phlo_transform_plan::plan(c, &inputs, &selection).expect("the workspace plans")
}

/// One run of `plan` through `adapter` on a fresh state database: its wall time.
async fn timed_run(
    c: &Compilation,
    adapter: Arc<dyn Adapter>,
    dir: &Path,
    jobs: usize,
) -> Duration {
    let p = plan(c, adapter.as_ref());
    let state_path = dir.join(format!("state-{}.db", uuid_like()));
    let state: Arc<dyn StateStore> = Arc::new(SqliteStateStore::open(&state_path).await.unwrap());
    let t0 = Instant::now();
    let report = execute(c, &p, adapter, state, &RunOptions::new("run", jobs))
        .await
        .expect("the run is recorded");
    let elapsed = t0.elapsed();
    assert_eq!(report.status, "passed", "{:?}", report.counts);
    elapsed
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn per_model(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e6 / n as f64
}

fn main() {
    let bench_mode = std::env::args().skip(1).any(|a| a == "--bench");
    let env = |k: &str| std::env::var(k).ok();
    let sizes: Vec<usize> = match (bench_mode, env("PHLO_BENCH_SIZES")) {
        (false, _) => vec![50],
        (true, Some(s)) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        (true, None) => vec![1_000],
    };
    let reps: usize = if bench_mode {
        env("PHLO_BENCH_REPS")
            .and_then(|r| r.parse().ok())
            .unwrap_or(3)
    } else {
        1
    };
    let jobs: usize = env("PHLO_BENCH_JOBS")
        .and_then(|j| j.parse().ok())
        .unwrap_or(4);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("scheduler: N trivial models (10 chains of views), --jobs {jobs}, SQLite state; best of {reps}");
    println!(
        "{:>7}  {:>12}  {:>14}  {:>12}  {:>14}",
        "models", "no-op engine", "per model", "local engine", "per model"
    );
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path(), n);
        let ws = Workspace::load(dir.path()).expect("the workspace loads");
        let (catalog, diags) = CatalogSnapshot::load(&ws);
        let c = Compilation::compile(ws, catalog, diags);
        assert!(!c.has_errors());
        let (mut noop, mut local) = (Duration::MAX, Duration::MAX);
        for _ in 0..reps {
            noop = noop.min(rt.block_on(timed_run(&c, Arc::new(NoopEngine), dir.path(), jobs)));
            let warehouse = dir.path().join(format!("warehouse-{}", uuid_like()));
            let engine = rt.block_on(LocalEngine::open(&warehouse, &c, None)).0;
            local = local.min(rt.block_on(timed_run(&c, Arc::new(engine), dir.path(), jobs)));
        }
        println!(
            "{n:>7}  {:>10.0}ms  {:>11.0} µs  {:>10.0}ms  {:>11.0} µs",
            noop.as_secs_f64() * 1e3,
            per_model(noop, n),
            local.as_secs_f64() * 1e3,
            per_model(local, n),
        );
    }
}
