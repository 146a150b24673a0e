//! Lineage benchmark: on generated N-model workspaces, times building the `LineageGraph` (it
//! is part of every compile; here it is built again on its own to isolate its cost),
//! serialising `lineage.json`, and `impact` on a source column once compiled.
//!
//! ```text
//! cargo bench -p phlo-transform-compiler --bench lineage                          # N = 1,000 and 10,000
//! PHLO_BENCH_SIZES=10000 cargo bench -p phlo-transform-compiler --bench lineage
//! ```
//!
//! Under `cargo test --benches` it runs a quick smoke test on a 200-model workspace.
//! See docs/performance.md for the figures.

#[path = "../../../benches/support/generate.rs"]
#[allow(dead_code)] // the loaders other benches use
mod generate;

use phlo_transform_compiler::{CatalogSnapshot, Compilation, LineageGraph};
use phlo_transform_project::Workspace;
use std::time::{Duration, Instant};

fn main() {
    let (_, sizes) = generate::bench_sizes();
    for n in sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        let shape = generate::generate(dir.path(), n).expect("generate workspace");
        println!(
            "{} models in {} layers ({} tables, {} reads, {} KiB of SQL)",
            shape.models,
            shape.layers,
            shape.tables,
            shape.edges,
            shape.bytes / 1024
        );
        let ws = Workspace::load(dir.path()).expect("workspace loads");
        let (catalog, diags) = CatalogSnapshot::load(&ws);
        let started = Instant::now();
        let c = Compilation::compile(ws, catalog, diags);
        let compile = started.elapsed();
        assert!(!c.has_errors(), "generated workspace has errors");

        let started = Instant::now();
        let g = LineageGraph::build(&c.lineage_inputs());
        let build = started.elapsed();
        let started = Instant::now();
        let document = serde_json::to_vec(&g.document()).expect("serialises");
        let serialise = started.elapsed();

        let probe = generate::Shape::from_env()
            .expect("PHLO_BENCH_SHAPE")
            .probe_column();
        let target = g.resolve(probe).expect("source column");
        let reps = 50;
        let mut impact = Duration::ZERO;
        let mut reached = 0;
        for _ in 0..reps {
            let started = Instant::now();
            let report = g.impact(target);
            impact += started.elapsed();
            reached = report.columns.len();
        }
        let derives = g
            .edges
            .iter()
            .filter(|e| e.kind == phlo_transform_compiler::lineage::EdgeKind::Derives)
            .count();
        println!(
            "{n:>6} models: compile (incl. lineage) {:>7.1} ms | lineage build {:>6.1} ms ({} nodes, {} derives edges) | lineage.json {:>5.1} MB in {:>6.1} ms | impact {probe} {:>6.2} ms (mean of {reps}; {reached} columns reached)",
            ms(compile),
            ms(build),
            g.nodes.len(),
            derives,
            document.len() as f64 / 1e6,
            ms(serialise),
            ms(impact) / reps as f64,
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
