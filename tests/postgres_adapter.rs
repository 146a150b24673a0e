//! The PostgreSQL adapter on the real server (127.0.0.1:5432, or PHLO_TEST_POSTGRES_URL; a
//! fresh database per test; an unreachable server fails these tests), over
//! tests/warehouse/scenarios.rs: the 22 TPC-H queries as `@table` models give the local
//! engine's rows, SPEC §64 partial failure with the server's error position mapped into the
//! model, incremental strategies equal to a full rebuild, kill -9 + `run --resume`,
//! `--model-timeout` cancelling `pg_sleep` on the server, and the diagnostics of a warehouse
//! that cannot be used.

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

    fn dialect(&self) -> &'static str {
        "postgres"
    }

    /// PostgreSQL's DOUBLE is `double precision`, and it rounds to digits only a numeric
    /// (`round(double precision, integer)` does not exist: `check` says T010 under the
    /// dialect): `cast(round(x, 2) as double)` is
    /// `cast(round(cast(x as numeric), 2) as double precision)`.
    fn spell(&self, sql: &str) -> String {
        let mut out = String::new();
        let mut rest = sql;
        while let Some(at) = rest.find("cast(round(") {
            let (before, call) = rest.split_at(at + "cast(round(".len());
            let end = call
                .find(", 2) as double)")
                .expect("the realistic output shape");
            out.push_str(before);
            out.push_str(&format!(
                "cast({} as numeric), 2) as double precision)",
                &call[..end]
            ));
            rest = &call[end + ", 2) as double)".len()..];
        }
        out.push_str(rest);
        out.replace(" as double)", " as double precision)")
    }

    /// `format_type` of each column (`numeric(15,2)`, `numeric`, `text`, …).
    fn column_types(&self, tables: &[String]) -> Vec<Vec<String>> {
        block_on(async {
            let mut conn = connect(self.url()).await;
            let mut out = Vec::new();
            for t in tables {
                let (schema, table) = t.split_once('.').expect("schema.table");
                let sql = format!(
                    "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute \
                     WHERE attrelid = '\"{schema}\".\"{table}\"'::regclass AND attnum > 0 \
                     AND NOT attisdropped ORDER BY attnum"
                );
                let columns: Vec<(String, String)> = sqlx::query_as(&sql)
                    .fetch_all(&mut conn)
                    .await
                    .unwrap_or_else(|e| panic!("reading {t}: {e}"));
                out.push(
                    columns
                        .iter()
                        .map(|(n, ty)| format!("{n}:{}", types::canonical(ty)))
                        .collect(),
                );
            }
            out
        })
    }
}

fn adapter_toml(url: &str) -> String {
    format!("\n[adapter]\ntype = \"postgres\"\nurl = \"{url}\"\n")
}

