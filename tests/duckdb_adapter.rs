//! The DuckDB adapter on a real DuckDB (libduckdb 1.5.6 from scripts/duckdb.sh; built with
//! `--features duckdb`): the 22 TPC-H queries as `@table` models give the local engine's
//! rows, read back by the Python `duckdb` package as an independent reader; SPEC §64 partial
//! failure; incremental strategies equal to a full rebuild; `--model-timeout` interrupting a
//! running query.

#![cfg(feature = "duckdb")]

mod common;
#[path = "warehouse/rows.rs"]
mod rows;
#[path = "warehouse/tpch_data.rs"]
mod tpch_data;

use common::{by_name, run, workspace, write_file, Output};
use phlo_transform_adapter::duckdb::Connection;
use rows::Row;
use std::path::Path;

const DB: &str = "warehouse.duckdb";

fn execute_all(db: &Path, statements: &[String]) {
    let conn = Connection::open(db).expect("DuckDB opens");
    for s in statements {
        conn.execute_batch(s).unwrap_or_else(|e| panic!("{e}: {s}"));
    }
}

/// Rows and comments of `schema.table`s, read by Python `duckdb`.
fn read(db: &Path, tables: &[String]) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/duckdb_rows.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(db)
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

fn json_rows(v: &serde_json::Value) -> Vec<Row> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(rows::from_json).collect())
        .collect()
}

fn delta_rows(dirs: &[std::path::PathBuf]) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/table_rows.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .args(dirs)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn adapter_toml() -> String {
    format!("\n[adapter]\ntype = \"duckdb\"\npath = \"{DB}\"\n")
}

fn append(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    let mut s = std::fs::read_to_string(&path).unwrap_or_default();
    s.push_str(text);
    std::fs::write(path, s).unwrap();
}

fn ok(out: &Output) -> serde_json::Value {
    assert_eq!(
        out.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    out.json()
}

#[test]
fn tpch_tables_on_duckdb_equal_the_local_engine() {
    let tables = tpch_data::generate(200, 1500);
    let local = workspace("tpch");
    tpch_data::write_parquet(&tables, &local.path().join("data"));
    let mut toml = String::from("\n[transform]\ndefault_materialization = \"table\"\n");
    for t in &tables {
        toml.push_str(&format!(
            "\n[source.\"tpch.{0}\"]\nlocation = \"data/{0}.parquet\"\n",
            t.name
        ));
    }
    append(local.path(), "phlo.toml", &toml);
    let report = ok(&run(local.path(), &["run", "--json"]));
    assert!(by_name(&report, "status").values().all(|s| s == "passed"));

    let duck = workspace("tpch");
    let db = duck.path().join(DB);
    execute_all(&db, &tpch_data::sql_statements(&tables, "tpch"));
    append(
        duck.path(),
        "phlo.toml",
        &format!(
            "\n[transform]\ndefault_materialization = \"table\"\n{}",
            adapter_toml()
        ),
    );
    let report = ok(&run(duck.path(), &["run", "--json"]));
    assert_eq!(report["adapter"], "duckdb");
    assert!(
        by_name(&report, "status").values().all(|s| s == "passed"),
        "{report:#}"
    );

    let dirs: Vec<_> = (1..=22)
        .map(|i| local.path().join(format!(".phlo/warehouse/tpch.q{i:02}")))
        .collect();
    let names: Vec<String> = (1..=22).map(|i| format!("tpch.q{i:02}")).collect();
    let expected = delta_rows(&dirs);
    let actual = read(&db, &names);
    let mut differences = Vec::new();
    for (dir, name) in dirs.iter().zip(&names) {
        let e = json_rows(&expected[dir.to_str().unwrap()]);
        let a = json_rows(&actual[name]);
        if let Some(d) = rows::difference(e, a) {
            differences.push(format!("{name}: {d}"));
        }
        assert_eq!(actual[name]["comment"], "phlo.strategy=table");
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    let again = ok(&run(duck.path(), &["run", "--json"]));
    assert!(by_name(&again, "status").values().all(|s| s == "skipped"));
}

#[test]
fn spec_64_partial_failure_on_duckdb() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(root, "phlo.toml", &adapter_toml());
    write_file(root, "transforms/x/a.sql", "-- @table\nselect 1 as id\n");
    write_file(
        root,
        "transforms/x/b.sql",
        "-- @table\nselect cast('seven' as integer) as id from x.a\n",
    );
    write_file(
        root,
        "transforms/x/c.sql",
        "-- @table\nselect id from x.b\n",
    );
    write_file(root, "transforms/x/d.sql", "-- @table\nselect 2 as id\n");
    write_file(root, "transforms/x/e.sql", "-- @view\nselect id from x.d\n");
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        by_name(&out.json(), "status"),
        common::map(&[
            ("x.a", "passed"),
            ("x.b", "failed"),
            ("x.c", "blocked"),
            ("x.d", "passed"),
            ("x.e", "passed"),
        ])
    );
    let tables = read(&root.join(DB), &["x.a".into(), "x.d".into()]);
    assert_eq!(json_rows(&tables["x.d"]), vec![vec![Some("2".to_string())]]);
}

fn incremental_equals_full(directive: &str, more: &str) {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let db = root.join(DB);
    execute_all(
        &db,
        &[
            "CREATE SCHEMA raw".into(),
            "CREATE TABLE raw.events (id bigint, day date, amount decimal(10,2))".into(),
            "INSERT INTO raw.events VALUES (1, '2024-01-01', 1.50), (2, '2024-01-02', 2.00), (3, '2024-01-02', NULL)".into(),
        ],
    );
    write_file(
        root,
        "phlo.toml",
        &format!(
            "[source.\"raw.events\".columns]\nid = \"bigint\"\nday = \"date\"\namount = \"decimal(10,2)\"\n{}",
            adapter_toml()
        ),
    );
    let model = |extra: &str| {
        format!("{directive}\nselect id, day, amount * 2{extra} as doubled from raw.events\n")
    };
    write_file(root, "transforms/m/inc.sql", &model(""));
    ok(&run(root, &["run", "--json"]));
    execute_all(&db, &[format!("INSERT INTO raw.events VALUES {more}")]);
    write_file(root, "transforms/m/inc.sql", &model(" + 0"));
    let report = ok(&run(root, &["run", "--json"]));
    assert_ne!(report["models"][0]["write"], "full", "{report:#}");
    let incremental = json_rows(&read(&db, &["m.inc".into()])["m.inc"]);
    let full = ok(&run(root, &["run", "--json", "--full-refresh"]));
    assert_eq!(full["models"][0]["write"], "full");
    let rebuilt = read(&db, &["m.inc".into()]);
    assert_eq!(
        rows::difference(incremental, json_rows(&rebuilt["m.inc"])),
        None
    );
}

#[test]
fn incremental_strategies_equal_a_full_rebuild() {
    let more = "(4, '2024-01-03', 4.00), (5, '2024-01-04', 2.50)";
    for directive in [
        "-- @incremental append",
        "-- @incremental key=id",
        "-- @incremental partition=day",
        "-- @incremental window=day",
    ] {
        incremental_equals_full(directive, more);
    }
}

#[test]
fn model_timeout_interrupts_the_running_query() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    execute_all(
        &root.join(DB),
        &[
            "CREATE SCHEMA raw".into(),
            "CREATE TABLE raw.big AS SELECT range AS id FROM range(200000)".into(),
        ],
    );
    write_file(
        root,
        "phlo.toml",
        &format!(
            "[source.\"raw.big\".columns]\nid = \"bigint\"\n{}",
            adapter_toml()
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
}
