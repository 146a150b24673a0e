//! Warehouse adapter overhead per model: the generated workspace of `benches/support` (at
//! 1,000 models: 261 `@table`s with `@key id`, 739 views, 522 key tests) built by the binary
//! (`run --jobs 1`) on PostgreSQL and on DuckDB, against the engine's own time for the same
//! work — the exact statements the adapter sends for each model (`Adapter::statements`, what
//! `inspect --sql` prints; each model's in one transaction, in build order) and each test's
//! query (`SELECT count(*) FROM (…)`), replayed over the engine's native client on a fresh
//! database. Overhead per model = (run − replay) / models: process start, compiling and
//! typing the workspace, planning, the state store, the adapter's catalog reads and row
//! counts. `check` alone (process start, compiling and typing, writing the compile artifacts;
//! no engine) is reported beside it for scale.
//!
//! ```text
//! cargo bench --bench adapters                                       # PostgreSQL
//! DUCKDB_LIB_DIR=$(scripts/duckdb.sh) LD_LIBRARY_PATH=$(scripts/duckdb.sh) \
//!     cargo bench --features duckdb --bench adapters                 # and DuckDB
//! PHLO_BENCH_SIZES=1000 PHLO_BENCH_REPS=3 PHLO_BENCH_ENGINES=postgres,duckdb cargo bench ...
//! ```
//!
//! PostgreSQL is the server at `PHLO_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); every repetition builds into a fresh
//! database. Under `cargo test --benches` (no `--bench` argument) it runs once on 50 models.
//! See docs/performance.md for the figures.

#[path = "support/generate.rs"]
#[allow(dead_code)] // the shapes and helpers other benches use
mod generate;

use phlo_transform_adapter::{open, Adapter, Purpose};
use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_project::Workspace;
use sqlx::{Connection, Executor, PgConnection};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A warehouse the bench builds into, one fresh database per build.
trait Engine {
    fn name(&self) -> &'static str;
    /// Creates a new, empty database (nothing held open); its `[adapter]` section.
    fn fresh(&mut self) -> String;
    /// Opens a connection to the current database.
    fn open(&mut self);
    /// Runs `statements` in one transaction.
    fn transaction(&mut self, statements: &[String]);
    /// Runs `SELECT count(*) FROM (<query>) AS q`.
    fn count(&mut self, query: &str);
    /// Closes the connection (the binary takes DuckDB's file lock).
    fn close(&mut self);
    /// Drops every database this engine created.
    fn discard(&mut self);
}

struct Postgres {
    admin: String,
    created: Vec<String>,
    conn: Option<PgConnection>,
    rt: tokio::runtime::Runtime,
}

impl Postgres {
    fn new() -> Postgres {
        Postgres {
            admin: std::env::var("PHLO_TEST_POSTGRES_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into()),
            created: Vec::new(),
            conn: None,
            rt: runtime(),
        }
    }

    fn url(&self, db: &str) -> String {
        format!("{}/{db}", self.admin.rsplit_once('/').unwrap().0)
    }

    fn admin(&self, sql: &str) {
        self.rt.block_on(async {
            let mut conn = PgConnection::connect(&self.admin)
                .await
                .expect("PostgreSQL answers");
            conn.execute(sql)
                .await
                .unwrap_or_else(|e| panic!("{e}: {sql}"));
        });
    }
}

impl Engine for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn fresh(&mut self) -> String {
        let name = format!("phlo_bench_{}_{}", std::process::id(), nanos());
        self.admin(&format!("CREATE DATABASE {name}"));
        self.created.push(name.clone());
        format!(
            "[adapter]\ntype = \"postgres\"\nurl = \"{}\"\n",
            self.url(&name)
        )
    }

    fn open(&mut self) {
        let url = self.url(self.created.last().expect("a database"));
        self.conn = Some(
            self.rt
                .block_on(PgConnection::connect(&url))
                .expect("the database"),
        );
    }

    fn transaction(&mut self, statements: &[String]) {
        let conn = self.conn.as_mut().expect("open");
        self.rt.block_on(async {
            let mut tx = conn.begin().await.unwrap();
            for s in statements {
                tx.execute(s.as_str())
                    .await
                    .unwrap_or_else(|e| panic!("{e}: {s}"));
            }
            tx.commit().await.unwrap();
        });
    }

    fn count(&mut self, query: &str) {
        let conn = self.conn.as_mut().expect("open");
        let sql = format!("SELECT count(*) FROM ({query}) AS q");
        self.rt.block_on(async {
            let _: i64 = sqlx::query_scalar(&sql)
                .fetch_one(&mut *conn)
                .await
                .unwrap_or_else(|e| panic!("{e}: {sql}"));
        });
    }

