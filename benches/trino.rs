//! The Trino adapter on the real Trino + Nessie (`scripts/services.sh up`; PHLO_TEST_TRINO_URL,
//! PHLO_TEST_NESSIE_URL, PHLO_TEST_ICEBERG_LOCAL_ROOT as for the tests), through the binary:
//!
//! - **Per-model overhead**: N small `@table` models over `tpch.tiny.orders`, built one at a
//!   time (`--jobs 1`). Each model's wall time (its `started_at` → `finished_at` in the run
//!   report) is set against the time Trino was busy with that model's statements (the union
//!   of `created` → `end` of every query in `system.runtime.queries` that names its table);
//!   the difference is phlo-transform's own cost per model: scheduling and state, the gaps
//!   between statements, HTTP polling, Nessie and the Iceberg metadata read.
//! - **Generated workspace**: the 1,000-model synthetic workspace (`benches/support`, small
//!   shape: ten layers, mostly views, in ten namespaces) built on Trino with the workspace's
//!   `max_concurrency` (4) and run again, as generated and with every model a table. Models
//!   that fail are counted by error, not hidden: as generated, tables over eight layers of
//!   views exceed Trino's limit of 150 stages per query (`QUERY_HAS_TOO_MANY_STAGES`).
//!
//! ```text
//! cargo bench --bench trino                              # 10 models; the 1,000-model workspace
//! PHLO_BENCH_SIZES=200 PHLO_BENCH_MODELS=20 cargo bench --bench trino
//! PHLO_BENCH_MODELS=0 PHLO_BENCH_VARIANTS=tables cargo bench --bench trino  # one part only
//! ```
//!
//! Under `cargo test --benches` (no `--bench` argument) it runs 3 models and 20 generated
//! ones. Figures in docs/performance.md.

#[path = "support/generate.rs"]
#[allow(dead_code)]
mod generate;
#[path = "../tests/warehouse/trino_env.rs"]
mod trino_env;

use phlo_transform_adapter::trino::client::{QueryResult, Trino, TrinoConfig};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use trino_env::{adapter_toml, env_or, trino_url, unique};

fn trino(sql: &str) -> QueryResult {
    let client = Trino::new(TrinoConfig::new(
        url::Url::parse(&trino_url()).unwrap(),
        "phlo-bench-reader",
    ))
    .unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(client.execute(sql))
        .unwrap_or_else(|e| panic!("{e}: {sql}"))
}

/// Runs the binary in `root`; the JSON report and the wall time.
fn run(root: &Path, args: &[&str]) -> (Value, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_phlo-transform"))
        .arg("-C")
        .arg(root)
        .args(args)
        .env_remove("PHLO_STATE_URL")
        .env("NO_COLOR", "1")
        .output()
        .expect("binary runs");
    let wall = started.elapsed();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, wall)
}

fn statuses(report: &Value) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for m in report["models"].as_array().unwrap() {
        *out.entry(m["status"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn per_model_overhead(models: usize) {
    let schema = unique("bench_overhead");
    let user = unique("phlo-bench");
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    std::fs::write(root.join("phlo.toml"), adapter_toml(&schema, &user)).unwrap();
    std::fs::create_dir_all(root.join("transforms/ov")).unwrap();
    for i in 0..models {
        std::fs::write(
            root.join(format!("transforms/ov/m{i:03}.sql")),
            format!(
                "-- @table\nselect orderkey, custkey, totalprice, orderdate\nfrom tpch.tiny.orders\nwhere orderkey % {models} = {i}\n"
            ),
        )
        .unwrap();
    }
    let (report, wall) = run(root, &["run", "--json", "--jobs", "1"]);
    assert_eq!(statuses(&report).get("passed"), Some(&models), "{report:#}");

    // Trino's own time per model: the union of the [created, end] intervals of the
    // statements naming the model's table, within the model's own [started, finished].
    let queries = trino(&format!(
        "SELECT query, to_unixtime(created) * 1000, to_unixtime(\"end\") * 1000 \
         FROM system.runtime.queries WHERE \"user\" = '{user}' AND \"end\" IS NOT NULL"
    ));
    let millis = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap())
            .unwrap()
            .timestamp_millis() as f64
    };
    let mut total_model = 0.0;
    let mut total_trino = 0.0;
    let mut total_ctas = 0.0;
    let mut statements = 0;
    let mut rows = Vec::new();
    for m in report["models"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        let table = format!("ov__{}", name.rsplit('.').next().unwrap());
        let (start, end) = (millis(&m["started_at"]), millis(&m["finished_at"]));
        let mut spans: Vec<(f64, f64)> = queries
            .rows
            .iter()
            .filter(|r| r[0].as_str().is_some_and(|q| q.contains(&table)))
            .filter_map(|r| Some((r[1].as_f64()?.max(start), r[2].as_f64()?.min(end))))
            .filter(|(a, b)| a < b)
            .collect();
        spans.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mut busy = 0.0;
        let mut reach = f64::MIN;
        for (a, b) in &spans {
            let a = a.max(reach);
            if *b > a {
                busy += b - a;
                reach = *b;
            }
        }
        // The model's own query: its CREATE OR REPLACE TABLE … AS.
        let ctas: f64 = queries
            .rows
            .iter()
            .filter(|r| {
                r[0].as_str()
                    .is_some_and(|q| q.starts_with("CREATE OR REPLACE TABLE") && q.contains(&table))
            })
            .filter_map(|r| Some(r[2].as_f64()? - r[1].as_f64()?))
            .sum();
        let model_ms = end - start;
        total_model += model_ms;
        total_trino += busy;
        total_ctas += ctas;
        statements += spans.len();
        rows.push((name.to_owned(), model_ms, busy, ctas, spans.len()));
    }
    println!(
        "per-model overhead on Trino ({models} @table models over tpch.tiny.orders, --jobs 1)"
    );
    println!(
        "  model        wall ms  Trino busy ms  statements  CTAS ms  beyond Trino ms  beyond CTAS ms"
    );
    for (name, model_ms, busy, ctas, n) in &rows {
        println!(
            "  {name:<11} {model_ms:>8.0} {busy:>14.0} {n:>11} {ctas:>8.0} {:>16.0} {:>15.0}",
            model_ms - busy,
            model_ms - ctas
        );
    }
    let n = models as f64;
    println!(
        "  mean        {:>8.0} {:>14.0} {:>11.1} {:>8.0} {:>16.0} {:>15.0}",
        total_model / n,
        total_trino / n,
        statements as f64 / n,
        total_ctas / n,
        (total_model - total_trino) / n,
        (total_model - total_ctas) / n
    );
    println!(
        "  whole run: {:.0} ms wall for {models} models ({:.0} ms outside the models: compile, \
         Trino metadata of the sources, state)",
        ms(wall),
        ms(wall) - total_model
    );
    if statements < models * 2 {
        println!(
            "  (only {statements} statements found: system.runtime.queries keeps the last 100 \
             queries; fewer models or a quieter server give complete figures)"
        );
    }
}

/// The generated workspace's CSV sources as Iceberg tables `iceberg.<ns>.seed_events`, where
/// its `<ns>.seed_events` resolve on Trino; a table whose comment is the digest of the file is
/// kept.
fn load_seeds(root: &Path) {
    for ns in 0..generate::NAMESPACES {
        let ns = format!("ns{ns:02}");
        let csv =
            std::fs::read_to_string(root.join(format!("sources/{ns}/seed_events.csv"))).unwrap();
        let digest = format!(
            "{:016x}",
            csv.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
            })
        );
        trino(&format!("CREATE SCHEMA IF NOT EXISTS iceberg.{ns}"));
        let current = trino(&format!(
            "SELECT comment FROM system.metadata.table_comments WHERE catalog_name = 'iceberg' \
             AND schema_name = '{ns}' AND table_name = 'seed_events'"
        ));
        if current.rows.first().and_then(|r| r[0].as_str()) == Some(digest.as_str()) {
            continue;
        }
        let values = generate::seed_values(root, &ns);
        trino(&format!(
            "CREATE OR REPLACE TABLE iceberg.{ns}.seed_events COMMENT '{digest}' AS \
             SELECT * FROM (VALUES {}) AS t (id, grp, amount, event_date)",
            values.join(", ")
        ));
    }
}

