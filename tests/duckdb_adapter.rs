//! The DuckDB adapter on a real DuckDB (libduckdb 1.5.6 from scripts/duckdb.sh; built with
//! `--features duckdb`, as scripts/test.sh does), over tests/warehouse/scenarios.rs: the 22
//! TPC-H queries as `@table` models give the local engine's rows, read back by the Python
//! `duckdb` package as an independent reader; SPEC §64 partial failure; incremental
//! strategies equal to a full rebuild; kill -9 + `run --resume`; `--model-timeout`
//! interrupting a running query.

#![cfg(feature = "duckdb")]

mod common;
#[path = "../benches/support/generate.rs"]
#[allow(dead_code)]
mod generate;
#[path = "warehouse/interrupt.rs"]
mod interrupt;
#[path = "warehouse/rows.rs"]
mod rows;
#[path = "warehouse/scenarios.rs"]
mod scenarios;
#[path = "warehouse/tpch_data.rs"]
mod tpch_data;
#[path = "warehouse/types.rs"]
mod types;

use common::{run, write_file};
use phlo_transform_adapter::duckdb::Connection;
use rows::Row;
use scenarios::Warehouse;
use std::path::{Path, PathBuf};

/// A DuckDB database file. Each call opens it anew: the binary holds DuckDB's file lock while
/// it runs.
struct DuckDb(PathBuf);

impl DuckDb {
    /// `warehouse.duckdb` in `dir` (a workspace, or beside the ones a scenario creates).
    fn in_dir(dir: &Path) -> DuckDb {
        DuckDb(dir.join("warehouse.duckdb"))
    }

    /// Tables and their comments, read by Python `duckdb`.
    fn read(&self, tables: &[String]) -> serde_json::Value {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/duckdb_rows.py");
        let out = std::process::Command::new("python3")
            .arg(script)
            .arg(&self.0)
            .args(tables)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    }
}

impl Warehouse for DuckDb {
    /// The database file by its absolute path: the scenarios create their workspaces.
    fn adapter_toml(&self) -> String {
        format!("\n[adapter]\ntype = \"duckdb\"\npath = {:?}\n", self.0)
    }

    fn execute(&self, sql: &str) {
        Connection::open(&self.0)
            .expect("DuckDB opens")
            .execute_batch(sql)
            .unwrap_or_else(|e| panic!("{e}: {sql}"));
    }

    fn scalar(&self, sql: &str) -> Option<String> {
        Connection::open(&self.0)
            .expect("DuckDB opens")
            .query_row(sql, [], |r| r.get::<_, Option<String>>(0))
            .unwrap_or_else(|e| panic!("{e}: {sql}"))
    }

    fn rows(&self, tables: &[String]) -> Vec<Vec<Row>> {
        let read = self.read(tables);
        tables
            .iter()
            .map(|t| rows::from_json_rows(&read[t]["rows"]))
            .collect()
    }

    fn column_comment(&self, schema: &str, table: &str, column: &str) -> String {
        format!(
            "SELECT comment FROM duckdb_columns() WHERE schema_name = '{schema}' \
             AND table_name = '{table}' AND column_name = '{column}'"
        )
    }

    fn dialect(&self) -> &'static str {
        "duckdb"
    }

    fn column_types(&self, tables: &[String]) -> Vec<Vec<String>> {
        let read = self.read(tables);
        tables
            .iter()
            .map(|t| {
                let names = read[t]["columns"].as_array().unwrap();
                let types = read[t]["types"].as_array().unwrap();
                names
                    .iter()
                    .zip(types)
                    .map(|(n, ty)| {
                        format!(
                            "{}:{}",
                            n.as_str().unwrap(),
                            types::canonical(ty.as_str().unwrap())
                        )
                    })
                    .collect()
            })
            .collect()
    }
}

/// Where the column types of the 22 TPC-H tables on DuckDB differ from the ones `check`
/// reports under `dialect = "duckdb"` (docs/dialects.md, "Differences that remain"): an
/// unaliased aggregate is named after the expression as written on DuckDB, after the
/// qualified column on the local engine.
const TPCH_TYPE_DIFFERENCES: [&str; 1] = [
    "tpch.q18: columns [\"c_name:varchar\", \"c_custkey:bigint\", \"o_orderkey:bigint\", \"o_orderdate:date\", \"o_totalprice:decimal(15,2)\", \"sum(lineitem.l_quantity):decimal(38,2)\"] vs [\"c_name:varchar\", \"c_custkey:bigint\", \"o_orderkey:bigint\", \"o_orderdate:date\", \"o_totalprice:decimal(15,2)\", \"sum(l_quantity):decimal(38,2)\"]",
];