    fn close(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.rt.block_on(conn.close()).ok();
        }
    }

    fn discard(&mut self) {
        self.close();
        for name in std::mem::take(&mut self.created) {
            self.admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

#[cfg(feature = "duckdb")]
struct DuckDb {
    dir: tempfile::TempDir,
    current: std::path::PathBuf,
    conn: Option<phlo_transform_adapter::duckdb::Connection>,
}

#[cfg(feature = "duckdb")]
impl Engine for DuckDb {
    fn name(&self) -> &'static str {
        "duckdb"
    }

    fn fresh(&mut self) -> String {
        self.current = self.dir.path().join(format!("bench-{}.duckdb", nanos()));
        format!("[adapter]\ntype = \"duckdb\"\npath = {:?}\n", self.current)
    }

    fn open(&mut self) {
        let conn = phlo_transform_adapter::duckdb::Connection::open(&self.current);
        self.conn = Some(conn.expect("DuckDB opens the file"));
    }

    fn transaction(&mut self, statements: &[String]) {
        let conn = self.conn.as_ref().expect("open");
        conn.execute_batch("BEGIN TRANSACTION").unwrap();
        for s in statements {
            conn.execute_batch(s).unwrap_or_else(|e| panic!("{e}: {s}"));
        }
        conn.execute_batch("COMMIT").unwrap();
    }

    fn count(&mut self, query: &str) {
        let conn = self.conn.as_ref().expect("open");
        let sql = format!("SELECT count(*) FROM ({query}) AS q");
        conn.query_row(&sql, [], |r| r.get::<_, i64>(0))
            .unwrap_or_else(|e| panic!("{e}: {sql}"));
    }

    fn close(&mut self) {
        self.conn = None;
    }

    fn discard(&mut self) {
        self.close();
        for e in std::fs::read_dir(self.dir.path()).unwrap() {
            let _ = std::fs::remove_file(e.unwrap().path());
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The seed sources (`<ns>.seed_events`, 200 rows each) as warehouse tables, from the CSV
/// files the generator wrote. Amounts are exact decimals (PostgreSQL has no
/// `round(double precision, integer)`).
fn source_statements(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for ns in 0..generate::NAMESPACES {
        let ns = format!("ns{ns:02}");
        let rows = generate::seed_values(root, &ns);
        out.push(format!("CREATE SCHEMA {ns}"));
        out.push(format!(
            "CREATE TABLE {ns}.seed_events (id bigint, grp varchar, amount decimal(12,2), event_date date)"
        ));
        out.push(format!(
            "INSERT INTO {ns}.seed_events VALUES {}",
            rows.join(", ")
        ));
    }
    out
}

/// The warehouses hold `amount` as DECIMAL(12, 2) (`source_statements`), while the CSV it
/// comes from types as DOUBLE, whose `round(x, 2)` PostgreSQL lacks (T010 under its
/// dialect): each model rounds a DECIMAL, as a user of these warehouses writes it.
fn round_decimals(root: &Path) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "sql") {
                continue;
            }
            let sql = std::fs::read_to_string(&path).unwrap();
            let Some(start) = sql.find("round(amount * ") else {
                continue;
            };
            let arg = start + "round(".len();
            let end = arg + sql[arg..].find(", 2)").unwrap();
            let spelled = format!(
                "{}cast({} as decimal(12, 2)){}",
                &sql[..arg],
                &sql[arg..end],
                &sql[end..]
            );
            std::fs::write(&path, spelled).unwrap();
        }
    }
}

/// The statements of a first build, per model in build order, and the test queries, as the
/// adapter the workspace at `root` configures prints them.
fn workload(root: &Path) -> (Vec<Vec<String>>, Vec<String>) {
    let ws = Workspace::load(root).expect("the workspace loads");
    let (catalog, diags) = CatalogSnapshot::load(&ws);
    let c = Compilation::compile(ws, catalog, diags);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let target = c
        .workspace
        .adapter_target(None)
        .expect("the [adapter] target");
    let (adapter, _) = runtime()
        .block_on(open(&target, root, &c, Purpose::Plan))
        .unwrap_or_else(|e| panic!("{}: {}", e.code, e.message));
    let adapter: &dyn Adapter = adapter.as_ref();
    let models = c
        .order
        .iter()
        .map(|&i| {
            let job = phlo_transform_exec::model_job(&c, i, adapter, false).expect("model SQL");
            adapter.statements(&job).expect("statements")
        })
        .collect();
    let physical = |t: &Target| match t {
        Target::Model(i) => adapter.model_relation(c.models[*i].name.as_str()).parts,
        Target::Source(s) => adapter.source_relation(s).parts,
    };
    let tests = c
        .tests
        .iter()
        .map(|t| {
            let q = c.executable_test_query(t, &physical);
            q.expect("test SQL").to_string()
        })
        .collect();
    (models, tests)
}