/// Where the column types of the 22 TPC-H tables on PostgreSQL differ from the ones `check`
/// reports under `dialect = "postgres"` (docs/dialects.md, "Differences that remain"):
/// PostgreSQL's arithmetic and aggregates over numeric, a decimal literal (`100.00`,
/// `7.0`; a DOUBLE for the local engine) and `extract` give an unbounded `numeric`, which
/// has no Arrow type; an unaliased aggregate is named after the function (`sum`).
const TPCH_TYPE_DIFFERENCES: [&str; 24] = [
    "tpch.q01.sum_qty: local decimal(25,2), engine numeric",
    "tpch.q01.sum_base_price: local decimal(25,2), engine numeric",
    "tpch.q01.sum_disc_price: local decimal(38,4), engine numeric",
    "tpch.q01.sum_charge: local decimal(38,6), engine numeric",
    "tpch.q01.avg_qty: local decimal(19,6), engine numeric",
    "tpch.q01.avg_price: local decimal(19,6), engine numeric",
    "tpch.q01.avg_disc: local decimal(19,6), engine numeric",
    "tpch.q03.revenue: local decimal(38,4), engine numeric",
    "tpch.q05.revenue: local decimal(38,4), engine numeric",
    "tpch.q06.revenue: local decimal(38,4), engine numeric",
    "tpch.q07.l_year: local integer, engine numeric",
    "tpch.q07.revenue: local decimal(38,4), engine numeric",
    "tpch.q08.o_year: local integer, engine numeric",
    "tpch.q08.mkt_share: local decimal(38,8), engine numeric",
    "tpch.q09.o_year: local integer, engine numeric",
    "tpch.q09.sum_profit: local decimal(38,4), engine numeric",
    "tpch.q10.revenue: local decimal(38,4), engine numeric",
    "tpch.q11.value: local decimal(36,2), engine numeric",
    "tpch.q14.promo_revenue: local double, engine numeric",
    "tpch.q15.total_revenue: local decimal(38,4), engine numeric",
    "tpch.q17.avg_yearly: local double, engine numeric",
    "tpch.q18: columns [\"c_name:varchar\", \"c_custkey:bigint\", \"o_orderkey:bigint\", \"o_orderdate:date\", \"o_totalprice:decimal(15,2)\", \"sum(lineitem.l_quantity):decimal(25,2)\"] vs [\"c_name:varchar\", \"c_custkey:bigint\", \"o_orderkey:bigint\", \"o_orderdate:date\", \"o_totalprice:decimal(15,2)\", \"sum:numeric\"]",
    "tpch.q19.revenue: local decimal(38,4), engine numeric",
    "tpch.q22.totacctbal: local decimal(25,2), engine numeric",
];

#[test]
fn tpch_tables_on_postgres_equal_the_local_engine() {
    let pg = Postgres::create();
    let ws = scenarios::tpch_equals_the_local_engine(&pg, &TPCH_TYPE_DIFFERENCES);
    let inspect = ok(&run(ws.path(), &["inspect", "tpch.q01", "--json"]));
    assert_eq!(inspect["relation"], "tpch.q01");
    assert_eq!(inspect["adapter"], "postgres");
}

#[test]
fn diff_reads_the_model_and_its_table_from_postgres() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    let report = scenarios::diff_reads_the_warehouse(ws.path(), &pg);
    let candidate = report["candidate"]["description"].as_str().unwrap();
    assert!(candidate.contains("run by postgres"), "{candidate}");
}

#[test]
fn a_large_table_is_diffed_in_postgres_by_one_query() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    scenarios::large_diff_runs_in_the_warehouse(ws.path(), &pg);
}

