//! The PostgreSQL adapter on the real server (127.0.0.1:5432, or PHLO_TEST_POSTGRES_URL; a
//! fresh database per test; an unreachable server fails these tests), over
//! tests/warehouse/scenarios.rs: the 22 TPC-H queries as `@table` models give the local
//! engine's rows, SPEC §64 partial failure with the server's error position mapped into the
//! model, incremental strategies equal to a full rebuild, kill -9 + `run --resume`,
//! `--model-timeout` cancelling `pg_sleep` on the server, and the diagnostics of a warehouse
//! that cannot be used.

mod common;
#[path = "warehouse/interrupt.rs"]
mod interrupt;
#[path = "warehouse/rows.rs"]
mod rows;
#[path = "warehouse/scenarios.rs"]
mod scenarios;
#[path = "warehouse/tpch_data.rs"]
mod tpch_data;

use common::{by_name, run, write_file};
use phlo_transform_state::testing::PgTestDb;
use rows::Row;
use scenarios::{ok, Warehouse};
use sqlx::{Connection, Executor, PgConnection};

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

/// A fresh database on the server; dropped with the test.
struct Postgres(PgTestDb);

impl Postgres {
    fn create() -> Postgres {
        Postgres(PgTestDb::create_blocking())
    }

    fn url(&self) -> &str {
        self.0.url()
    }
}

impl Warehouse for Postgres {
    fn adapter_toml(&self) -> String {
        adapter_toml(self.url())
    }

    fn execute(&self, sql: &str) {
        block_on(async {
            connect(self.url())
                .await
                .execute(sql)
                .await
                .unwrap_or_else(|e| panic!("{e}: {sql}"));
        })
    }

    fn scalar(&self, sql: &str) -> Option<String> {
        block_on(async {
            sqlx::query_scalar::<_, Option<String>>(sql)
                .fetch_one(&mut connect(self.url()).await)
                .await
                .unwrap_or_else(|e| panic!("{e}: {sql}"))
        })
    }

    /// Rows in PostgreSQL's text form.
    fn rows(&self, tables: &[String]) -> Vec<Vec<Row>> {
        block_on(async {
            let mut conn = connect(self.url()).await;
            let mut out = Vec::new();
            for t in tables {
                let (schema, table) = t.split_once('.').expect("schema.table");
                let sql = format!("SELECT t::text FROM \"{schema}\".\"{table}\" t");
                let texts: Vec<String> = sqlx::query_scalar(&sql)
                    .fetch_all(&mut conn)
                    .await
                    .unwrap_or_else(|e| panic!("reading {t}: {e}"));
                out.push(texts.iter().map(|t| rows::parse_pg_record(t)).collect());
            }
            out
        })
    }

    fn column_comment(&self, schema: &str, table: &str, column: &str) -> String {
        format!(
            "SELECT col_description(attrelid, attnum) FROM pg_attribute \
             WHERE attrelid = '\"{schema}\".\"{table}\"'::regclass AND attname = '{column}'"
        )
    }
}

fn adapter_toml(url: &str) -> String {
    format!("\n[adapter]\ntype = \"postgres\"\nurl = \"{url}\"\n")
}

#[test]
fn tpch_tables_on_postgres_equal_the_local_engine() {
    let pg = Postgres::create();
    let ws = scenarios::tpch_equals_the_local_engine(&pg);
    let inspect = ok(&run(ws.path(), &["inspect", "tpch.q01", "--json"]));
    assert_eq!(inspect["relation"], "tpch.q01");
    assert_eq!(inspect["adapter"], "postgres");
}

#[test]
fn spec_64_partial_failure_on_postgres_and_the_error_points_into_the_model() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    let report = scenarios::spec64_partial_failure(ws.path(), &pg);
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
}

#[test]
fn a_table_rebuild_keeps_the_views_that_read_it() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    scenarios::spec64_workspace(ws.path(), &pg);
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
        pg.scalar("SELECT string_agg(id::text, ',') FROM x.e"),
        Some("3".into())
    );
    let plan = ok(&run(ws.path(), &["plan", "--json"]));
    assert!(by_name(&plan, "decision").values().all(|d| d == "skip"));
}

#[test]
fn model_timeout_cancels_the_query_on_the_server() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    write_file(ws.path(), "phlo.toml", &pg.adapter_toml());
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
    let sleeping = pg.scalar(
        "SELECT count(*)::text FROM pg_stat_activity WHERE query LIKE '%pg_sleep(30)%' AND state = 'active' AND pid <> pg_backend_pid()",
    );
    assert_eq!(sleeping, Some("0".into()));
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    assert_eq!(pg.scalar("SELECT to_regclass('x.slow')::text"), None);
}

#[test]
fn every_incremental_strategy_equals_a_full_rebuild() {
    for case in scenarios::INCREMENTAL {
        let ws = tempfile::tempdir().unwrap();
        scenarios::incremental_equals_full(ws.path(), &Postgres::create(), case);
    }
}

#[test]
fn a_killed_run_resumes_on_postgres_without_rebuilding_what_passed() {
    let ws = tempfile::tempdir().unwrap();
    scenarios::killed_run_resumes(ws.path(), &Postgres::create());
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