/// The binary on `root`: its wall time; it must succeed.
fn timed(root: &Path, args: &[&str]) -> Duration {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_phlo-transform"))
        .arg("-C")
        .arg(root)
        .args(args)
        .env_remove("PHLO_STATE_URL")
        .output()
        .expect("the binary runs");
    let elapsed = t0.elapsed();
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

/// What one build of the workspace took.
struct Build {
    /// `run --jobs 1` by the binary, fresh state, fresh database.
    run: Duration,
    /// `check` by the binary: compiling and typing alone.
    check: Duration,
    /// The same statements and test queries over the native client, fresh database.
    replay: Duration,
}

/// Points the workspace at a fresh database of `engine` holding the sources.
fn fresh_database(engine: &mut dyn Engine, root: &Path, base_toml: &str) {
    let section = engine.fresh();
    std::fs::write(root.join("phlo.toml"), format!("{base_toml}\n{section}")).unwrap();
    engine.open();
    engine.transaction(&source_statements(root));
    engine.close();
}

fn build(engine: &mut dyn Engine, root: &Path, base_toml: &str) -> Build {
    fresh_database(engine, root, base_toml);
    let _ = std::fs::remove_dir_all(root.join(".phlo"));
    let check = timed(root, &["check"]);
    let run = timed(root, &["run", "--jobs", "1"]);

    fresh_database(engine, root, base_toml);
    let (models, tests) = workload(root);
    engine.open();
    let t0 = Instant::now();
    for statements in &models {
        engine.transaction(statements);
    }
    for query in &tests {
        engine.count(query);
    }
    let replay = t0.elapsed();
    engine.discard();
    Build { run, check, replay }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let (bench_mode, _) = generate::bench_sizes();
    let env = |k: &str| std::env::var(k).ok();
    let sizes: Vec<usize> = match (bench_mode, env("PHLO_BENCH_SIZES")) {
        (false, _) => vec![50],
        (true, Some(s)) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        (true, None) => vec![1_000],
    };
    let reps: usize = match (bench_mode, env("PHLO_BENCH_REPS")) {
        (false, _) => 1,
        (true, r) => r.and_then(|r| r.parse().ok()).unwrap_or(3),
    };
    let wanted = env("PHLO_BENCH_ENGINES").unwrap_or_else(|| "postgres,duckdb".into());
    let mut engines: Vec<Box<dyn Engine>> = Vec::new();
    if wanted.contains("postgres") {
        engines.push(Box::new(Postgres::new()));
    }
    #[cfg(feature = "duckdb")]
    if wanted.contains("duckdb") {
        engines.push(Box::new(DuckDb {
            dir: tempfile::tempdir().unwrap(),
            current: Default::default(),
            conn: None,
        }));
    }
    #[cfg(not(feature = "duckdb"))]
    if wanted.contains("duckdb") {
        println!("duckdb: skipped (build with --features duckdb)");
    }
    println!(
        "adapters: generated workspace, `run --jobs 1` vs the replayed statements; best of {reps}"
    );
    println!(
        "{:>8}  {:>6}  {:>10}  {:>10}  {:>12}  {:>10}",
        "engine", "models", "run", "replay", "overhead/m", "check"
    );
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        // The small shape: its seed sources are what `source_statements` loads.
        generate::generate_small(dir.path(), n).expect("the workspace is written");
        round_decimals(dir.path());
        let base = std::fs::read_to_string(dir.path().join("phlo.toml")).unwrap();
        for engine in engines.iter_mut() {
            // The best of each measure over the repetitions (the machine is shared).
            let mut b = Build {
                run: Duration::MAX,
                check: Duration::MAX,
                replay: Duration::MAX,
            };
            for _ in 0..reps {
                let one = build(engine.as_mut(), dir.path(), &base);
                b.run = b.run.min(one.run);
                b.check = b.check.min(one.check);
                b.replay = b.replay.min(one.replay);
            }
            let overhead = ms(b.run) - ms(b.replay);
            println!(
                "{:>8}  {n:>6}  {:>8.0}ms  {:>8.0}ms  {:>9.2} ms  {:>8.0}ms",
                engine.name(),
                ms(b.run),
                ms(b.replay),
                overhead / n as f64,
                ms(b.check),
            );
        }
    }
}
