//! DataFusion's own planning floor beside our cold `check` (issue 42): on a generated
//! workspace, the time sqlparser takes to parse every model, `statement_to_plan` takes to plan
//! them and the analyzer takes to check the plans, with every input schema registered before
//! (nothing of ours in between), on one thread and on all cores; then the compiler's cold
//! compile of the same workspace (no compile cache) and the ratio of the two.
//!
//! ```text
//! cargo bench --bench floor                                  # realistic shape, 1,000 and 10,000
//! PHLO_BENCH_SIZES=10000 PHLO_BENCH_REPS=5 cargo bench --bench floor
//! ```
//!
//! Under `cargo test --benches` it runs a quick smoke test on 200 models.
//! See docs/performance.md for the figures.

#[path = "support/generate.rs"]
#[allow(dead_code)]
mod generate;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::empty::EmptyTable;
use datafusion::execution::context::{SessionContext, SessionState};
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Query, Statement};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::TableReference;
use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::schemas::SourceSchema;
use phlo_transform_compiler::{CatalogSnapshot, Compilation, ModelSchema};
use phlo_transform_project::Workspace;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    if std::env::var_os("PHLO_BENCH_SHAPE").is_none() {
        std::env::set_var("PHLO_BENCH_SHAPE", "realistic");
    }
    let (bench, sizes) = generate::bench_sizes();
    let reps: usize = std::env::var("PHLO_BENCH_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(if bench { 3 } else { 1 });
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        generate::generate(&root, n).unwrap();
        let inputs = Inputs::of(&root);
        let typed = inputs.queries.len();
        let mut rows: Vec<(String, Duration)> = Vec::new();
        for (label, t) in [("1 thread", 1), ("all cores", threads)] {
            let floor = best(reps, || inputs.floor(t));
            rows.push((format!("parse ({label})"), floor.parse));
            rows.push((format!("statement_to_plan ({label})"), floor.plan));
            rows.push((format!("analyzer ({label})"), floor.analyze));
            rows.push((format!("floor total ({label})"), floor.total()));
        }
        let check = best(reps, || Figures::check(&root));
        rows.push(("our cold compile (no compile cache)".into(), check.parse));
        if bench {
            println!("floor bench, {n} models ({typed} typed), best of {reps}, {threads} cores:");
            for (name, d) in &rows {
                println!("  {name:<40} {:>9.1} ms", d.as_secs_f64() * 1000.0);
            }
            let floor = rows[7].1.as_secs_f64();
            println!(
                "  {:<40} {:>9.2}×",
                "cold compile / floor (all cores)",
                check.parse.as_secs_f64() / floor
            );
        } else {
            println!("floor bench smoke test: {n} models, {typed} planned");
        }
    }
}

/// Times of one pass.
#[derive(Clone, Copy, Default)]
struct Figures {
    parse: Duration,
    plan: Duration,
    analyze: Duration,
}

impl Figures {
    fn total(&self) -> Duration {
        self.parse + self.plan + self.analyze
    }

    /// What `check` compiles, timed as a whole (in `parse`): load, sources, compile.
    fn check(root: &Path) -> Figures {
        let started = Instant::now();
        let ws = Workspace::load(root).unwrap();
        let (catalog, diagnostics) = CatalogSnapshot::load(&ws);
        let c = Compilation::compile(ws, catalog, diagnostics);
        assert!(!c.has_errors(), "the generated workspace compiles");
        Figures {
            parse: started.elapsed(),
            ..Figures::default()
        }
    }
}

/// The least of `reps` passes, per phase.
fn best(reps: usize, mut pass: impl FnMut() -> Figures) -> Figures {
    let mut best = pass();
    for _ in 1..reps {
        let f = pass();
        best.parse = best.parse.min(f.parse);
        best.plan = best.plan.min(f.plan);
        best.analyze = best.analyze.min(f.analyze);
    }
    best
}