/// The realistic generated workspace of benches/ (120 models: joins, CTEs, aggregates,
/// windows; views and tables) on postgres and on the local engine in its dialect: equal column
/// types for every model and equal rows for every table.
#[test]
fn realistic_workspace_on_postgres_equals_the_local_engine() {
    let dir = tempfile::tempdir().unwrap();
    let found = scenarios::realistic_differences(&Postgres::create(), dir.path(), 120);
    assert_eq!(found.types, Vec::<String>::new(), "column types");
    assert_eq!(found.rows, Vec::<String>::new(), "rows");
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

/// Ctrl-C during `diff <model>` cancels the diff's query on the server, where it would run on
/// after its client is gone, and the diff ends with E004.
#[test]
fn an_interrupted_diff_cancels_its_query_on_the_server() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    write_file(ws.path(), "phlo.toml", &pg.adapter_toml());
    let slow = |seconds: u32| {
        format!("-- @table\n-- @key id\nselect 1 as id from (select pg_sleep({seconds})) as s\n")
    };
    write_file(ws.path(), "transforms/x/slow.sql", &slow(0));
    ok(&run(ws.path(), &["run", "--json"]));
    write_file(ws.path(), "transforms/x/slow.sql", &slow(60));
    let sleeping = || {
        pg.scalar(
            "SELECT count(*)::text FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND state = 'active' AND pid <> pg_backend_pid()",
        )
    };
    let asleep = || sleeping() != Some("0".into());
    let out = common::interrupted(ws.path(), &["diff", "x.slow", "--json"], asleep);
    common::assert_refused(&out, "E004", "nothing was written");
    assert_eq!(
        sleeping(),
        Some("0".into()),
        "the server still runs the diff's query"
    );
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
        let help = d["help"].as_str().unwrap();
        if url.contains("phlo_no_such_db") {
            assert!(
                d["message"].as_str().unwrap().contains("does not exist"),
                "{d:#}"
            );
            assert!(help.contains("createdb"), "{d:#}");
        } else {
            assert!(help.contains("running and reachable"), "{d:#}");
        }
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

/// A PostgreSQL cluster of the test's own, initialised into a temporary directory with
/// `scram-sha-256` password authentication for every connection and started on a free port.
/// The shared server trusts every connection from 127.0.0.1, so only a cluster like this one
/// refuses a wrong password for real. Stopped (immediately) when dropped.
struct PasswordCluster {
    dir: tempfile::TempDir,
    port: u16,
}

const CLUSTER_PASSWORD: &str = "phlo-test-right-password";

impl PasswordCluster {
    fn start() -> PasswordCluster {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pw"), CLUSTER_PASSWORD).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if as_root() {
            let chown = std::process::Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(chown.success());
        }
        let cluster = PasswordCluster { dir, port };
        let data = cluster.dir.path().join("data");
        succeed(
            cluster_command("initdb")
                .arg("-D")
                .arg(&data)
                .args(["-U", "postgres", "-A", "scram-sha-256", "-N", "--pwfile"])
                .arg(cluster.dir.path().join("pw")),
        );
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -k {}",
            cluster.dir.path().display()
        );
        succeed(
            cluster_command("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-w", "-o", &options, "-l"])
                .arg(cluster.dir.path().join("log"))
                .arg("start"),
        );
        cluster
    }

    fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }
}

