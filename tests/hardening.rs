//! Hostile and unlucky inputs (issue 10): names are never paths, no panic on any input, no
//! secret in any output, one writer at a time. Each test failed before its fix.

mod common;

use common::{run, write_file};
use std::path::Path;

fn codes(report: &serde_json::Value) -> Vec<String> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect()
}

/// A directory outside the workspace that a model named after `outside` would hit: a Delta
/// table for the `@view` model (which, before the fix, was deleted with `remove_dir_all`) and
/// a sentinel file.
fn plant_outside(outside: &Path) {
    for rel in ["prey.v/_delta_log/keep.json", "prey.t/keep.txt", "keep.txt"] {
        write_file(outside, rel, "do not touch");
    }
}

fn assert_untouched(outside: &Path) {
    for rel in ["prey.v/_delta_log/keep.json", "prey.t/keep.txt", "keep.txt"] {
        assert_eq!(
            std::fs::read_to_string(outside.join(rel)).ok().as_deref(),
            Some("do not touch"),
            "{rel} was touched"
        );
    }
    let mut entries: Vec<String> = std::fs::read_dir(outside.join("prey.t"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(entries, ["keep.txt"], "a table was written outside");
}

fn escaping_workspace(root: &Path, namespace: &str) {
    write_file(
        root,
        "transforms/lab/transform.toml",
        &format!("namespace = \"{namespace}\"\n"),
    );
    write_file(root, "transforms/lab/t.sql", "-- @table\nselect 1 as id\n");
    write_file(root, "transforms/lab/v.sql", "-- @view\nselect 2 as id\n");
}

#[test]
fn a_namespace_is_never_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    plant_outside(&outside);
    let ws = dir.path().join("ws");
    // `../x`-style and absolute namespaces, both aimed at `outside/prey.*`.
    let relative = "../../../outside/prey";
    let absolute = outside.join("prey").to_string_lossy().into_owned();
    for namespace in [relative, absolute.as_str()] {
        let _ = std::fs::remove_dir_all(&ws);
        escaping_workspace(&ws, namespace);
        let check = run(&ws, &["check", "--json"]);
        assert_eq!(check.code, 2, "{namespace}: {}", check.stdout);
        let report = check.json();
        let d = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"] == "P009")
            .unwrap_or_else(|| panic!("{namespace}: no P009 in {report}"));
        assert_eq!(d["file"], "transforms/lab/transform.toml");
        assert_eq!(d["line"], 1);
        assert!(!d["help"].is_null());

        let run_out = run(&ws, &["run"]);
        assert_ne!(run_out.code, 0, "{namespace}: {}", run_out.stderr);
        assert!(!run_out.stderr.contains("panicked"), "{}", run_out.stderr);
        assert_untouched(&outside);
    }
}

#[test]
fn every_name_obeys_the_identifier_rule() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "transforms/lab/good.sql", "select 1 as id\n");
    write_file(root, "transforms/lab/bad-name.sql", "select 1 as id\n");
    write_file(
        root,
        "transforms/lab/pinned.sql",
        "-- @id ../pinned\nselect 1 as id\n",
    );
    write_file(root, "transforms/odd/transform.toml", "schema = \"a/b\"\n");
    write_file(root, "transforms/odd/m.sql", "select 1 as id\n");
    write_file(
        root,
        "phlo.toml",
        "[source.\"raw/../orders\"]\ncolumns = { id = \"bigint\" }\n",
    );
    let report = run(root, &["check", "--json"]).json();
    let diags = report["diagnostics"].as_array().unwrap();
    let p009: Vec<(&str, Option<u64>)> = diags
        .iter()
        .filter(|d| d["code"] == "P009")
        .map(|d| (d["file"].as_str().unwrap(), d["line"].as_u64()))
        .collect();
    assert!(
        p009.contains(&("transforms/lab/bad-name.sql", None)),
        "{p009:?}"
    );
    assert!(
        p009.contains(&("transforms/lab/pinned.sql", Some(1))),
        "{p009:?}"
    );
    assert!(
        p009.contains(&("transforms/odd/transform.toml", Some(1))),
        "{p009:?}"
    );
    assert!(p009.contains(&("phlo.toml", None)), "{p009:?}");
    assert_eq!(p009.len(), 4, "{diags:?}");
    assert!(codes(&report).iter().all(|c| c == "P009"), "{diags:?}");
}