/// What DataFusion is given, taken from a compile beforehand: each typed model's text, its
/// query with relations named as the registered tables, and every schema.
struct Inputs {
    texts: Vec<String>,
    queries: Vec<Query>,
    schemas: Vec<(String, SchemaRef)>,
}

impl Inputs {
    fn of(root: &Path) -> Inputs {
        let ws = Workspace::load(root).unwrap();
        let (catalog, diagnostics) = CatalogSnapshot::load(&ws);
        let c = Compilation::compile(ws, catalog, diagnostics);
        let mut schemas: Vec<(String, SchemaRef)> = c
            .catalog
            .sources
            .iter()
            .filter_map(|(name, s)| match &s.schema {
                SourceSchema::Known(schema) => Some((name.clone(), schema.clone())),
                _ => None,
            })
            .collect();
        let (mut texts, mut queries) = (Vec::new(), Vec::new());
        let named = |t: &Target| match t {
            Target::Model(u) => vec![c.models[*u].name.to_string()],
            Target::Source(s) => vec![s.clone()],
        };
        for &i in &c.order {
            let m = &c.models[i];
            let Some(ModelSchema::Known { arrow, .. }) = &m.schema else {
                continue;
            };
            let (Some(sql), Some(query)) = (&m.sql, c.executable_query(i, &named)) else {
                continue;
            };
            schemas.push((m.name.to_string(), arrow.clone()));
            texts.push(sql.to_string());
            queries.push(query);
        }
        Inputs {
            texts,
            queries,
            schemas,
        }
    }

    /// One pass of parse, plan and analyze over every model on `threads` threads (each with
    /// its own session state over the same registered tables).
    fn floor(&self, threads: usize) -> Figures {
        let ctx = SessionContext::new();
        for (name, schema) in &self.schemas {
            let table = Arc::new(EmptyTable::new(schema.clone()));
            ctx.register_table(TableReference::bare(name.as_str()), table)
                .unwrap();
        }
        let chunk = self.texts.len().div_ceil(threads).max(1);
        let texts: Vec<&[String]> = self.texts.chunks(chunk).collect();
        let queries: Vec<&[Query]> = self.queries.chunks(chunk).collect();
        let started = Instant::now();
        on_threads(&texts, |texts| {
            for text in texts.iter() {
                Parser::parse_sql(&GenericDialect {}, text).unwrap();
            }
        });
        let parse = started.elapsed();
        // The statements are built outside the timing: planning takes them by value.
        let statements: Vec<std::sync::Mutex<Vec<DfStatement>>> = queries
            .iter()
            .map(|qs| std::sync::Mutex::new(qs.iter().map(statement).collect()))
            .collect();
        let started = Instant::now();
        let plans: Vec<Vec<LogicalPlan>> = on_threads(&statements, |statements| {
            let state = ctx.state();
            let statements = std::mem::take(&mut *statements.lock().unwrap());
            statements.into_iter().map(|s| plan(&state, s)).collect()
        });
        let plan = started.elapsed();
        let started = Instant::now();
        on_threads(&plans, |plans| {
            let state = ctx.state();
            for p in plans.iter() {
                let config = state.config_options();
                state
                    .analyzer()
                    .execute_and_check(p.clone(), config, |_, _| {})
                    .unwrap();
            }
        });
        Figures {
            parse,
            plan,
            analyze: started.elapsed(),
        }
    }
}

fn statement(q: &Query) -> DfStatement {
    DfStatement::Statement(Box::new(Statement::Query(Box::new(q.clone()))))
}

/// `statement_to_plan` is async but never waits on these schema-only tables.
fn plan(state: &SessionState, statement: DfStatement) -> LogicalPlan {
    futures::executor::block_on(state.statement_to_plan(statement)).unwrap()
}

/// `f` over each part on a thread of its own; the results in order.
fn on_threads<T: Sync, R: Send>(parts: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    std::thread::scope(|s| {
        let handles: Vec<_> = parts.iter().map(|p| s.spawn(|| f(p))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}