#[test]
fn tpch_tables_on_duckdb_equal_the_local_engine() {
    let dir = tempfile::tempdir().unwrap();
    let db = DuckDb::in_dir(dir.path());
    let ws = scenarios::tpch_equals_the_local_engine(&db, &TPCH_TYPE_DIFFERENCES);
    let names: Vec<String> = (1..=22).map(|i| format!("tpch.q{i:02}")).collect();
    let read = db.read(&names);
    for name in &names {
        assert_eq!(read[name]["comment"], "phlo.strategy=table", "{name}");
    }
    let inspect = scenarios::ok(&run(ws.path(), &["inspect", "tpch.q01", "--json"]));
    assert_eq!(
        (inspect["adapter"].as_str(), inspect["relation"].as_str()),
        (Some("duckdb"), Some("tpch.q01"))
    );
}

/// The realistic generated workspace of benches/ (120 models: joins, CTEs, aggregates to
/// key and month, windows, CASE tiers, date_trunc/extract, COALESCE, conditional sums, shares
/// of total; views and tables) on DuckDB and on the local engine in its dialect: equal column
/// types for every model and equal rows for every table (issue 37).
#[test]
fn realistic_workspace_on_duckdb_equals_the_local_engine() {
    let dir = tempfile::tempdir().unwrap();
    let found = scenarios::realistic_differences(&DuckDb::in_dir(dir.path()), dir.path(), 120);
    assert_eq!(found.types, Vec::<String>::new(), "column types");
    assert_eq!(found.rows, Vec::<String>::new(), "rows");
}

#[test]
fn diff_reads_the_model_and_its_table_from_duckdb() {
    let ws = tempfile::tempdir().unwrap();
    let report = scenarios::diff_reads_the_warehouse(ws.path(), &DuckDb::in_dir(ws.path()));
    let candidate = report["candidate"]["description"].as_str().unwrap();
    assert!(candidate.contains("run by duckdb"), "{candidate}");
}

#[test]
fn a_large_table_is_diffed_in_duckdb_by_one_query() {
    let ws = tempfile::tempdir().unwrap();
    scenarios::large_diff_runs_in_the_warehouse(ws.path(), &DuckDb::in_dir(ws.path()));
}

#[test]
fn spec_64_partial_failure_on_duckdb() {
    let ws = tempfile::tempdir().unwrap();
    let report = scenarios::spec64_partial_failure(ws.path(), &DuckDb::in_dir(ws.path()));
    let b = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "x.b")
        .unwrap();
    assert_eq!(b["error"]["category"], "sql", "{b:#}");
    let message = b["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("Could not convert string 'seven'"),
        "{message}"
    );
    // DuckDB's caret (under the CAST) points into the model file.
    assert!(
        message.contains("at transforms/x/b.sql:2:8"),
        "the engine's position maps into the model: {message}"
    );
}

#[test]
fn a_database_file_another_process_holds_is_a008_with_help() {
    let ws = tempfile::tempdir().unwrap();
    let db = DuckDb::in_dir(ws.path());
    write_file(ws.path(), "phlo.toml", &db.adapter_toml());
    write_file(
        ws.path(),
        "transforms/x/a.sql",
        "-- @table\nselect 1 as id\n",
    );
    // This test process holds DuckDB's lock on the file while the binary tries to open it.
    let held = Connection::open(&db.0).expect("DuckDB opens");
    let out = run(ws.path(), &["run", "--json"]);
    drop(held);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let report = out.json();
    let d = &report["diagnostics"][0];
    assert_eq!(d["code"], "A008", "{report:#}");
    assert!(d["message"].as_str().unwrap().contains("lock"), "{d:#}");
    assert!(
        d["help"].as_str().unwrap().contains("no other process"),
        "{d:#}"
    );
    // Nothing was built or recorded; once the file is free the run builds the model.
    let state = run(ws.path(), &["state", "runs", "--json"]);
    assert!(!state.stdout.contains("x.a"), "{}", state.stdout);
    let report = scenarios::ok(&run(ws.path(), &["run", "--json"]));
    assert_eq!(report["models"][0]["status"], "passed");
}

