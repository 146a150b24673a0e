//! Incremental versus full builds on one large model, through the real binary.
//!
//! A generator workspace writes `N` rows (id, day, amount, ts) as a Delta table; the bench
//! workspace reads it as a Delta source and builds the same query three ways: `@table`,
//! `@incremental window=ts` and `@incremental key=id`. After the first (full) build, 1 % new
//! rows are appended to the source and the bench times the second run of each model (the
//! run report's per-model `duration_ms`).
//!
//! ```text
//! cargo build --release && cargo bench --bench incremental              # N = 1M and 10M
//! PHLO_BENCH_SIZES=2000000 cargo bench --bench incremental
//! ```
//!
//! Under `cargo test --benches` it runs a quick smoke test with 20,000 rows.
//! See docs/performance.md for the figures.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const MODELS: &[(&str, &str)] = &[
    ("shop.orders_full", "-- @table\n"),
    ("shop.orders_window", "-- @incremental window=ts\n"),
    ("shop.orders_key", "-- @incremental key=id\n"),
];

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn run(dir: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_phlo-transform"))
        .arg("-C")
        .arg(dir)
        .args(["run", "--json"])
        .env_remove("PHLO_STATE_URL")
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("run --json")
}

/// (duration_ms, write) of `name` in a run report.
fn timing(report: &Value, name: &str) -> (u64, String) {
    let m = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap();
    (
        m["duration_ms"].as_u64().unwrap_or(0),
        m["write"].as_str().unwrap_or("-").to_string(),
    )
}

fn generate(generator: &Path, rows: u64) {
    write(
        &generator.join("phlo.toml"),
        &format!("[transform]\n\n[vars]\nn = {}\n", rows + 1),
    );
    run(generator);
}

fn main() {
    let bench_mode = std::env::args().skip(1).any(|a| a == "--bench");
    let sizes: Vec<u64> = if bench_mode {
        std::env::var("PHLO_BENCH_SIZES")
            .ok()
            .map(|s| s.split(',').filter_map(|p| p.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![1_000_000, 10_000_000])
    } else {
        vec![20_000]
    };
    println!("rows        model               first run   second run (+1 %)   write");
    for n in sizes {
        let tmp = tempfile::tempdir().unwrap();
        let generator = tmp.path().join("generator");
        let ws = tmp.path().join("ws");
        write(
            &generator.join("transforms/gen/orders.sql"),
            "-- @incremental window=id\n\
             select id, id % 1000 as day, cast(id as double) * 1.5 as amount, id as ts\n\
             from (select unnest(range(1, {{ var(\"n\") }})) as id) as t\n",
        );
        generate(&generator, n);
        let source = generator.join(".phlo/warehouse/gen.orders");
        write(
            &ws.join("phlo.toml"),
            &format!(
                "[transform]\n\n[source.\"shop.orders\"]\nlocation = \"{}\"\nformat = \"delta\"\n",
                source.display()
            ),
        );
        for (name, header) in MODELS {
            let file = name.trim_start_matches("shop.");
            write(
                &ws.join(format!("transforms/shop/{file}.sql")),
                &format!("{header}select id, day, amount, ts from shop.orders\n"),
            );
        }
        let first = run(&ws);
        generate(&generator, n + n / 100);
        let second = run(&ws);
        for (name, _) in MODELS {
            let (a, _) = timing(&first, name);
            let (b, write) = timing(&second, name);
            println!("{n:<11} {name:<19} {a:>7} ms   {b:>10} ms        {write}");
        }
    }
}
