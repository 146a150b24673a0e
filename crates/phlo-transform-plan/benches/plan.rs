//! Planning benchmark: a generated N-model workspace, its state store fully populated (every
//! model recorded as materialised at its current version), then the planner's own work timed
//! apart from the typed check: loading the recorded state and planning every model, on SQLite
//! and on PostgreSQL.
//!
//! ```text
//! cargo bench -p phlo-transform-plan --bench plan                   # N = 1,000 and 10,000
//! PHLO_BENCH_SIZES=10000 cargo bench -p phlo-transform-plan --bench plan
//! ```
//!
//! PostgreSQL is `PHLO_TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/postgres);
//! a fresh database is created and dropped. Under `cargo test --benches` it runs a 200-model
//! smoke test on SQLite only. See docs/performance.md for the figures.

#[path = "../../../benches/support/generate.rs"]
#[allow(dead_code)] // the lineage probe column is for the lineage bench
mod generate;

use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_plan::{plan, select, PlanInputs, SelectorSpec};
use phlo_transform_project::Workspace;
use phlo_transform_state::testing::PgTestDb;
use phlo_transform_state::{open, MaterializedVersion, StateLocation, StateStore};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Instant;

fn main() {
    let (bench_mode, sizes) = generate::bench_sizes();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    for n in sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        let shape = generate::generate(dir.path(), n).expect("generate");
        println!(
            "{} models in {} layers ({} tables, {} reads, {} KiB of SQL)",
            shape.models,
            shape.layers,
            shape.tables,
            shape.edges,
            shape.bytes / 1024
        );
        let started = Instant::now();
        let ws = Workspace::load(dir.path()).expect("workspace");
        let (catalog, diags) = CatalogSnapshot::load(&ws);
        let c = Compilation::compile(ws, catalog, diags);
        let check = started.elapsed();
        assert!(!c.has_errors());

        let sqlite = StateLocation::Sqlite(dir.path().join("state.db"));
        report(&runtime, &c, n, "sqlite", &sqlite, check);
        if bench_mode {
            let db = PgTestDb::create_blocking();
            let pg = StateLocation::parse(db.url()).expect("a postgres URL");
            report(&runtime, &c, n, "postgres", &pg, check);
        }
    }
}

fn report(
    runtime: &tokio::runtime::Runtime,
    c: &Compilation,
    n: usize,
    backend: &str,
    location: &StateLocation,
    check: std::time::Duration,
) {
    runtime.block_on(async {
        let store = open(location).await.expect("state store opens");
        populate(c, store.as_ref()).await;
        let started = Instant::now();
        let materialized = store.materializations("local").await.expect("reads");
        let load = started.elapsed();
        let existing: HashSet<String> = c.models.iter().map(|m| m.id.clone()).collect();
        let strategies = HashMap::new();
        let relation_of = |i: usize| c.models[i].name.to_string();
        let inputs = PlanInputs {
            environment: "local",
            adapter: "local",
            materialized: &materialized,
            existing_relations: &existing,
            relation_of: &relation_of,
            built_strategies: &strategies,
            freshness: &[],
            adoptable: &Default::default(),
            output_identities: &Default::default(),
        };
        let started = Instant::now();
        let selection = select(c, &SelectorSpec::default(), &BTreeSet::new).expect("selects");
        let p = plan(c, &inputs, &selection).expect("plans");
        let planning = started.elapsed();
        let started = Instant::now();
        let body = serde_json::to_value(&p).expect("serialises");
        store.store_plan(&p.plan_id, &body).await.expect("stores");
        let stored = started.elapsed();
        assert_eq!(p.summary.skip, p.models.len(), "a populated state plans nothing to build");
        println!(
            "{n:>6} models, {backend:<8}: typed check {:>7.1} ms | load state {:>6.1} ms | select + plan {:>6.1} ms | store plan {:>6.1} ms | planner total {:>6.1} ms beyond the check | peak RSS so far {} MiB",
            ms(check),
            ms(load),
            ms(planning),
            ms(stored),
            ms(load + planning + stored),
            peak_rss_mib().map_or("?".to_string(), |m| m.to_string())
        );
    });
}

/// Records every materialised model at its current version, as a completed run would.
async fn populate(c: &Compilation, store: &dyn StateStore) {
    for m in &c.models {
        let Some(v) = &m.version else { continue };
        store
            .record_materialization(&MaterializedVersion {
                environment: "local".into(),
                model_id: m.id.clone(),
                model_name: m.name.to_string(),
                version: v.version.clone(),
                sql_hash: v.sql_hash.clone(),
                config_hash: v.config_hash.clone(),
                upstream: v.upstream.clone(),
                sources: v.sources.clone(),
                materialization: m.materialization.as_str().into(),
                relation: m.name.to_string(),
                run_id: "bench".into(),
                generation: 1,
                materialized_at: "2026-01-01T00:00:00Z".into(),
                text_hash: Some(v.fingerprints.text.clone()),
                plan_hash: v.fingerprints.plan.clone(),
                output_columns: None,
                adapter: Some("local".into()),
                output_identity: None,
                physical_state: None,
                current_as_of: None,
            })
            .await
            .expect("records");
    }
}

/// The process's peak resident set (`VmHWM` in /proc/self/status), Linux only.
fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