/// A `path` that cannot be a database file (a directory there) is A008 with a help line
/// naming what to check; nothing is recorded, and with a usable path the run builds.
#[test]
fn a_database_path_that_is_no_database_file_is_a008_with_help() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("taken.duckdb")).unwrap();
    write_file(
        ws.path(),
        "phlo.toml",
        "[adapter]\ntype = \"duckdb\"\npath = \"taken.duckdb\"\n",
    );
    write_file(
        ws.path(),
        "transforms/x/a.sql",
        "-- @table\nselect 1 as id\n",
    );
    let out = run(ws.path(), &["run", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let report = out.json();
    let d = &report["diagnostics"][0];
    assert_eq!(d["code"], "A008", "{report:#}");
    assert!(
        d["message"].as_str().unwrap().contains("taken.duckdb"),
        "{d:#}"
    );
    assert!(
        d["help"].as_str().unwrap().contains("not a directory"),
        "{d:#}"
    );
    let text = run(ws.path(), &["run"]);
    assert!(
        text.stderr.contains("error[A008]") && text.stderr.contains("help:"),
        "{}",
        text.stderr
    );
    let state = run(ws.path(), &["state", "runs", "--json"]);
    assert!(!state.stdout.contains("x.a"), "{}", state.stdout);
    write_file(
        ws.path(),
        "phlo.toml",
        "[adapter]\ntype = \"duckdb\"\npath = \"warehouse.duckdb\"\n",
    );
    let report = scenarios::ok(&run(ws.path(), &["run", "--json"]));
    assert_eq!(report["models"][0]["status"], "passed");
}

#[test]
fn every_incremental_strategy_equals_a_full_rebuild() {
    for case in scenarios::INCREMENTAL {
        let ws = tempfile::tempdir().unwrap();
        scenarios::incremental_equals_full(ws.path(), &DuckDb::in_dir(ws.path()), case);
    }
}

#[test]
fn a_killed_run_resumes_on_duckdb_without_rebuilding_what_passed() {
    let ws = tempfile::tempdir().unwrap();
    scenarios::killed_run_resumes(ws.path(), &DuckDb::in_dir(ws.path()));
}

#[test]
fn model_timeout_interrupts_the_running_query() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let db = DuckDb::in_dir(root);
    db.execute("CREATE SCHEMA raw");
    db.execute("CREATE TABLE raw.big AS SELECT range AS id FROM range(200000)");
    write_file(
        root,
        "phlo.toml",
        &format!(
            "[source.\"raw.big\".columns]\nid = \"bigint\"\n{}",
            db.adapter_toml()
        ),
    );
    write_file(
        root,
        "transforms/x/slow.sql",
        "-- @table\nselect count(*) as n from raw.big a, raw.big b, raw.big c where a.id + b.id + c.id = -1\n",
    );
    let started = std::time::Instant::now();
    let out = run(root, &["run", "--json", "--model-timeout", "1s"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["models"][0]["error"]["code"], "E003");
    // Interrupted, not waited for: the query alone would run for hours.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(
        db.scalar("SELECT CAST(count(*) AS VARCHAR) FROM duckdb_tables() WHERE schema_name = 'x'"),
        Some("0".into()),
        "nothing half-built is left"
    );
}

#[test]
fn warehouse_relations_are_typed_from_duckdb_and_cached_for_offline_checks() {
    let ws = tempfile::tempdir().unwrap();
    let db = DuckDb::in_dir(ws.path());
    let moved = ws.path().join("elsewhere.duckdb");
    scenarios::warehouse_relations_are_typed_from_the_catalog_and_cached(
        ws.path(),
        &db,
        // The database file is gone (renamed), so the catalog cannot be read.
        &|| std::fs::rename(&db.0, &moved).unwrap(),
        &|| std::fs::rename(&moved, &db.0).unwrap(),
    );
}

#[test]
fn a_source_dropped_behind_our_back_fails_with_a003_and_the_next_run_repairs() {
    let ws = tempfile::tempdir().unwrap();
    scenarios::a_source_dropped_behind_our_back_fails_and_the_next_run_repairs(
        ws.path(),
        &DuckDb::in_dir(ws.path()),
    );
}

#[test]
fn a_target_pointed_at_another_database_file_is_typed_from_that_file() {
    let ws = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    scenarios::another_warehouse_is_never_typed_from_the_first_ones_schemas(
        ws.path(),
        &DuckDb(files.path().join("first.duckdb")),
        &DuckDb(files.path().join("second.duckdb")),
    );
}

#[test]
fn a_warehouse_relation_only_a_test_reads_is_typed_from_duckdb() {
    let ws = tempfile::tempdir().unwrap();
    scenarios::a_warehouse_relation_only_a_test_reads_is_typed_from_the_catalog(
        ws.path(),
        &DuckDb::in_dir(ws.path()),
    );
}