// ---------------------------------------------------------------------------------------------
// No secret in any output

#[path = "iceberg_rest/server.rs"]
#[allow(dead_code)]
mod server;

/// Every secret the workspace below is configured with; none may appear in any output.
const CATALOG_PASSWORD: &str = "catalog-pw-51d7e2";
const CATALOG_QUERY_TOKEN: &str = "catalog-qtoken-8b1c";
const CATALOG_TOKEN: &str = "catalog-bearer-3f9a60";
const STATE_PASSWORD: &str = "state-pw-c4e81b";
const TYPO_STATE_PASSWORD: &str = "typo-pw-77a0d3";
const OL_PASSWORD: &str = "ol-pw-2d6f19";
const OL_API_KEY: &str = "ol-key-9e4b7c";
/// A warehouse adapter's password (`password_env`, PostgreSQL and Trino targets).
const ADAPTER_PASSWORD: &str = "adapter-pw-6a3f0e";
/// A password written into an adapter's `url`, which is refused (C002).
const ADAPTER_URL_PASSWORD: &str = "adapter-url-pw-19c4";
const SECRETS: &[&str] = &[
    CATALOG_PASSWORD,
    CATALOG_QUERY_TOKEN,
    CATALOG_TOKEN,
    STATE_PASSWORD,
    TYPO_STATE_PASSWORD,
    OL_PASSWORD,
    OL_API_KEY,
    ADAPTER_PASSWORD,
    ADAPTER_URL_PASSWORD,
];

struct Scan {
    /// `(where, text)` of everything produced.
    outputs: Vec<(String, String)>,
}

