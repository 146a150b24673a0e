//! Compile front-end benchmark: generates layered N-model workspaces and times
//! `Workspace::load`, `CatalogSnapshot::load` and `Compilation::compile` separately.
//!
//! ```text
//! cargo bench --bench check                                   # N = 1,000 and 10,000, 3 runs each
//! PHLO_BENCH_SIZES=1000,5000,10000 PHLO_BENCH_REPS=5 cargo bench --bench check
//! PHLO_BENCH_GENERATE_ONLY=/tmp/ws10k,10000 cargo bench --bench check   # only write a workspace
//! PHLO_BENCH_SHAPE=realistic cargo bench --bench check        # ~1.5 KB models (joins, CTEs, …)
//! ```
//!
//! Under `cargo test --benches` / `--all-targets` (no `--bench` argument) it runs a quick
//! smoke test on a 200-model workspace instead, so the test suite stays fast.
//! See docs/performance.md for the figures and how to reproduce them.

#[path = "support/generate.rs"]
#[allow(dead_code)] // `bench_sizes` is for the benches without their own size validation
mod generate;

use phlo_transform_compiler::graph::ModelGraph;
use phlo_transform_compiler::resolve::{Context, Resolver};
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_project::Workspace;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const DEFAULT_SIZES: &[usize] = &[1_000, 10_000];
const DEFAULT_REPS: usize = 3;