/// Why the models that did not pass failed: error code (and Trino's error name) → count.
fn failures(report: &Value) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for m in report["models"].as_array().unwrap() {
        if m["status"] == "failed" {
            let message = m["error"]["message"].as_str().unwrap_or_default();
            let name = message.split(':').next().unwrap_or_default();
            let key = format!("{} {name}", m["error"]["code"].as_str().unwrap_or("?"));
            *out.entry(key).or_default() += 1;
        }
    }
    out
}

/// The generated workspace built on Trino. With `all_tables`, every model is a `@table`
/// (`default_materialization = "table"`): as generated, most models are views, and the tables
/// above eight layers of views exceed Trino's stage limit once the views are inlined.
fn generated_workspace(n: usize, all_tables: bool) {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let summary = generate::generate_small(root, n).unwrap();
    load_seeds(root);
    let schema = unique("bench_ws");
    let mut toml = std::fs::read_to_string(root.join("phlo.toml")).unwrap();
    if all_tables {
        toml = toml.replace(
            "default_materialization = \"view\"",
            "default_materialization = \"table\"",
        );
    }
    toml.push_str(&adapter_toml(&schema, "phlo-bench"));
    std::fs::write(root.join("phlo.toml"), toml).unwrap();

    let (report, wall) = run(root, &["run", "--json"]);
    let counts = statuses(&report);
    let tables = if all_tables { n } else { summary.tables };
    println!(
        "generated workspace: {n} models ({tables} tables, {} views), max_concurrency 4: \
         build {:.1} s ({:.0} ms per model), {counts:?}",
        n - tables,
        wall.as_secs_f64(),
        ms(wall) / n as f64
    );
    let failed = failures(&report);
    if !failed.is_empty() {
        println!("  failures: {failed:?}");
    }
    let (again, wall) = run(root, &["run", "--json"]);
    println!(
        "  second run: {:.1} s, {:?}",
        wall.as_secs_f64(),
        statuses(&again)
    );
}

fn main() {
    let bench = std::env::args().skip(1).any(|a| a == "--bench");
    let models = std::env::var("PHLO_BENCH_MODELS")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(if bench { 10 } else { 3 });
    let sizes: Vec<usize> = match std::env::var("PHLO_BENCH_SIZES") {
        Ok(s) => s.split(',').filter_map(|p| p.trim().parse().ok()).collect(),
        Err(_) if bench => vec![1_000],
        Err(_) => vec![20],
    };
    // `generated` (as generated), `tables` (every model a table), or both.
    let variants = env_or("PHLO_BENCH_VARIANTS", "generated,tables");
    if models > 0 {
        per_model_overhead(models);
    }
    for n in sizes {
        for (variant, all_tables) in [("generated", false), ("tables", true)] {
            if variants.split(',').any(|v| v.trim() == variant) {
                generated_workspace(n, all_tables);
            }
        }
    }
}