impl Drop for PasswordCluster {
    fn drop(&mut self) {
        let _ = cluster_command("pg_ctl")
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

fn as_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program` of PostgreSQL, run as the `postgres` user when the test runs as root (PostgreSQL
/// refuses to run as root).
fn cluster_command(program: &str) -> std::process::Command {
    if as_root() {
        let mut c = std::process::Command::new("runuser");
        c.args(["-u", "postgres", "--", program]);
        c
    } else {
        std::process::Command::new(program)
    }
}

fn succeed(c: &mut std::process::Command) {
    let out = c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(
        out.status.success(),
        "{c:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `run` of the binary with `password` in `PHLO_TEST_PG_PASSWORD` (unset for `None`).
fn run_with_password(
    dir: &std::path::Path,
    args: &[&str],
    password: Option<&str>,
) -> common::Output {
    let mut c = std::process::Command::new(common::bin());
    c.arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("PHLO_STATE_URL")
        .env_remove("PHLO_TEST_PG_PASSWORD")
        .env("NO_COLOR", "1");
    if let Some(p) = password {
        c.env("PHLO_TEST_PG_PASSWORD", p);
    }
    let out = c.output().expect("binary runs");
    common::Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn a_wrong_password_an_unset_password_env_and_a_missing_database_record_nothing_and_the_next_run_repairs(
) {
    let cluster = PasswordCluster::start();
    let ws = tempfile::tempdir().unwrap();
    write_file(
        ws.path(),
        "transforms/x/a.sql",
        "-- @table\nselect 1 as id\n",
    );
    let toml = |database: &str| {
        format!(
            "[adapter]\ntype = \"postgres\"\nurl = \"{}\"\npassword_env = \"PHLO_TEST_PG_PASSWORD\"\n",
            cluster.url(database)
        )
    };
    let refused = |password: Option<&str>, code: &str, message: &str, help: &str| {
        let out = run_with_password(ws.path(), &["run", "--json"], password);
        common::assert_refused(&out, code, help);
        let report = out.json();
        let d = &report["diagnostics"][0];
        assert!(
            d["message"].as_str().unwrap().contains(message),
            "{report:#}"
        );
        assert!(!out.stdout.contains("phlo-test-wrong"), "{}", out.stdout);
        let text = run_with_password(ws.path(), &["run"], password);
        assert!(
            text.stderr.contains(&format!("error[{code}]")) && text.stderr.contains("help:"),
            "{}",
            text.stderr
        );
    };
    write_file(ws.path(), "phlo.toml", &toml("postgres"));
    // The variable password_env names is not set: the target is incomplete (A010).
    refused(
        None,
        "A010",
        "PHLO_TEST_PG_PASSWORD",
        "export PHLO_TEST_PG_PASSWORD=",
    );
    // The server refuses the password (SQLSTATE 28P01).
    refused(
        Some("phlo-test-wrong-password"),
        "A008",
        "authentication failed",
        "password_env",
    );
    // The right password, a database the cluster does not have (3D000).
    write_file(ws.path(), "phlo.toml", &toml("phlo_no_such_db"));
    refused(
        Some(CLUSTER_PASSWORD),
        "A008",
        "does not exist",
        "the database exists",
    );
    let state = run(ws.path(), &["state", "runs", "--json"]);
    assert!(!state.stdout.contains("x.a"), "{}", state.stdout);

    // The right settings: the next run builds the model.
    write_file(ws.path(), "phlo.toml", &toml("postgres"));
    let out = run_with_password(ws.path(), &["run", "--json"], Some(CLUSTER_PASSWORD));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(by_name(&out.json(), "status")["x.a"], "passed");
    let authenticated = cluster.url("postgres").replacen(
        "://postgres@",
        &format!("://postgres:{CLUSTER_PASSWORD}@"),
        1,
    );
    let ids: Vec<i32> = block_on(async {
        sqlx::query_scalar("SELECT id FROM x.a")
            .fetch_all(&mut connect(&authenticated).await)
            .await
            .unwrap()
    });
    assert_eq!(ids, [1]);
    let plan = run_with_password(ws.path(), &["plan", "--json"], Some(CLUSTER_PASSWORD));
    assert_eq!(by_name(&plan.json(), "decision")["x.a"], "skip");
}

/// A009 end to end: a construct PostgreSQL cannot express is an error of `check` at the
/// construct's line and column, with the help line naming what to write; `run` never sends the
/// model (it builds what compiles); the local engine accepts the same model.
#[test]
fn a_construct_postgres_cannot_express_is_a009_at_check_and_never_sent() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    write_file(ws.path(), "phlo.toml", &pg.adapter_toml());
    write_file(
        ws.path(),
        "transforms/x/a.sql",
        "-- @table\nselect 1 as id\n",
    );
    write_file(
        ws.path(),
        "transforms/x/b.sql",
        "-- @table\nselect id,\n       cast(id as string) as label\nfrom x.a\n",
    );
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let report = out.json();
    let found: Vec<&serde_json::Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "A009")
        .collect();
    assert_eq!(found.len(), 1, "{report:#}");
    let d = found[0];
    assert_eq!(d["severity"], "error", "{d:#}");
    assert_eq!(d["file"], "transforms/x/b.sql", "{d:#}");
    // At the cast (sqlparser's span of a CAST starts at its operand, `id`).
    assert_eq!(
        (d["line"].clone(), d["column"].clone()),
        (3.into(), 13.into()),
        "{d:#}"
    );
    assert!(
        d["message"].as_str().unwrap().contains("STRING")
            && d["message"].as_str().unwrap().contains("postgres"),
        "{d:#}"
    );
    assert!(d["help"].as_str().unwrap().contains("`text`"), "{d:#}");
    let text = run(ws.path(), &["check"]);
    assert!(
        text.stderr.contains("error[A009]")
            && text.stderr.contains("transforms/x/b.sql:3:13")
            && text.stderr.contains("help:"),
        "{}",
        text.stderr
    );
    // `run` builds what compiles and never sends the refused model.
    let ran = run(ws.path(), &["run", "--json"]);
    assert_eq!(ran.code, 2, "{}", ran.stdout);
    assert_eq!(
        pg.scalar("SELECT string_agg(id::text, ',') FROM x.a"),
        Some("1".into())
    );
    assert_eq!(pg.scalar("SELECT to_regclass('x.b')::text"), None);
    // The local engine has a STRING type: there the model is fine.
    let local = run(ws.path(), &["check", "--adapter", "local"]);
    assert_eq!(local.code, 0, "{}", local.stderr);
    // Written for PostgreSQL, the model builds.
    write_file(
        ws.path(),
        "transforms/x/b.sql",
        "-- @table\nselect id,\n       cast(id as text) as label\nfrom x.a\n",
    );
    let report = ok(&run(ws.path(), &["run", "--json"]));
    assert_eq!(by_name(&report, "status")["x.b"], "passed");
    assert_eq!(pg.scalar("SELECT label FROM x.b"), Some("1".into()));
}

#[test]
fn a_model_named_like_the_adapters_temporary_tables_is_refused_at_check() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    write_file(ws.path(), "phlo.toml", &pg.adapter_toml());
    write_file(
        ws.path(),
        "transforms/x/a.sql",
        "-- @table\nselect 1 as id\n",
    );
    // `x.a__phlo_new` is the table `a` is built into; `x.a.phlo_new` is the same table.
    write_file(
        ws.path(),
        "transforms/x/a__phlo_new.sql",
        "-- @table\nselect 2 as id\n",
    );
    write_file(
        ws.path(),
        "transforms/x/a/phlo_new.sql",
        "-- @table\nselect 3 as id\n",
    );
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let report = out.json();
    let refused: Vec<&serde_json::Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "A012")
        .collect();
    let mut files: Vec<&str> = refused
        .iter()
        .map(|d| d["file"].as_str().unwrap())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "transforms/x/a/phlo_new.sql",
            "transforms/x/a__phlo_new.sql"
        ],
        "{report:#}"
    );
    for d in &refused {
        assert!(
            d["message"].as_str().unwrap().contains("a__phlo_new"),
            "{d}"
        );
        assert!(d["help"].as_str().unwrap().contains("rename"), "{d}");
        assert_eq!(d["line"], 1, "{d}");
    }
    let text = run(ws.path(), &["check"]);
    assert!(
        text.stderr.contains("error[A012]")
            && text.stderr.contains("transforms/x/a__phlo_new.sql:1:1"),
        "{}",
        text.stderr
    );
    // `run` builds what compiles: `x.a`, and never the refused models.
    let ran = run(ws.path(), &["run", "--json"]);
    assert_eq!(ran.code, 2, "{}", ran.stdout);
    assert_eq!(
        pg.scalar("SELECT string_agg(id::text, ',') FROM x.a"),
        Some("1".into())
    );
    assert_eq!(pg.scalar("SELECT to_regclass('x.a__phlo_new')::text"), None);
    // The local engine keeps no such tables: there the names are fine.
    let local = run(ws.path(), &["check", "--adapter", "local"]);
    assert_eq!(local.code, 0, "{}", local.stderr);
}

/// A TCP forwarder to the test server on a port of its own: a URL through it reaches the
/// server while it runs, and nothing (connection refused) once it is stopped, so a test can
/// take the warehouse away and bring it back at an unchanged address.
struct Forwarder {
    port: u16,
    to: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    accepting: Option<std::thread::JoinHandle<()>>,
    /// The client side of every connection forwarded, to cut them.
    clients: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl Forwarder {
    /// Forwards to the host and port of `url` (a postgres:// URL).
    fn to(url: &str) -> Forwarder {
        let authority = url.split_once('@').map_or(url, |(_, a)| a);
        let host_port = authority.split('/').next().unwrap();
        let to = if host_port.contains(':') {
            host_port.to_string()
        } else {
            format!("{host_port}:5432")
        };
        let mut f = Forwarder {
            port: 0,
            to,
            stop: Default::default(),
            accepting: None,
            clients: Default::default(),
        };
        f.start();
        f
    }

    /// `url` through the forwarder.
    fn url(&self, url: &str) -> String {
        let (before, after) = url.split_once('@').unwrap();
        let path = after.split_once('/').map_or("", |(_, p)| p);
        format!("{before}@127.0.0.1:{}/{path}", self.port)
    }

    /// Listens (again, on the same port once it has one) and forwards every connection.
    fn start(&mut self) {
        use std::io::ErrorKind;
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind(("127.0.0.1", self.port)).unwrap();
        self.port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        self.stop = Default::default();
        let (stop, to, clients) = (self.stop.clone(), self.to.clone(), self.clients.clone());
        self.accepting = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let Ok(server) = std::net::TcpStream::connect(&to) else {
                            continue;
                        };
                        clients.lock().unwrap().push(client.try_clone().unwrap());
                        for (mut from, mut into) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            std::thread::spawn(move || {
                                let _ = std::io::copy(&mut from, &mut into);
                                let _ = into.shutdown(std::net::Shutdown::Both);
                            });
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(5))
                    }
                    Err(e) => panic!("forwarder: {e}"),
                }
            }
        }));
    }

    /// Stops listening: connections to the port are refused.
    fn stop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.accepting.take() {
            t.join().unwrap();
        }
    }

    /// Stops listening and cuts every connection it forwarded: the server is gone for the
    /// clients holding them, as when it goes down.
    fn cut(&mut self) {
        self.stop();
        for c in self.clients.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A test database reached through a [`Forwarder`]: the workspace's URL goes through it,
/// the test's own statements go to the server directly.
struct Forwarded<'a> {
    pg: &'a Postgres,
    url: String,
}

impl Warehouse for Forwarded<'_> {
    fn adapter_toml(&self) -> String {
        adapter_toml(&self.url)
    }
    fn execute(&self, sql: &str) {
        self.pg.execute(sql)
    }
    fn scalar(&self, sql: &str) -> Option<String> {
        self.pg.scalar(sql)
    }
    fn rows(&self, tables: &[String]) -> Vec<Vec<Row>> {
        self.pg.rows(tables)
    }
    fn column_comment(&self, schema: &str, table: &str, column: &str) -> String {
        self.pg.column_comment(schema, table, column)
    }
    fn dialect(&self) -> &'static str {
        self.pg.dialect()
    }
    fn column_types(&self, tables: &[String]) -> Vec<Vec<String>> {
        self.pg.column_types(tables)
    }
    fn spell(&self, sql: &str) -> String {
        self.pg.spell(sql)
    }
}

#[test]
fn warehouse_relations_are_typed_from_postgres_and_cached_for_offline_checks() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    // The server is reached through a forwarder, so that it can become unreachable at the
    // same URL: the schema cache is kept per URL.
    let forwarder = std::cell::RefCell::new(Forwarder::to(pg.url()));
    let url = forwarder.borrow().url(pg.url());
    scenarios::warehouse_relations_are_typed_from_the_catalog_and_cached(
        ws.path(),
        &Forwarded { pg: &pg, url },
        &|| forwarder.borrow_mut().stop(),
        &|| forwarder.borrow_mut().start(),
    );
}

/// The server goes away while a model's query runs: the model fails with A008 and a help line,
/// nothing is recorded as built, and once the server is back the next run builds it.
#[test]
fn a_server_lost_during_a_run_is_a008_with_help_and_the_next_run_repairs() {
    let pg = Postgres::create();
    let ws = tempfile::tempdir().unwrap();
    let mut forwarder = Forwarder::to(pg.url());
    write_file(
        ws.path(),
        "phlo.toml",
        &adapter_toml(&forwarder.url(pg.url())),
    );
    write_file(
        ws.path(),
        "transforms/x/slow.sql",
        "-- @table\nselect 1 as id from (select pg_sleep(3)) as s\n",
    );
    let child = std::process::Command::new(common::bin())
        .arg("-C")
        .arg(ws.path())
        .args(["run", "--json"])
        .env_remove("PHLO_STATE_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Cut once the query is running on the server.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while pg.scalar(
        "SELECT count(*)::text FROM pg_stat_activity WHERE query LIKE '%pg_sleep(3)%' \
         AND state = 'active' AND pid <> pg_backend_pid()",
    ) != Some("1".into())
    {
        assert!(std::time::Instant::now() < deadline, "the query never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    forwarder.cut();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let slow = &report["models"][0];
    assert_eq!(slow["status"], "failed", "{report:#}");
    assert_eq!(slow["error"]["code"], "A008", "{report:#}");
    assert_eq!(slow["error"]["retryable"], true, "{report:#}");
    assert!(
        slow["error"]["help"]
            .as_str()
            .unwrap()
            .contains("running and reachable"),
        "{report:#}"
    );
    assert_eq!(pg.scalar("SELECT to_regclass('x.slow')::text"), None);
    // The server is back: the next run builds the model.
    forwarder.start();
    let report = ok(&run(ws.path(), &["run", "--json"]));
    assert_eq!(by_name(&report, "status")["x.slow"], "passed");
    assert_eq!(
        pg.scalar("SELECT string_agg(id::text, ',') FROM x.slow"),
        Some("1".into())
    );
}

#[test]
fn a_target_pointed_at_another_database_is_typed_from_that_database() {
    let ws = tempfile::tempdir().unwrap();
    scenarios::another_warehouse_is_never_typed_from_the_first_ones_schemas(
        ws.path(),
        &Postgres::create(),
        &Postgres::create(),
    );
}

#[test]
fn a_warehouse_relation_only_a_test_reads_is_typed_from_postgres() {
    let ws = tempfile::tempdir().unwrap();
    scenarios::a_warehouse_relation_only_a_test_reads_is_typed_from_the_catalog(
        ws.path(),
        &Postgres::create(),
    );
}

#[test]
fn a_source_dropped_behind_our_back_fails_with_a003_and_the_next_run_repairs() {
    let ws = tempfile::tempdir().unwrap();
    scenarios::a_source_dropped_behind_our_back_fails_and_the_next_run_repairs(
        ws.path(),
        &Postgres::create(),
    );
}

/// Freshness clocks (issue 40) on a table only the warehouse has: it is as of the latest value
/// of its declared `timestamp_column`, so a model built from it records that instant.
#[test]
fn a_warehouse_table_is_as_of_its_latest_timestamp_column() {
    let pg = Postgres::create();
    pg.execute(
        "CREATE SCHEMA raw; CREATE TABLE raw.loads (id integer, loaded_at timestamp);
         INSERT INTO raw.loads VALUES (1, '2026-12-01 10:00:00'), (2, '2026-12-02 11:30:00')",
    );
    let ws = tempfile::tempdir().unwrap();
    write_file(
        ws.path(),
        "phlo.toml",
        &format!(
            "{}\n[source.\"raw.loads\"]\nfreshness = \"100000d\"\ntimestamp_column = \"loaded_at\"\n\
             columns = {{ id = \"integer\", loaded_at = \"timestamp\" }}\n",
            pg.adapter_toml()
        ),
    );
    write_file(
        ws.path(),
        "transforms/shop/a.sql",
        "-- @table\nselect id from raw.loads\n",
    );
    let report = ok(&run(ws.path(), &["run", "--json"]));
    assert_eq!(
        by_name(&report, "current_as_of")["shop.a"],
        "2026-12-02T11:30:00Z"
    );
    let state = ok(&run(ws.path(), &["state", "model", "shop.a", "--json"]));
    assert_eq!(
        state["materializations"][0]["current_as_of"],
        "2026-12-02T11:30:00Z"
    );
}