impl Scan {
    fn command(&mut self, dir: &Path, args: &[&str], env: &[(&str, String)]) -> common::Output {
        let mut cmd = std::process::Command::new(common::bin());
        cmd.arg("-C").arg(dir).args(args).env("NO_COLOR", "1");
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("OPENLINEAGE")) {
            cmd.env_remove(k);
        }
        cmd.env_remove("PHLO_STATE_URL");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("binary runs");
        let out = common::Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert!(!out.stderr.contains("panicked"), "{args:?}: {}", out.stderr);
        self.outputs
            .push((format!("{args:?} stdout"), out.stdout.clone()));
        self.outputs
            .push((format!("{args:?} stderr"), out.stderr.clone()));
        out
    }

    /// Every file below `dir` (`.phlo/`: artifacts, state.db, warehouse, events).
    fn files(&mut self, dir: &Path) {
        for entry in walk(dir) {
            let bytes = std::fs::read(&entry).unwrap_or_default();
            self.outputs.push((
                entry.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
            // A file named after a secret is a leak too.
            self.outputs
                .push(("file name".into(), entry.display().to_string()));
        }
    }

    fn assert_clean(&self) {
        for (place, text) in &self.outputs {
            for secret in SECRETS {
                assert!(
                    !text.contains(secret),
                    "secret {secret} leaked in {place}:\n{text}"
                );
            }
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn planted_secrets_never_leave_the_process() {
    let catalog = server::RestCatalog::start("", None, Some("the-right-token-0000"));
    let collector = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let collector_addr = collector.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in collector.incoming().flatten() {
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let pg = phlo_transform_state::testing::PgTestDb::create_blocking();
    // Trust authentication: any password is accepted, and must never be shown.
    let state_url = pg
        .url()
        .replacen("://postgres@", &format!("://postgres:{STATE_PASSWORD}@"), 1);
    assert!(state_url.contains(STATE_PASSWORD), "{state_url}");

    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    let catalog_url = catalog.url.replacen(
        "http://",
        &format!("http://cat_user:{CATALOG_PASSWORD}@"),
        1,
    ) + &format!("/?token={CATALOG_QUERY_TOKEN}");
    let ol_url = format!("http://ol_user:{OL_PASSWORD}@{collector_addr}");
    let phlo_toml = format!(
        "[openlineage]\nurl = \"{ol_url}\"\nfile = \".phlo/openlineage.jsonl\"\n\n\
         [source.\"raw.orders\"]\nlocation = \"data/orders.csv\"\n"
    );
    let with_catalog = format!(
        "{phlo_toml}\n[source.\"cat.events\"]\ncatalog = \"{catalog_url}\"\ntable = \"lab.events\"\n\
         token_env = \"PHLO_TEST_SECRET_TOKEN\"\ncolumns = {{ id = \"bigint\" }}\n"
    );
    write_file(ws, "data/orders.csv", "id,amount\n1,2.5\n2,3.5\n");
    write_file(
        ws,
        "transforms/shop/orders.sql",
        "-- @table\nselect id, amount from raw.orders\n",
    );
    write_file(
        ws,
        "transforms/shop/big.sql",
        "-- @view\nselect id from shop.orders where amount > 3\n",
    );
    write_file(
        ws,
        "transforms/shop/events.sql",
        "select id from cat.events\n",
    );
    write_file(ws, "phlo.toml", &with_catalog);

    let env = vec![
        ("PHLO_TEST_SECRET_TOKEN", CATALOG_TOKEN.to_string()),
        ("OPENLINEAGE__API_KEY", OL_API_KEY.to_string()),
        ("PHLO_STATE_URL", state_url.to_string()),
    ];
    let mut scan = Scan {
        outputs: Vec::new(),
    };
    // The catalog refuses the token (and echoes the credentials it was sent): A004 everywhere
    // a diagnostic goes, and the catalog URL in every artifact.
    let check = scan.command(ws, &["check"], &env);
    assert_eq!(check.code, 2, "{}", check.stderr);
    assert!(check.stderr.contains("error[A004]"), "{}", check.stderr);
    assert!(check.stderr.contains("***"), "{}", check.stderr);
    let json = scan.command(ws, &["check", "--json"], &env);
    assert!(json.stdout.contains("A004"), "{}", json.stdout);
    for args in [
        &["plan", "--json"][..],
        &["list", "--json"],
        &["inspect", "shop.events", "--json"],
        &["lineage", "--json"],
    ] {
        scan.command(ws, args, &env);
    }
    let manifest = std::fs::read_to_string(ws.join(".phlo/transform/manifest.json")).unwrap();
    assert!(manifest.contains("cat_user:***@"), "{manifest}");

    // Without the refusing catalog: a run through state, events and OpenLineage.
    write_file(ws, "phlo.toml", &phlo_toml);
    std::fs::remove_file(ws.join("transforms/shop/events.sql")).unwrap();
    let ran = scan.command(ws, &["run", "--json"], &env);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    scan.command(ws, &["run", "--events", "--full-refresh"], &env);
    scan.command(ws, &["state", "runs", "--json"], &env);
    scan.command(ws, &["state", "model", "shop.orders", "--json"], &env);
    // The same on the default SQLite state, so that state.db is scanned as a file.
    let sqlite_env: Vec<(&str, String)> = env
        .iter()
        .filter(|(k, _)| *k != "PHLO_STATE_URL")
        .cloned()
        .collect();
    let ran = scan.command(ws, &["run", "--json", "--full-refresh"], &sqlite_env);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    // A mistyped state URL scheme is an error, not a SQLite file named after the password.
    let typo = format!("postgress://phlo:{TYPO_STATE_PASSWORD}@127.0.0.1/state");
    let refused = scan.command(ws, &["--state", &typo, "plan"], &sqlite_env);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("postgress://"),
        "{}",
        refused.stderr
    );

    // Warehouse adapters: a password from password_env on the real PostgreSQL (trust
    // authentication accepts it) and on the real Trino (which refuses passwords over plain
    // HTTP: an error path), and one written into a url, which is refused.
    let warehouse = phlo_transform_state::testing::PgTestDb::create_blocking();
    let psql = std::process::Command::new("psql")
        .args(["-w", "-q", warehouse.url(), "-c"])
        .arg(
            "create schema raw; create table raw.orders (id bigint, amount double precision); \
             insert into raw.orders values (1, 2.5), (2, 3.5)",
        )
        .output()
        .expect("psql runs");
    assert!(
        psql.status.success(),
        "{}",
        String::from_utf8_lossy(&psql.stderr)
    );
    let pg_url_with_password = warehouse.url().replacen(
        "://postgres@",
        &format!("://postgres:{ADAPTER_URL_PASSWORD}@"),
        1,
    );
    assert!(pg_url_with_password.contains(ADAPTER_URL_PASSWORD));
    let with_adapters = format!(
        "{phlo_toml}\n[adapters.pg]\ntype = \"postgres\"\nurl = \"{}\"\n\
         password_env = \"PHLO_TEST_ADAPTER_PASSWORD\"\n\n\
         [adapters.tr]\ntype = \"trino\"\nurl = \"{}\"\nuser = \"phlo-test\"\n\
         password_env = \"PHLO_TEST_ADAPTER_PASSWORD\"\ncatalog = \"iceberg\"\n\n\
         [adapters.pgurl]\ntype = \"postgres\"\nurl = \"{pg_url_with_password}\"\n",
        warehouse.url(),
        std::env::var("PHLO_TEST_TRINO_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into()),
    );
    write_file(ws, "phlo.toml", &with_adapters);
    let mut adapter_env = sqlite_env.clone();
    adapter_env.push(("PHLO_TEST_ADAPTER_PASSWORD", ADAPTER_PASSWORD.to_string()));
    let on_pg = scan.command(ws, &["run", "--adapter", "pg", "--json"], &adapter_env);
    assert_eq!(on_pg.code, 0, "{}\n{}", on_pg.stdout, on_pg.stderr);
    assert_eq!(on_pg.json()["adapter"], "postgres", "{}", on_pg.stdout);
    for args in [
        &["plan", "--adapter", "pg", "--json"][..],
        &["state", "runs", "--json"],
        &["run", "--adapter", "tr", "--json"],
        &["plan", "--adapter", "tr"],
    ] {
        scan.command(ws, args, &adapter_env);
    }
    let refused = scan.command(ws, &["check", "--adapter", "pgurl"], &adapter_env);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("password"), "{}", refused.stderr);
    let refused = scan.command(ws, &["check", "--adapter", "pgurl", "--json"], &adapter_env);
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    let dump = std::process::Command::new("pg_dump")
        .arg(warehouse.url())
        .output()
        .expect("pg_dump runs");
    assert!(dump.status.success());
    let dump = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(
        dump.contains("orders"),
        "the warehouse dump is empty:\n{dump}"
    );
    scan.outputs.push(("PostgreSQL warehouse".into(), dump));

    // Everything the commands wrote (the inputs, phlo.toml included, are what they read).
    scan.files(&ws.join(".phlo"));
    assert!(ws.join(".phlo/openlineage.jsonl").is_file());
    assert!(ws.join(".phlo/transform/state.db").is_file());
    let dump = std::process::Command::new("pg_dump")
        .args(["--data-only", pg.url()])
        .output()
        .expect("pg_dump runs");
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dump = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(
        dump.contains("shop.orders"),
        "the state dump is empty:\n{dump}"
    );
    scan.outputs.push(("PostgreSQL state".into(), dump));
    scan.assert_clean();
}

// ---------------------------------------------------------------------------------------------
// Inputs that used to pass silently, crash or reach git

#[test]
fn a_byte_order_mark_is_not_sql() {
    let dir = tempfile::tempdir().unwrap();
    write_file(
        dir.path(),
        "transforms/lab/m.sql",
        "\u{feff}-- @table\nselect 1 as id\n",
    );
    let out = run(dir.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let inspect = run(dir.path(), &["inspect", "lab.m", "--json"]).json();
    assert_eq!(inspect["materialization"], "table", "{inspect}");
}

#[test]
fn incremental_columns_and_repeated_keys_are_checked_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(
        root,
        "transforms/lab/w.sql",
        "-- @incremental window=ts\nselect 1 as id\n",
    );
    write_file(
        root,
        "transforms/lab/p.sql",
        "-- @incremental partition=zz\nselect 1 as id\n",
    );
    write_file(
        root,
        "transforms/lab/k.sql",
        "-- @table\n-- @key id,id\nselect 1 as id\n",
    );
    let out = run(root, &["check", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let report = out.json();
    let diags = report["diagnostics"].as_array().unwrap();
    let located = |file: &str, severity: &str| -> Vec<u64> {
        diags
            .iter()
            .filter(|d| d["code"] == "P005" && d["file"] == file && d["severity"] == severity)
            .map(|d| d["line"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(located("transforms/lab/w.sql", "error"), [1], "{diags:?}");
    assert_eq!(located("transforms/lab/p.sql", "error"), [1], "{diags:?}");
    assert_eq!(located("transforms/lab/k.sql", "warning"), [2], "{diags:?}");
    // `@key id,id` gives one not-null and one unique test, not two of each.
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".phlo/transform/manifest.json")).unwrap(),
    )
    .unwrap();
    let mut tests: Vec<String> = manifest["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .filter(|t| t.starts_with("lab.k."))
        .collect();
    tests.sort();
    assert_eq!(tests, ["lab.k.not_null.id", "lab.k.unique.id"]);
}

#[test]
fn command_line_values_are_checked_before_use() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "transforms/lab/m.sql", "select 1 as id\n");
    common::git(root, &["init", "-q"]);
    common::git(root, &["add", "."]);
    common::git(root, &["commit", "-q", "-m", "one"]);
    let out = run(root, &["run", "-j", "0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("at least 1"), "{}", out.stderr);

    // A ref that git would read as an option.
    let pwned = root.join("pwned");
    let since = format!("--since=--output={}", pwned.display());
    let out = run(root, &["plan", "changed", &since, "--json"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let codes: Vec<String> = out.json()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes, ["L007"]);
    assert!(!pwned.exists());
}

#[test]
fn deep_and_long_expressions_are_coded_errors_not_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let plus = format!("select {} as x\n", vec!["1"; 100_000].join("+"));
    let union = vec!["select 1 as x"; 20_000].join("\nunion all\n");
    let parens = format!("select {}1{} as x\n", "(".repeat(5_000), ")".repeat(5_000));
    for (name, sql) in [("plus", &plus), ("unions", &union), ("parens", &parens)] {
        write_file(root, &format!("transforms/lab/{name}.sql"), sql);
    }
    let out = run(root, &["check", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let report = out.json();
    for name in ["plus", "unions", "parens"] {
        let d = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["file"] == format!("transforms/lab/{name}.sql"))
            .unwrap_or_else(|| panic!("{name}: no diagnostic in {report}"));
        assert_eq!(d["code"], "S004", "{d}");
        assert!(!d["help"].is_null());
    }
}

#[test]
fn a_deep_but_reasonable_expression_still_compiles() {
    let dir = tempfile::tempdir().unwrap();
    let sql = format!("select {} as x\n", vec!["1"; 500].join(" + "));
    write_file(dir.path(), "transforms/lab/m.sql", &sql);
    let out = run(dir.path(), &["check"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// Output that cannot be written, signals, concurrency

fn state_runs(root: &Path) -> Vec<(String, String)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use phlo_transform_state::StateStore;
        let store =
            phlo_transform_state::SqliteStateStore::open(&root.join(".phlo/transform/state.db"))
                .await
                .unwrap();
        store
            .runs(10)
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.command, r.status))
            .collect()
    })
}

#[test]
fn a_full_disk_or_a_closed_pipe_on_the_terminal_does_not_stop_the_run() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "transforms/lab/a.sql", "-- @table\nselect 1 as id\n");
    write_file(
        root,
        "transforms/lab/b.sql",
        "-- @view\nselect id from lab.a\n",
    );
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    // stdout and stderr on a full disk.
    let status = Command::new(common::bin())
        .arg("-C")
        .arg(root)
        .args(["run"])
        .env_remove("PHLO_STATE_URL")
        .stdout(Stdio::from(full()))
        .stderr(Stdio::from(full()))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // stdout and stderr on pipes whose reader has gone.
    let mut child = Command::new(common::bin())
        .arg("-C")
        .arg(root)
        .args(["run", "--full-refresh"])
        .env_remove("PHLO_STATE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let runs = state_runs(root);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|(_, s)| s == "passed"), "{runs:?}");
}

#[test]
fn a_second_writer_waits_then_fails_with_a_clear_code_and_a_dead_ones_runs_are_interrupted() {
    use phlo_transform_state::{LeaseRequest, RunRecord, SqliteStateStore, StateStore};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "transforms/lab/a.sql", "-- @table\nselect 1 as id\n");
    let state = root.join(".phlo/transform/state.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // A live writer elsewhere holds the lease for a minute.
    rt.block_on(async {
        let store = SqliteStateStore::open(&state).await.unwrap();
        let now = chrono_now_ms();
        let held = store
            .acquire_lease(&LeaseRequest {
                scope: "writer:local",
                holder: "another-host:4242:test",
                acquired_at: "2026-01-01T00:00:00Z",
                now_ms: now,
                ttl_ms: 60_000,
                take_over_from: None,
            })
            .await
            .unwrap();
        assert!(held.is_none());
    });
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(
        out.json()["diagnostics"][0]["code"],
        "Y006",
        "{}",
        out.stdout
    );
    assert!(state_runs(root).is_empty(), "the loser recorded a run");

    // That writer died (its lease expired) and left a run `running`.
    rt.block_on(async {
        let store = SqliteStateStore::open(&state).await.unwrap();
        store
            .renew_lease("writer:local", "another-host:4242:test", 0)
            .await
            .unwrap();
        store
            .begin_run(&RunRecord {
                run_id: "0000dead".into(),
                plan_id: "p".into(),
                environment: "local".into(),
                command: "run".into(),
                status: "running".into(),
                generation: 1,
                started_at: "2026-01-01T00:00:00Z".into(),
                finished_at: None,
                continued_from: None,
            })
            .await
            .unwrap();
    });
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let runs = state_runs(root);
    assert!(
        runs.contains(&("run".into(), "interrupted".into())),
        "{runs:?}"
    );
    assert!(runs.contains(&("run".into(), "passed".into())), "{runs:?}");
    // Released at the end: the next run does not wait.
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

fn chrono_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn concurrent_commands_on_a_fresh_workspace_do_not_trip_over_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..20 {
        write_file(
            root,
            &format!("transforms/lab/m{i}.sql"),
            "select 1 as id\n",
        );
    }
    // All started before any finishes: they race for the fresh state database (migrations)
    // and for the artifact files.
    let children: Vec<std::process::Child> = (0..6)
        .map(|i| {
            std::process::Command::new(common::bin())
                .arg("-C")
                .arg(root)
                .args([if i % 2 == 0 { "plan" } else { "check" }, "--json"])
                .env_remove("PHLO_STATE_URL")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A namespace folder that cannot be listed used to be skipped silently (`check` returned 0).
/// Root reads every folder, so as root the binary runs as `nobody` (through `setpriv`).
#[cfg(unix)]
#[test]
fn an_unreadable_namespace_folder_is_an_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    write_file(&root, "transforms/open/m.sql", "select 1 as id\n");
    write_file(&root, "transforms/closed/m.sql", "select 1 as id\n");
    let as_root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if as_root {
        // `nobody` must reach the binary and the workspace.
        let bin = dir.path().join("phlo-transform");
        if std::fs::hard_link(common::bin(), &bin).is_err() {
            std::fs::copy(common::bin(), &bin).unwrap();
        }
        // A binary built with `--features duckdb` loads libduckdb.so from LD_LIBRARY_PATH,
        // which is under /root as well: `nobody` gets it beside the binary.
        let libs = dir.path().join("lib");
        std::fs::create_dir_all(&libs).unwrap();
        let search = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
        for lib in std::env::split_paths(&search).map(|d| d.join("libduckdb.so")) {
            let copy = libs.join("libduckdb.so");
            if lib.is_file() && !copy.exists() && std::fs::hard_link(&lib, &copy).is_err() {
                std::fs::copy(&lib, &copy).unwrap();
            }
        }
        for p in [dir.path(), bin.as_path(), libs.as_path()] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        if libs.join("libduckdb.so").exists() {
            std::fs::set_permissions(
                libs.join("libduckdb.so"),
                std::fs::Permissions::from_mode(0o755),
            )
            .unwrap();
        }
        for p in walk(&root).iter().chain(std::slice::from_ref(&root)) {
            let mut p = p.clone();
            while p.starts_with(&root) {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
                p.pop();
            }
        }
        let mut cmd = std::process::Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .env("LD_LIBRARY_PATH", &libs);
        cmd
    } else {
        std::process::Command::new(common::bin())
    };
    std::fs::set_permissions(
        root.join("transforms/closed"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let out = cmd
        .arg("-C")
        .arg(&root)
        .args(["check", "--json"])
        .env_remove("PHLO_STATE_URL")
        .output()
        .unwrap();
    std::fs::set_permissions(
        root.join("transforms/closed"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let d = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "P010" && d["severity"] == "error")
        .unwrap_or_else(|| panic!("no P010 error in {report}"));
    assert_eq!(d["severity"], "error");
    assert!(
        d["file"].as_str().unwrap().contains("transforms/closed"),
        "{d}"
    );
}
