//! The PostgreSQL adapter on the real server (127.0.0.1:5432, or PHLO_TEST_POSTGRES_URL; a
//! fresh database per test; an unreachable server fails these tests): the 22 TPC-H queries as
//! `@table` models give the local engine's rows, SPEC §64 partial failure, incremental
//! strategies equal to a full rebuild, `--model-timeout` cancelling `pg_sleep` on the server,
//! and the diagnostics of a warehouse that cannot be used.

mod common;
#[path = "warehouse/rows.rs"]
mod rows;
#[path = "warehouse/tpch_data.rs"]
mod tpch_data;

use common::{by_name, run, workspace, write_file, Output};
use phlo_transform_state::testing::PgTestDb;
use rows::Row;
use sqlx::{Connection, Executor, PgConnection};
use std::path::Path;

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

async fn connect(url: &str) -> PgConnection {
    PgConnection::connect(url).await.expect("test database")
}

fn execute_all(url: &str, statements: &[String]) {
    block_on(async {
        let mut conn = connect(url).await;
        for s in statements {
            conn.execute(s.as_str())
                .await
                .unwrap_or_else(|e| panic!("{e}: {s}"));
        }
    })
}

/// Rows of `"schema"."table"` in PostgreSQL's text form.
fn pg_rows(url: &str, schema: &str, table: &str) -> Vec<Row> {
    block_on(async {
        let mut conn = connect(url).await;
        let texts: Vec<String> =
            sqlx::query_scalar(&format!("SELECT t::text FROM \"{schema}\".\"{table}\" t"))
                .fetch_all(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("reading {schema}.{table}: {e}"));
        texts.iter().map(|t| rows::parse_pg_record(t)).collect()
    })
}

fn pg_scalar(url: &str, sql: &str) -> Option<String> {
    block_on(async {
        let mut conn = connect(url).await;
        sqlx::query_scalar::<_, Option<String>>(sql)
            .fetch_one(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}: {sql}"))
    })
}

/// Rows of the local engine's Delta tables, read by Python `deltalake`.
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