fn main() -> ExitCode {
    if let Err(message) = generate::Shape::from_env() {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
    if let Ok(spec) = std::env::var("PHLO_BENCH_GENERATE_ONLY") {
        return generate_only(&spec);
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    let bench_mode = std::env::args().skip(1).any(|a| a == "--bench");
    let (sizes, reps) = if bench_mode {
        let sizes = match std::env::var("PHLO_BENCH_SIZES") {
            Ok(s) => match parse_sizes(&s) {
                Some(v) => v,
                None => {
                    eprintln!("error: PHLO_BENCH_SIZES must be a comma-separated list of positive integers, got `{s}`");
                    return ExitCode::from(2);
                }
            },
            Err(_) => DEFAULT_SIZES.to_vec(),
        };
        let reps = std::env::var("PHLO_BENCH_REPS")
            .ok()
            .and_then(|r| r.trim().parse().ok())
            .filter(|&r| r > 0)
            .unwrap_or(DEFAULT_REPS);
        (sizes, reps)
    } else {
        (vec![200], 1)
    };

    let mut results = Vec::new();
    for &n in &sizes {
        match bench_size(n, reps) {
            Ok(r) => results.push(r),
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::FAILURE;
            }
        }
    }
    if bench_mode {
        print_report(&results, reps);
    } else {
        println!("check bench smoke test: {} models compiled without errors (run `cargo bench --bench check` for figures)", sizes[0]);
    }
    ExitCode::SUCCESS
}

fn parse_sizes(s: &str) -> Option<Vec<usize>> {
    let v: Option<Vec<usize>> = s
        .split(',')
        .map(|p| {
            p.trim()
                .replace('_', "")
                .parse()
                .ok()
                .filter(|&n: &usize| n > 0)
        })
        .collect();
    v.filter(|v| !v.is_empty())
}

/// `PHLO_BENCH_GENERATE_ONLY=DIR,N`: write an N-model workspace into DIR (created; must be
/// empty or absent) and exit.
fn generate_only(spec: &str) -> ExitCode {
    let Some((dir, n)) = spec
        .rsplit_once(',')
        .and_then(|(d, n)| Some((PathBuf::from(d), n.trim().parse::<usize>().ok()?)))
    else {
        eprintln!("error: PHLO_BENCH_GENERATE_ONLY must be `DIR,N`, got `{spec}`");
        return ExitCode::from(2);
    };
    if n == 0 {
        eprintln!("error: N must be positive");
        return ExitCode::from(2);
    }
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        eprintln!(
            "error: {} exists and is not empty; remove it or pick another directory",
            dir.display()
        );
        return ExitCode::from(2);
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    match generate::generate(&dir, n) {
        Ok(s) => {
            println!(
                "generated {} models ({} layers, {} tables, {} reads, {} KiB of SQL) in {}",
                s.models,
                s.layers,
                s.tables,
                s.edges,
                s.bytes / 1024,
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: generating into {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}

/// One repetition's timings.
#[derive(Clone, Copy, Default)]
struct Rep {
    load: Duration,
    catalog: Duration,
    compile: Duration,
    total: Duration,
    /// Dropping the `Compilation` (not part of `total`).
    drop: Duration,
    // Breakdown (separate passes, not part of `total`).
    raw_read: Duration,
    /// Resident-set growth (bytes) across load and across catalog + compile, first run only.
    rss_load: Option<u64>,
    rss_compile: Option<u64>,
    /// `[transform] analysis = "off"`: compile without DataFusion typing.
    compile_no_typing: Duration,
    /// Empty catalog: no typing and no versions (every source schema and state unknown).
    compile_bare: Duration,
    resolve: Duration,
    graph: Duration,
}

struct SizeResult {
    n: usize,
    summary: generate::Summary,
    reps: Vec<Rep>,
}

fn bench_size(n: usize, reps: usize) -> Result<SizeResult, String> {
    let tmp = tempfile::Builder::new()
        .prefix("phlo-bench-")
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))?;
    let dir = tmp.path();
    let started = Instant::now();
    let summary = generate::generate(dir, n).map_err(|e| format!("generating {n} models: {e}"))?;
    eprintln!(
        "N={n}: generated {} models ({} layers, {} tables, {} reads, {} KiB SQL) in {:.0} ms; timing {reps} run(s)…",
        summary.models,
        summary.layers,
        summary.tables,
        summary.edges,
        summary.bytes / 1024,
        started.elapsed().as_secs_f64() * 1e3
    );

    let mut out = Vec::with_capacity(reps);
    for _ in 0..reps {
        let mut r = Rep::default();

        // The measured pipeline, exactly as `phlo-transform check` runs it.
        let rss0 = resident_bytes();
        let t0 = Instant::now();
        let ws = Workspace::load(dir).map_err(|d| format!("Workspace::load: {}", d.message))?;
        let t1 = Instant::now();
        let (catalog, catalog_diags) = CatalogSnapshot::load(&ws);
        let rss1 = resident_bytes();
        let t2 = Instant::now();
        let c = Compilation::compile(ws, catalog, catalog_diags);
        let t3 = Instant::now();
        r.load = t1 - t0;
        r.catalog = t2 - t1;
        r.compile = t3 - t2;
        r.total = t3 - t0;
        if out.is_empty() {
            let rss2 = resident_bytes();
            r.rss_load = rss0.zip(rss1).map(|(a, b)| b.saturating_sub(a));
            r.rss_compile = rss1.zip(rss2).map(|(a, b)| b.saturating_sub(a));
        }
        validate(&c, n)?;

        // Breakdown of compile, from separate passes over the same data.
        let t = Instant::now();
        let resolver = Resolver::new(&c.workspace);
        let mut resolved = 0usize;
        for (i, m) in c.models.iter().enumerate() {
            for rel in &m.relations {
                if resolver
                    .resolve(&rel.relation, Context::Model(i), &m.path)
                    .is_ok()
                {
                    resolved += 1;
                }
            }
        }
        r.resolve = t.elapsed();
        drop(resolver);
        std::hint::black_box(resolved);

        let t = Instant::now();
        let edges = c
            .models
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.upstream.iter().map(move |&u| (u, i)));
        let graph = ModelGraph::new(c.models.len(), edges);
        let cycles = graph.cycles();
        let order = graph.topological_order();
        r.graph = t.elapsed();
        if !cycles.is_empty() || order.len() != n {
            return Err(format!(
                "graph rebuild disagrees: {} cycles, {} ordered",
                cycles.len(),
                order.len()
            ));
        }

        let t = Instant::now();
        drop(c);
        r.drop = t.elapsed();

        // Typing off: the same compile with `[transform] analysis = "off"`, so no model is
        // lowered to a DataFusion plan (and versions carry no plan fingerprint).
        let config = dir.join("phlo.toml");
        let original = std::fs::read_to_string(&config).map_err(|e| format!("phlo.toml: {e}"))?;
        let off = original.replacen("[transform]\n", "[transform]\nanalysis = \"off\"\n", 1);
        std::fs::write(&config, &off).map_err(|e| format!("phlo.toml: {e}"))?;
        let loaded = Workspace::load(dir);
        std::fs::write(&config, &original).map_err(|e| format!("phlo.toml: {e}"))?;
        let ws = loaded.map_err(|d| format!("Workspace::load: {}", d.message))?;
        let (catalog, catalog_diags) = CatalogSnapshot::load(&ws);
        let t = Instant::now();
        let c = Compilation::compile(ws, catalog, catalog_diags);
        r.compile_no_typing = t.elapsed();
        if c.diagnostics.has_errors() || c.models.iter().any(|m| m.plan_fingerprint.is_some()) {
            return Err("compile with analysis off should have no errors and no plans".into());
        }
        drop(c);

        // An empty catalog leaves every source unknown: no model is typed (its input schema
        // is unknown) and no version is computed (its source state is unknown).
        let ws = Workspace::load(dir).map_err(|d| format!("Workspace::load: {}", d.message))?;
        let t = Instant::now();
        let c = Compilation::compile(ws, CatalogSnapshot::default(), Vec::new());
        r.compile_bare = t.elapsed();
        if c.diagnostics.has_errors()
            || c.models
                .iter()
                .any(|m| m.version.is_some() || m.plan_fingerprint.is_some())
        {
            return Err(
                "compile without a catalog should have no errors, plans or versions".into(),
            );
        }
        drop(c);

        // Baseline: walk the tree and read every .sql file with std only.
        let t = Instant::now();
        let bytes = read_all_sql(dir);
        r.raw_read = t.elapsed();
        std::hint::black_box(bytes);

        out.push(r);
    }
    drop(tmp);
    Ok(SizeResult {
        n,
        summary,
        reps: out,
    })
}

/// Fails (with the first diagnostics) unless the compilation is clean and complete.
fn validate(c: &Compilation, n: usize) -> Result<(), String> {
    if c.diagnostics.has_errors() {
        let mut msg = format!(
            "the generated {n}-model workspace has {} compile error(s):",
            c.diagnostics.error_count()
        );
        for d in c.diagnostics.iter().filter(|d| d.is_error()).take(20) {
            msg.push_str(&format!(
                "\n  {} {}:{}: {}",
                d.code,
                d.file.as_deref().unwrap_or("-"),
                d.line.unwrap_or(0),
                d.message
            ));
        }
        return Err(msg);
    }
    if c.models.len() != n || c.order.len() != n {
        return Err(format!(
            "expected {n} models in order, got {} models and {} ordered",
            c.models.len(),
            c.order.len()
        ));
    }
    if let Some(m) = c.models.iter().find(|m| m.version.is_none()) {
        return Err(format!("model {} has no version", m.name));
    }
    Ok(())
}

fn read_all_sql(dir: &Path) -> usize {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() && path.extension().is_some_and(|x| x == "sql") => {
                    total += std::fs::read(&path).map(|b| b.len()).unwrap_or(0);
                }
                _ => {}
            }
        }
    }
    total
}

