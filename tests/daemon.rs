//! `phlo-transform daemon` over real HTTP: the built binary on a copy of testdata/lsp, a
//! plain HTTP/1.1 client on std's TcpStream, and the documents compared with what the same
//! commands print with `--json`.

mod common;
#[path = "support/daemon_process.rs"]
mod daemon_process;

use daemon_process::DaemonProcess;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

const TOKEN: &str = "s3cret";

/// A daemon process, killed when dropped.
struct Daemon {
    process: DaemonProcess,
}

impl Daemon {
    fn start(root: &Path) -> Daemon {
        let process =
            DaemonProcess::start(&common::bin(), root, &["--token", TOKEN, "--poll-ms", "50"]);
        Daemon { process }
    }

    /// One request; `(status, body as JSON)`.
    fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        self.call_with(method, path, token, body, &[])
    }

    fn call_with(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut stream = TcpStream::connect(&self.process.addr).unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.process.addr,
            body.len()
        );
        if let Some(t) = token {
            request.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let response = String::from_utf8(response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
        let body = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {body}"));
        (status, body)
    }

    fn get(&self, path: &str) -> Value {
        let (status, body) = self.call("GET", path, Some(TOKEN), None);
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// Polls operation `id` until it has finished.
    fn finished(&self, id: &str) -> Value {
        let start = Instant::now();
        loop {
            let op = self.get(&format!("/v1/operations/{id}"));
            if ["succeeded", "failed", "cancelled"].contains(&op["status"].as_str().unwrap()) {
                return op;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "operation never finished: {op}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `code` is the error's code, with a message and a help line.
fn assert_error(got: (u16, Value), status: u16, code: &str) {
    let (s, body) = got;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(
        body["error"]["help"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// The keys `document` requires of the 200 (or 202) response of `method path`.
fn required_keys(document: &Value, method: &str, path: &str) -> Vec<String> {
    let responses = &document["paths"][path][method.to_lowercase()]["responses"];
    let ok = if responses["200"].is_object() {
        &responses["200"]
    } else {
        &responses["202"]
    };
    let mut schema = &ok["content"]["application/json"]["schema"];
    if let Some(r) = schema["$ref"].as_str() {
        schema = &document["components"]["schemas"][r.rsplit('/').next().unwrap()];
    }
    schema["required"]
        .as_array()
        .unwrap_or_else(|| panic!("{method} {path}: no schema in the OpenAPI document"))
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn reads_operations_auth_and_errors_over_http() {
    let dir = common::workspace("lsp");
    let root = dir.path();
    let daemon = Daemon::start(root);
    let openapi = daemon.get("/v1/openapi.json");
    // Every answer a test reads is held to the document's required keys.
    let checked = |method: &str, template: &str, body: &Value| {
        for key in required_keys(&openapi, method, template) {
            assert!(
                body.get(&key).is_some(),
                "{method} {template}: no `{key}` in {body}"
            );
        }
    };

    // Auth: /status is open, everything else needs the token.
    let (status, body) = daemon.call("GET", "/status", None, None);
    assert_eq!(
        (status, &body["status"], &body["models"]),
        (200, &json!("ok"), &json!(2)),
        "{body}"
    );
    checked("GET", "/status", &body);
    assert_error(daemon.call("GET", "/v1/check", None, None), 401, "API015");
    assert_error(
        daemon.call("GET", "/v1/check", Some("wrong"), None),
        401,
        "API015",
    );

    // Reads are the commands' `--json` documents.
    let cli = |args: &[&str]| common::run(root, args).json();
    let check = daemon.get("/v1/check");
    assert_eq!(check, cli(&["check", "--json"]));
    checked("GET", "/v1/check", &check);
    let inspected = daemon.get("/v1/models/shop.orders");
    assert_eq!(inspected, cli(&["inspect", "shop.orders", "--json"]));
    checked("GET", "/v1/models/{model}", &inspected);
    let models = daemon.get("/v1/models");
    assert_eq!(models, cli(&["list", "--json"]));
    checked("GET", "/v1/models", &models);
    let column = daemon.get("/v1/lineage?target=shop.customer_totals.total");
    assert_eq!(
        column,
        cli(&["lineage", "shop.customer_totals.total", "--json"])
    );
    let impact = daemon.get("/v1/impact?target=raw.orders.amount");
    assert_eq!(impact, cli(&["impact", "raw.orders.amount", "--json"]));
    checked("GET", "/v1/impact", &impact);
    let graph = daemon.get("/v1/graph");
    assert_eq!(graph, cli(&["lineage", "--format", "graph"]));
    checked("GET", "/v1/graph", &graph);
    let plan = daemon.get("/v1/plan");
    checked("GET", "/v1/plan", &plan);
    let building: Vec<&str> = plan["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["decision"].as_str().unwrap())
        .collect();
    assert_eq!(building, ["build", "build"], "{plan}");

    // Errors: coded, with a help line.
    assert_error(
        daemon.call("GET", "/v1/models/shop.ordrs", Some(TOKEN), None),
        404,
        "P008",
    );
    assert_error(
        daemon.call("GET", "/v1/nothing", Some(TOKEN), None),
        404,
        "API001",
    );
    assert_error(
        daemon.call("POST", "/v1/check", Some(TOKEN), None),
        405,
        "API002",
    );
    assert_error(
        daemon.call("GET", "/v1/state/runs?limit=many", Some(TOKEN), None),
        400,
        "API003",
    );
    let bad = json!({"kind": "run", "selct": ["x"]});
    assert_error(
        daemon.call("POST", "/v1/operations", Some(TOKEN), Some(&bad)),
        400,
        "API003",
    );
    assert_error(
        daemon.call("GET", "/v1/operations/nope", Some(TOKEN), None),
        404,
        "API004",
    );

    // A keyed run: queued, then succeeded, its report that of `run --json`.
    let run = json!({"kind": "run"});
    let key = [("Idempotency-Key", "first-run")];
    let (status, op) = daemon.call_with("POST", "/v1/operations", Some(TOKEN), Some(&run), &key);
    assert_eq!((status, &op["status"]), (202, &json!("queued")), "{op}");
    checked("POST", "/v1/operations", &op);
    // One mutating operation at a time.
    let test = json!({"kind": "test"});
    assert_error(
        daemon.call("POST", "/v1/operations", Some(TOKEN), Some(&test)),
        409,
        "API008",
    );
    let id = op["id"].as_str().unwrap().to_string();
    let done = daemon.finished(&id);
    assert_eq!(done["status"], "succeeded", "{done}");
    let report = &done["result"];
    assert_eq!(report["status"], "passed", "{done}");
    assert_eq!(done["run_id"], report["run_id"], "{done}");
    assert_eq!(done["progress"]["models_done"], 2, "{done}");
    assert_eq!(done["progress"]["models_total"], 2, "{done}");
    assert_error(
        daemon.call(
            "POST",
            &format!("/v1/operations/{id}/cancel"),
            Some(TOKEN),
            None,
        ),
        409,
        "API005",
    );
    // The state reads see the run.
    let runs = daemon.get("/v1/state/runs");
    checked("GET", "/v1/state/runs", &runs);
    assert_eq!(runs["runs"][0]["run_id"], report["run_id"], "{runs}");
    let run_id = report["run_id"].as_str().unwrap();
    let detail = daemon.get(&format!("/v1/state/runs/{run_id}"));
    assert_eq!(detail, cli(&["state", "show", run_id, "--json"]));
    checked("GET", "/v1/state/runs/{run}", &detail);
    // The inspection opened before the run sees the run's records.
    let inspected = daemon.get("/v1/models/shop.orders");
    assert_eq!(inspected["state"]["status"], "current", "{inspected}");
    assert_eq!(inspected, cli(&["inspect", "shop.orders", "--json"]));
    let failures = daemon.get("/v1/state/failures");
    assert_eq!(failures, cli(&["state", "failures", "--json"]));
    checked("GET", "/v1/state/failures", &failures);
    let gates = daemon.get("/v1/gates?model=shop.orders");
    assert_eq!(gates, cli(&["gates", "shop.orders", "--json"]));
    checked("GET", "/v1/gates", &gates);
    // Replaying the key returns the first operation; the key with another request is refused.
    let (status, again) = daemon.call_with("POST", "/v1/operations", Some(TOKEN), Some(&run), &key);
    assert_eq!((status, &again["id"]), (200, &json!(id)), "{again}");
    assert_error(
        daemon.call_with("POST", "/v1/operations", Some(TOKEN), Some(&test), &key),
        409,
        "API016",
    );
    // Nothing changed since: the plan now skips both models.
    let plan = daemon.get("/v1/plan");
    assert!(
        plan["models"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["decision"] == "skip"),
        "{plan}"
    );

    // A model file written on disk is compiled without being asked.
    common::write_file(
        root,
        "transforms/shop/big_orders.sql",
        "select id from shop.orders where amount > 10\n",
    );
    let start = Instant::now();
    while daemon.get("/status")["models"] != 3 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the new model never showed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let inspected = daemon.get("/v1/models/shop.big_orders");
    assert_eq!(
        inspected["upstream"],
        cli(&["inspect", "shop.big_orders", "--json"])["upstream"]
    );

    // A restart: the journal keeps every operation and the key still replays (never a second run).
    drop(daemon);
    let journal = root.join(".phlo/transform/operations.jsonl");
    let mut interrupted: Value = serde_json::from_str(
        std::fs::read_to_string(&journal)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    interrupted["id"] = json!("0190f000-0000-7000-8000-000000000000");
    interrupted["status"] = json!("running");
    interrupted["idempotency_key"] = Value::Null;
    let mut lines = std::fs::read_to_string(&journal).unwrap();
    lines.push_str(&format!("{interrupted}\n"));
    std::fs::write(&journal, lines).unwrap();
    let daemon = Daemon::start(root);
    let (status, again) = daemon.call_with("POST", "/v1/operations", Some(TOKEN), Some(&run), &key);
    assert_eq!(
        (status, &again["id"], &again["status"]),
        (200, &json!(id), &json!("succeeded")),
        "{again}"
    );
    let restored = daemon.get("/v1/operations/0190f000-0000-7000-8000-000000000000");
    assert_eq!(
        (&restored["status"], &restored["error"]["code"]),
        (&json!("failed"), &json!("API009")),
        "{restored}"
    );
    let listed = daemon.get("/v1/operations");
    assert_eq!(
        listed["operations"].as_array().unwrap().len(),
        2,
        "{listed}"
    );
}

/// `POST /v1/operations/<id>/cancel` on a run whose model sleeps on PostgreSQL: the operation
/// ends cancelled and the server no longer runs its query (the daemon cancels it there, as
/// Ctrl-C does on the command line). The query sleeps for ten minutes, past `finished`'s
/// two-minute wait, so an operation that only ends when the query does fails the test. Then
/// a keyed run killed with SIGKILL mid-query is, after a restart, answered by its key as
/// interrupted (API009) and never run again.
#[test]
fn cancelling_or_killing_a_run_on_postgres() {
    let pg = phlo_transform_state::testing::PgTestDb::create_blocking();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let toml = format!("[adapter]\ntype = \"postgres\"\nurl = \"{}\"\n", pg.url());
    common::write_file(root, "phlo.toml", &toml);
    common::write_file(
        root,
        "transforms/x/slow.sql",
        "-- @table\nselect 1 as id from (select pg_sleep(600)) as s\n",
    );
    let sleeping = || -> i64 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(pg.url()).await.unwrap();
                sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' \
                     AND state = 'active' AND pid <> pg_backend_pid()",
                )
                .fetch_one(&mut conn)
                .await
                .unwrap()
            })
    };
    let daemon = Daemon::start(root);
    let (status, op) = daemon.call(
        "POST",
        "/v1/operations",
        Some(TOKEN),
        Some(&json!({"kind": "run"})),
    );
    assert_eq!(status, 202, "{op}");
    let id = op["id"].as_str().unwrap().to_string();
    let start = Instant::now();
    while sleeping() == 0 {
        let op = daemon.get(&format!("/v1/operations/{id}"));
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the model's query never reached the server: {op}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, cancelling) = daemon.call(
        "POST",
        &format!("/v1/operations/{id}/cancel"),
        Some(TOKEN),
        None,
    );
    assert_eq!(status, 202, "{cancelling}");
    let done = daemon.finished(&id);
    assert_eq!(done["status"], "cancelled", "{done}");
    assert_eq!(
        sleeping(),
        0,
        "the server still runs the cancelled query: {done}"
    );

    // kill -9 while a keyed run is in flight: after the restart the key answers with that
    // operation, failed as interrupted, and nothing runs a second time.
    let key = [("Idempotency-Key", "killed-run")];
    let run = json!({"kind": "run"});
    let (status, op) = daemon.call_with("POST", "/v1/operations", Some(TOKEN), Some(&run), &key);
    assert_eq!(status, 202, "{op}");
    let start = Instant::now();
    while sleeping() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the keyed run never reached the server"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(daemon);
    let daemon = Daemon::start(root);
    let (status, again) = daemon.call_with("POST", "/v1/operations", Some(TOKEN), Some(&run), &key);
    assert_eq!(
        (
            status,
            &again["id"],
            &again["status"],
            &again["error"]["code"]
        ),
        (200, &op["id"], &json!("failed"), &json!("API009")),
        "{again}"
    );
    let listed = daemon.get("/v1/operations");
    let statuses: Vec<&str> = listed["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.len(), 2, "{listed}");
    assert!(
        !statuses.contains(&"queued") && !statuses.contains(&"running"),
        "{listed}"
    );
}

/// `promote` as an operation: the gates only with `check`, then published, each result the
/// document `promote --json` prints, the promotion then among main's events in the
/// environment reads; an unknown candidate fails with the library's code; a submission
/// without a candidate is API003.
#[test]
fn promote_is_an_operation() {
    let dir = common::workspace("lsp");
    let root = dir.path();
    let daemon = Daemon::start(root);
    let cli = |args: &[&str]| common::run(root, args).json();
    let submit = |body: Value| {
        let (status, op) = daemon.call("POST", "/v1/operations", Some(TOKEN), Some(&body));
        assert_eq!(status, 202, "{op}");
        daemon.finished(op["id"].as_str().unwrap())
    };
    assert_error(
        daemon.call(
            "POST",
            "/v1/operations",
            Some(TOKEN),
            Some(&json!({"kind": "promote"})),
        ),
        400,
        "API003",
    );
    assert_error(
        daemon.call(
            "POST",
            "/v1/operations",
            Some(TOKEN),
            Some(&json!({"kind": "run", "candidate": "dev"})),
        ),
        400,
        "API003",
    );
    assert_eq!(submit(json!({"kind": "run"}))["status"], "succeeded");
    cli(&["ref", "create", "dev", "--json"]);
    common::write_file(
        root,
        "transforms/shop/orders.sql",
        "select id, customer_id, amount * 2 as amount\nfrom raw.orders\nwhere status = 'paid'\n",
    );
    let built = submit(json!({"kind": "run", "environment": "dev"}));
    assert_eq!(built["status"], "succeeded", "{built}");
    let main_before = cli(&["ref", "show", "main", "--json"])["hash"].clone();

    let checked = submit(json!({"kind": "promote", "candidate": "dev", "check": true}));
    assert_eq!(checked["status"], "succeeded", "{checked}");
    assert_eq!(checked["result"]["promoted"], false, "{checked}");
    assert_eq!(cli(&["ref", "show", "main", "--json"])["hash"], main_before);

    let promoted = submit(json!({"kind": "promote", "candidate": "dev", "to": "main"}));
    assert_eq!(promoted["status"], "succeeded", "{promoted}");
    assert_eq!(promoted["result"]["promoted"], true, "{promoted}");
    assert_eq!(promoted["result"]["from"], "dev", "{promoted}");
    assert_ne!(cli(&["ref", "show", "main", "--json"])["hash"], main_before);
    // The environments as reads: the promotion is among main's events.
    assert_eq!(daemon.get("/v1/refs"), cli(&["ref", "list", "--json"]));
    let evidence = daemon.get("/v1/state/evidence/dev");
    assert_eq!(evidence, cli(&["state", "evidence", "dev", "--json"]));
    assert_eq!(evidence["evidence"][0]["kind"], "environment", "{evidence}");
    let main = daemon.get("/v1/refs/main");
    assert_eq!(main, cli(&["ref", "show", "main", "--json"]));
    assert_eq!(
        main["events"][0]["body"]["promotion_id"], promoted["result"]["promotion_id"],
        "{main}"
    );

    let unknown = submit(json!({"kind": "promote", "candidate": "nope"}));
    assert_eq!(unknown["status"], "failed", "{unknown}");
    let code = unknown["error"]["code"].as_str().unwrap();
    assert_eq!(
        unknown["result"]["diagnostics"][0]["code"], code,
        "{unknown}"
    );
}