fn adapter_toml(url: &str) -> String {
    format!("\n[adapter]\ntype = \"postgres\"\nurl = \"{url}\"\n")
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
fn tpch_tables_on_postgres_equal_the_local_engine() {
    let tables = tpch_data::generate(200, 1500);

    // The local engine reads the same data as Parquet files with the warehouse's types.
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
    assert!(
        by_name(&report, "status").values().all(|s| s == "passed"),
        "{report:#}"
    );

    // PostgreSQL holds the same rows in schema tpch, typed as the spec says.
    let db = PgTestDb::create_blocking();
    execute_all(db.url(), &tpch_data::sql_statements(&tables, "tpch"));
    let pg = workspace("tpch");
    append(
        pg.path(),
        "phlo.toml",
        &format!(
            "\n[transform]\ndefault_materialization = \"table\"\n{}",
            adapter_toml(db.url())
        ),
    );
    let report = ok(&run(pg.path(), &["run", "--json"]));
    let statuses = by_name(&report, "status");
    assert_eq!(statuses.len(), 22);
    assert!(statuses.values().all(|s| s == "passed"), "{report:#}");
    assert_eq!(report["adapter"], "postgres", "{report:#}");

    let dirs: Vec<_> = (1..=22)
        .map(|i| local.path().join(format!(".phlo/warehouse/tpch.q{i:02}")))
        .collect();
    let local_rows = delta_rows(&dirs);
    let mut differences = Vec::new();
    let mut non_empty = 0;
    for (i, dir) in dirs.iter().enumerate() {
        let expected: Vec<Row> = local_rows[dir.to_str().unwrap()]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_array().unwrap().iter().map(rows::from_json).collect())
            .collect();
        let actual = pg_rows(db.url(), "tpch", &format!("q{:02}", i + 1));
        non_empty += usize::from(!expected.is_empty());
        if let Some(d) = rows::difference(expected, actual) {
            differences.push(format!("q{:02}: {d}", i + 1));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    // The data exercises the queries: most return rows.
    assert!(non_empty >= 18, "only {non_empty} queries returned rows");

    // A second run skips everything; inspect names the physical relation.
    let again = ok(&run(pg.path(), &["run", "--json"]));
    assert!(by_name(&again, "status").values().all(|s| s == "skipped"));
    let inspect = ok(&run(pg.path(), &["inspect", "tpch.q01", "--json"]));
    assert_eq!(inspect["relation"], "tpch.q01");
    assert_eq!(inspect["adapter"], "postgres");
}

/// A → B → C and D → E (SPEC §64), B failing on the server.
fn spec64(root: &Path, url: &str) {
    write_file(root, "phlo.toml", &adapter_toml(url));
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
}

#[test]
fn spec_64_partial_failure_on_postgres_and_the_error_points_into_the_model() {
    let db = PgTestDb::create_blocking();
    let ws = tempfile::tempdir().unwrap();
    spec64(ws.path(), db.url());
    let out = run(ws.path(), &["run", "--json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = out.json();
    assert_eq!(
        by_name(&report, "status"),
        common::map(&[
            ("x.a", "passed"),
            ("x.b", "failed"),
            ("x.c", "blocked"),
            ("x.d", "passed"),
            ("x.e", "passed"),
        ])
    );
    let b = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "x.b")
        .unwrap();
    let message = b["error"]["message"].as_str().unwrap();
    assert!(message.contains("22P02"), "{message}");
    assert_eq!(b["error"]["category"], "sql");
    assert!(
        message.contains("transforms/x/b.sql:2:13"),
        "the engine's position maps into the model: {message}"
    );
    // What failed was not built, and is not recorded as built.
    assert_eq!(pg_scalar(db.url(), "SELECT to_regclass('x.b')::text"), None);
    assert_eq!(
        pg_scalar(db.url(), "SELECT string_agg(id::text, ',') FROM x.e"),
        Some("2".into())
    );
    // Fixing B builds B and C only.
    write_file(
        ws.path(),
        "transforms/x/b.sql",
        "-- @table\nselect id + 1 as id from x.a\n",
    );
    let report = ok(&run(ws.path(), &["run", "--json"]));
    let s = by_name(&report, "status");
    assert_eq!((s["x.b"].as_str(), s["x.c"].as_str()), ("passed", "passed"));
    assert_eq!(
        (s["x.a"].as_str(), s["x.d"].as_str()),
        ("skipped", "skipped")
    );
    assert_eq!(
        pg_scalar(db.url(), "SELECT string_agg(id::text, ',') FROM x.c"),
        Some("2".into())
    );
}

#[test]
fn a_table_rebuild_keeps_the_views_that_read_it() {
    let db = PgTestDb::create_blocking();
    let ws = tempfile::tempdir().unwrap();
    spec64(ws.path(), db.url());
    write_file(
        ws.path(),
        "transforms/x/b.sql",
        "-- @table\nselect id from x.a\n",
    );
    ok(&run(ws.path(), &["run", "--json"]));
    // D changes; E (a view over it) is unchanged and must survive D's swap.
    write_file(
        ws.path(),
        "transforms/x/d.sql",
        "-- @table\nselect 3 as id\n",
    );
    let report = ok(&run(ws.path(), &["run", "--json"]));
    assert_eq!(by_name(&report, "status")["x.d"], "passed");
    assert_eq!(
        pg_scalar(db.url(), "SELECT string_agg(id::text, ',') FROM x.e"),
        Some("3".into())
    );
    let plan = ok(&run(ws.path(), &["plan", "--json"]));
    assert!(by_name(&plan, "decision").values().all(|d| d == "skip"));
}

#[test]
fn model_timeout_cancels_the_query_on_the_server() {
    let db = PgTestDb::create_blocking();
    let ws = tempfile::tempdir().unwrap();
    write_file(ws.path(), "phlo.toml", &adapter_toml(db.url()));
    write_file(
        ws.path(),
        "transforms/x/slow.sql",
        "-- @table\nselect 1 as id from (select pg_sleep(30)) as s\n",
    );
    let started = std::time::Instant::now();
    let out = run(ws.path(), &["run", "--json", "--model-timeout", "1s"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = out.json();
    let slow = &report["models"][0];
    assert_eq!(slow["status"], "failed");
    assert_eq!(slow["error"]["code"], "E003");
    // The server is no longer sleeping for us: no pg_sleep left in pg_stat_activity.
    let sleeping = pg_scalar(
        db.url(),
        "SELECT count(*)::text FROM pg_stat_activity WHERE query LIKE '%pg_sleep(30)%' AND state = 'active' AND pid <> pg_backend_pid()",
    );
    assert_eq!(sleeping, Some("0".into()));
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    assert_eq!(
        pg_scalar(db.url(), "SELECT to_regclass('x.slow')::text"),
        None
    );
}

/// An incremental model, then new source rows: the incremental result equals a full rebuild.
fn incremental_equals_full(directive: &str, source_rows: &[&str], more_rows: &[&str]) {
    let db = PgTestDb::create_blocking();
    execute_all(
        db.url(),
        &[
            "CREATE SCHEMA raw".into(),
            "CREATE TABLE raw.events (id bigint, day date, amount numeric(10,2))".into(),
            format!("INSERT INTO raw.events VALUES {}", source_rows.join(", ")),
        ],
    );
    let ws = tempfile::tempdir().unwrap();
    write_file(
        ws.path(),
        "phlo.toml",
        &format!(
            "[source.\"raw.events\".columns]\nid = \"bigint\"\nday = \"date\"\namount = \"decimal(10,2)\"\n{}",
            adapter_toml(db.url())
        ),
    );
    write_file(
        ws.path(),
        "transforms/m/inc.sql",
        &format!("{directive}\nselect id, day, amount * 2 as doubled from raw.events\n"),
    );
    ok(&run(ws.path(), &["run", "--json"]));
    execute_all(
        db.url(),
        &[format!(
            "INSERT INTO raw.events VALUES {}",
            more_rows.join(", ")
        )],
    );
    // The model changes (not its strategy): it builds incrementally over the new rows.
    write_file(
        ws.path(),
        "transforms/m/inc.sql",
        &format!("{directive}\nselect id, day, amount * 2 + 0 as doubled from raw.events\n"),
    );
    let report = ok(&run(ws.path(), &["run", "--json"]));
    let write = report["models"][0]["write"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_ne!(write, "full", "{report:#}");
    let incremental = pg_rows(db.url(), "m", "inc");
    let full_report = ok(&run(ws.path(), &["run", "--json", "--full-refresh"]));
    assert_eq!(full_report["models"][0]["write"], "full", "{full_report:#}");
    let full = pg_rows(db.url(), "m", "inc");
    assert_eq!(rows::difference(incremental, full), None, "{directive}");
}

const FIRST: &[&str] = &[
    "(1, '2024-01-01', 1.50)",
    "(2, '2024-01-02', 2.00)",
    "(3, '2024-01-02', NULL)",
];
const MORE: &[&str] = &["(4, '2024-01-03', 4.00)", "(2, '2024-01-02', 2.50)"];

#[test]
fn append_equals_a_full_rebuild() {
    incremental_equals_full("-- @incremental append", FIRST, MORE);
}

#[test]
fn key_merge_equals_a_full_rebuild() {
    incremental_equals_full(
        "-- @incremental key=id",
        FIRST,
        &["(4, '2024-01-03', 4.00)", "(5, '2024-01-02', 2.50)"],
    );
}

#[test]
fn partition_replace_equals_a_full_rebuild() {
    incremental_equals_full("-- @incremental partition=day", FIRST, MORE);
}

#[test]
fn window_equals_a_full_rebuild() {
    incremental_equals_full(
        "-- @incremental window=day",
        FIRST,
        &["(4, '2024-01-03', 4.00)", "(5, '2024-01-04', 2.50)"],
    );
}

#[test]
fn an_unusable_warehouse_is_a008_with_help_and_nothing_is_recorded() {
    let ws = tempfile::tempdir().unwrap();
    write_file(
        ws.path(),
        "transforms/x/a.sql",
        "-- @table\nselect 1 as id\n",
    );
    let cases = [
        // Nothing listens on port 1.
        "postgres://postgres@127.0.0.1:1/x".to_string(),
        // The server is up, the database is not there.
        format!(
            "{}/phlo_no_such_db",
            phlo_transform_state::testing::admin_url()
                .rsplit_once('/')
                .unwrap()
                .0
        ),
    ];
    for url in cases {
        write_file(ws.path(), "phlo.toml", &adapter_toml(&url));
        let out = run(ws.path(), &["run", "--json"]);
        assert_eq!(out.code, 2, "{url}: {}", out.stdout);
        let report = out.json();
        let d = &report["diagnostics"][0];
        assert_eq!(d["code"], "A008", "{url}: {report:#}");
        assert!(d["help"].as_str().unwrap().contains("reachable"));
    }
    let state = run(ws.path(), &["state", "runs", "--json"]);
    assert!(!state.stdout.contains("x.a"), "{}", state.stdout);
}

#[test]
fn a_password_in_the_url_and_an_unknown_adapter_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    write_file(ws.path(), "transforms/x/a.sql", "select 1 as id\n");
    write_file(
        ws.path(),
        "phlo.toml",
        "[adapters.pg]\ntype = \"postgres\"\nurl = \"postgres://u:secret@127.0.0.1/db\"\n",
    );
    let out = run(ws.path(), &["check", "--json", "--adapter", "pg"]);
    assert_eq!(out.code, 2);
    assert!(out.stdout.contains("A010"), "{}", out.stdout);
    assert!(!out.stdout.contains("u:secret@"), "{}", out.stdout);
    let out = run(ws.path(), &["check", "--json", "--adapter", "pgg"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stdout.contains("A010") && out.stdout.contains("pg"),
        "{}",
        out.stdout
    );
}