/// Current resident set size from /proc/self/statm (Linux; `None` elsewhere).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * if page > 0 { page as u64 } else { 4096 })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn min_median(reps: &[Rep], f: impl Fn(&Rep) -> Duration) -> (Duration, Duration) {
    let mut v: Vec<Duration> = reps.iter().map(f).collect();
    v.sort();
    (v[0], v[v.len() / 2])
}

fn print_report(results: &[SizeResult], reps: usize) {
    println!();
    println!(
        "phlo-transform compile front end: {reps} run(s) per size, times in ms as min / median"
    );
    println!();
    println!(
        "{:>7}  {:>17}  {:>15}  {:>17}  {:>17}  {:>12}",
        "models", "load", "catalog", "compile", "total", "models/s"
    );
    for r in results {
        let cell = |f: &dyn Fn(&Rep) -> Duration| {
            let (lo, med) = min_median(&r.reps, f);
            format!("{:.1} / {:.1}", ms(lo), ms(med))
        };
        let (_, total_med) = min_median(&r.reps, |x| x.total);
        println!(
            "{:>7}  {:>17}  {:>15}  {:>17}  {:>17}  {:>12.0}",
            r.n,
            cell(&|x| x.load),
            cell(&|x| x.catalog),
            cell(&|x| x.compile),
            cell(&|x| x.total),
            r.n as f64 / total_med.as_secs_f64()
        );
    }
    println!();
    println!("Breakdown of compile (median ms; from separate passes, so parts are estimates):");
    println!(
        "{:>7}  {:>9}  {:>9}  {:>10}  {:>8}  {:>7}  {:>9}  {:>8}  {:>7}",
        "models", "raw read", "load", "parse etc", "resolve", "graph", "versions", "typing", "drop"
    );
    for r in results {
        let med = |f: &dyn Fn(&Rep) -> Duration| min_median(&r.reps, f).1;
        let compile = med(&|x| x.compile);
        let no_typing = med(&|x| x.compile_no_typing);
        let bare = med(&|x| x.compile_bare);
        let resolve = med(&|x| x.resolve);
        let graph = med(&|x| x.graph);
        println!(
            "{:>7}  {:>9.1}  {:>9.1}  {:>10.1}  {:>8.1}  {:>7.1}  {:>9.1}  {:>8.1}  {:>7.1}",
            r.n,
            ms(med(&|x| x.raw_read)),
            ms(med(&|x| x.load)),
            ms(bare.saturating_sub(resolve + graph)),
            ms(resolve),
            ms(graph),
            ms(no_typing.saturating_sub(bare)),
            ms(compile.saturating_sub(no_typing)),
            ms(med(&|x| x.drop)),
        );
    }
    println!();
    println!(
        "  raw read   walk the tree and read every .sql file with std::fs only (I/O floor of load)"
    );
    println!(
        "  parse etc  compile with an empty catalog (nothing typed, no versions) minus resolve and"
    );
    println!(
        "             graph: SQL parsing, relation extraction, key tests, typing-session set-up"
    );
    println!("  versions   compile with analysis off minus compile with an empty catalog:");
    println!("             canonical SQL text and version hashes");
    println!(
        "  typing     compile minus compile with `analysis = \"off\"`: lowering every model to a"
    );
    println!("             DataFusion LogicalPlan (statement_to_plan) and the plan fingerprints");
    println!(
        "  drop       freeing the Compilation (ASTs, plans); the CLI leaks it at exit instead"
    );
    let mib = |b: Option<u64>| {
        b.map_or("n/a".to_string(), |b| {
            format!("{:.0} MiB", b as f64 / 1048576.0)
        })
    };
    for r in results {
        println!(
            "  N={}: resident memory grew {} during load and {} during catalog + compile (first run)",
            r.n,
            mib(r.reps[0].rss_load),
            mib(r.reps[0].rss_compile)
        );
    }
    for r in results {
        let s = &r.summary;
        println!(
            "  N={}: {} layers, {} tables / {} views, {} reads, {} KiB SQL",
            r.n,
            s.layers,
            s.tables,
            s.models - s.tables,
            s.edges,
            s.bytes / 1024
        );
    }
}
