//! OpenLineage (issue 4): the design-time document (openlineage.json) and the run events, all
//! validated against the vendored JSON Schemas (testdata/openlineage/schemas) — each event
//! against OpenLineage.json, each facet against the file its `_schemaURL` names — and
//! delivered to a collector served by the test itself: in order, with the bearer key, and
//! without ever changing or holding up the run when the collector is down or slow.

mod common;

use common::{by_name, copy_dir, testdata, write_file};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Schema validation

/// Serves the vendored schemas by their `$id`: nothing is fetched.
struct LocalSchemas(HashMap<String, Value>);

impl jsonschema::Retrieve for LocalSchemas {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        self.0
            .get(uri.as_str())
            .cloned()
            .ok_or_else(|| format!("{uri} is not vendored").into())
    }
}

struct Schemas {
    event: jsonschema::Validator,
    /// Facet schema `$id` → (its validator, the facet keys it defines).
    facets: HashMap<String, (jsonschema::Validator, BTreeSet<String>)>,
}

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

impl Schemas {
    fn load() -> Schemas {
        let dir = testdata("openlineage/schemas");
        let core = load(&dir.join("OpenLineage.json"));
        let mut by_id = HashMap::new();
        by_id.insert(core["$id"].as_str().unwrap().to_string(), core.clone());
        // The standard facets, and phlo-transform's own (docs/openlineage).
        let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openlineage");
        let facet_files: Vec<Value> = [dir.join("facets"), own]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).unwrap())
            .map(|e| load(&e.unwrap().path()))
            .collect();
        for f in &facet_files {
            by_id.insert(f["$id"].as_str().unwrap().to_string(), f.clone());
        }
        let build = |schema: &Value| {
            jsonschema::options()
                .should_validate_formats(true)
                .with_retriever(LocalSchemas(by_id.clone()))
                .build(schema)
                .unwrap()
        };
        let facets = facet_files
            .iter()
            .map(|f| {
                let keys = f["properties"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect();
                (f["$id"].as_str().unwrap().to_string(), (build(f), keys))
            })
            .collect();
        Schemas {
            event: build(&core),
            facets,
        }
    }

    /// Panics, naming the event, unless `event` and every facet in it are valid.
    fn check(&self, event: &Value) {
        let errors: Vec<String> = self
            .event
            .iter_errors(event)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}\nin {event:#}");
        for (key, facet) in facets_of(event) {
            let url = facet["_schemaURL"].as_str().expect("_schemaURL");
            let id = url.split('#').next().unwrap();
            let (validator, keys) = self
                .facets
                .get(id)
                .unwrap_or_else(|| panic!("facet `{key}` names {id}, which is not vendored"));
            assert!(keys.contains(&key), "{id} defines no facet `{key}`");
            let errors: Vec<String> = validator
                .iter_errors(&json!({ key.clone(): facet }))
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "facet {key}: {errors:#?}\nin {event:#}");
        }
    }
}

/// Every `(key, facet)` of an event: run, job, dataset, input and output facets.
fn facets_of(event: &Value) -> Vec<(String, Value)> {
    let mut holders: Vec<&Value> = vec![
        &event["run"]["facets"],
        &event["job"]["facets"],
        &event["dataset"]["facets"],
    ];
    for list in ["inputs", "outputs"] {
        for d in event[list].as_array().into_iter().flatten() {
            holders.extend([&d["facets"], &d["inputFacets"], &d["outputFacets"]]);
        }
    }
    holders
        .into_iter()
        .filter_map(Value::as_object)
        .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect()
}

#[test]
fn the_validation_rejects_what_the_schemas_forbid() {
    let schemas = Schemas::load();
    let base = json!({
        "eventTime": "2026-01-01T00:00:00Z",
        "producer": "urn:phlo-transform:test",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "eventType": "START",
        "run": { "runId": "01a22866-8dc9-7360-9acf-d6f83eaa2504" },
        "job": { "namespace": "n", "name": "j" },
    });
    schemas.check(&base);
    let rejects = |event: Value| {
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| schemas.check(&event)));
        assert!(caught.is_err(), "accepted {event:#}");
    };
    let mut bad_type = base.clone();
    bad_type["eventType"] = json!("FINISHED");
    rejects(bad_type);
    let mut bad_uuid = base.clone();
    bad_uuid["run"]["runId"] = json!("run-1");
    rejects(bad_uuid);
    // A facet missing a field its schema requires (errorMessage needs programmingLanguage).
    let mut bad_facet = base.clone();
    bad_facet["run"]["facets"] = json!({ "errorMessage": {
        "_producer": "urn:phlo-transform:test",
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet",
        "message": "boom",
    }});
    rejects(bad_facet);
    // A facet whose schema version is not the vendored one.
    let mut unknown = base;
    unknown["run"]["facets"] = json!({ "errorMessage": {
        "_producer": "urn:phlo-transform:test",
        "_schemaURL": "https://openlineage.io/spec/facets/9-9-9/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet",
        "message": "boom", "programmingLanguage": "SQL",
    }});
    rejects(unknown);
}

// ---------------------------------------------------------------------------------------------
// Running the binary with OpenLineage settings

struct Ran {
    code: i32,
    report: Value,
    stderr: String,
    elapsed: Duration,
}

/// `run --json` in `dir` with exactly the `OPENLINEAGE__*` variables of `env`.
fn run_with(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Ran {
    let mut cmd = common::with_openlineage_env(dir, args, env);
    let t0 = Instant::now();
    let out = cmd.output().expect("binary runs");
    let elapsed = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Ran {
        code: out.status.code().unwrap_or(-1),
        report: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed,
    }
}

/// x.a → x.b (fails at execution) → x.c (blocked); x.d → x.e: as tests/execution.rs.
fn failing_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    common::spec64_workspace(root);
    ws
}

fn statuses(r: &Ran) -> BTreeMap<String, String> {
    by_name(&r.report, "status")
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A collector

#[derive(Clone, Debug)]
struct Request {
    path: String,
    /// The last `Authorization` header.
    authorization: Option<String>,
    /// How many `Authorization` headers the request had.
    authorizations: usize,
    body: String,
}

/// An HTTP server on a free local port recording every request; it answers 200 after `delay`.
struct Collector {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Collector {
    fn start(delay: Duration) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = seen.clone();
                std::thread::spawn(move || serve(stream, &seen, delay));
            }
        });
        Collector { url, requests }
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// Answers the requests of one connection (keep-alive) until the client closes it.
fn serve(stream: TcpStream, seen: &Mutex<Vec<Request>>, delay: Duration) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let (mut length, mut authorization, mut authorizations) = (0, None, 0);
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "authorization" => {
                    authorization = Some(value.trim().to_string());
                    authorizations += 1;
                }
                _ => {}
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        std::thread::sleep(delay);
        seen.lock().unwrap().push(Request {
            path,
            authorization,
            authorizations,
            body: String::from_utf8(body).unwrap(),
        });
        let answer = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Design time

/// `lineage` writes openlineage.json (since issue 17 `check` only keeps an existing one current).
fn design_document(root: &Path) -> Vec<Value> {
    let out = run_with(root, &["lineage"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = load(&root.join(".phlo/transform/openlineage.json"));
    doc.as_array().expect("a bare array").clone()
}

/// The last segment of a dataset name: the model or source name for every naming convention
/// phlo uses (`/…/warehouse/x.a`, `raw.orders`).
fn short(name: &str) -> &str {
    name.rsplit('/').next().unwrap()
}

#[test]
fn the_design_document_validates_and_its_column_lineage_is_the_lineage_graphs() {
    let schemas = Schemas::load();
    let ws = common::workspace("lineage");
    let events = design_document(ws.path());
    for e in &events {
        schemas.check(e);
    }
    let jobs: BTreeSet<&str> = events
        .iter()
        .filter_map(|e| e["job"]["name"].as_str())
        .collect();
    let datasets: BTreeSet<&str> = events
        .iter()
        .filter_map(|e| e["dataset"]["name"].as_str())
        .collect();
    assert!(
        jobs.contains("cases.join_star") && jobs.len() > 10,
        "{jobs:?}"
    );
    assert_eq!(
        datasets,
        BTreeSet::from(["raw.customers", "raw.orders", "raw.payments"])
    );
    for e in events.iter().filter(|e| e.get("job").is_some()) {
        assert!(e.get("run").is_none(), "a JobEvent has no run");
        let facets = &e["job"]["facets"];
        assert_eq!(facets["jobType"]["integration"], "PHLO_TRANSFORM");
        assert_eq!(facets["jobType"]["jobType"], "MODEL");
        assert_eq!(facets["jobType"]["processingType"], "BATCH");
        assert!(facets["sql"]["query"].as_str().unwrap().contains("select"));
    }

    // One model's columnLineage, edge for edge, against lineage.json's derives edges.
    let model = "cases.join_star";
    let lineage = load(&ws.path().join(".phlo/transform/lineage.json"));
    let mut from_graph = BTreeSet::new();
    for e in lineage["edges"].as_array().unwrap() {
        let to = e["to"].as_str().unwrap();
        if e["kind"] != "derives" || !to.starts_with(&format!("dataset://{model}#")) {
            continue;
        }
        let (out_col, (in_ds, in_col)) = (
            to.split_once('#').unwrap().1,
            e["from"]
                .as_str()
                .unwrap()
                .strip_prefix("dataset://")
                .unwrap()
                .split_once('#')
                .unwrap(),
        );
        from_graph.insert((
            out_col.to_string(),
            in_ds.to_string(),
            in_col.to_string(),
            e["directness"].as_str().unwrap().to_uppercase(),
            e["transformation"].as_str().unwrap().to_uppercase(),
        ));
    }
    let job = events.iter().find(|e| e["job"]["name"] == model).unwrap();
    let fields = job["outputs"][0]["facets"]["columnLineage"]["fields"]
        .as_object()
        .unwrap();
    let mut from_facet = BTreeSet::new();
    for (out_col, f) in fields {
        for input in f["inputFields"].as_array().unwrap() {
            for t in input["transformations"].as_array().unwrap() {
                from_facet.insert((
                    out_col.clone(),
                    short(input["name"].as_str().unwrap()).to_string(),
                    input["field"].as_str().unwrap().to_string(),
                    t["type"].as_str().unwrap().to_string(),
                    t["subtype"].as_str().unwrap().to_string(),
                ));
            }
        }
    }
    assert!(
        from_graph.iter().any(|e| e.3 == "INDIRECT"),
        "the case has a join key: {from_graph:?}"
    );
    assert_eq!(from_facet, from_graph);
}

#[test]
fn the_lab_example_design_document_validates() {
    let schemas = Schemas::load();
    let ws = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/lab"),
        ws.path(),
    );
    let events = design_document(ws.path());
    assert!(events.len() > 5);
    for e in &events {
        schemas.check(e);
    }
    // Sources with a location are named by it (namespace `file`, absolute path).
    let source = events.iter().find(|e| e.get("dataset").is_some()).unwrap();
    assert_eq!(source["dataset"]["namespace"], "file");
    assert!(source["dataset"]["name"].as_str().unwrap().starts_with('/'));
}

// ---------------------------------------------------------------------------------------------
// Run time

/// Issue 10: userinfo in OPENLINEAGE__URL used to become a Basic header sent before the
/// API key's Bearer one, so the collector never saw the key.
#[test]
fn userinfo_in_the_collector_url_does_not_drop_the_api_key() {
    let collector = Collector::start(Duration::ZERO);
    let ws = failing_workspace();
    let url = collector
        .url
        .replacen("http://", "http://ol-user:ol-pass-77@", 1);
    let ran = run_with(
        ws.path(),
        &["run", "--json"],
        &[
            ("OPENLINEAGE__URL", url),
            ("OPENLINEAGE__API_KEY", KEY.to_string()),
        ],
    );
    let requests = collector.requests();
    assert!(!requests.is_empty(), "{}", ran.stderr);
    for r in &requests {
        assert_eq!(r.authorizations, 1, "{r:?}");
        assert_eq!(r.authorization.as_deref(), Some(&*format!("Bearer {KEY}")));
    }
    assert!(!ran.stderr.contains("ol-pass-77"), "{}", ran.stderr);
}

const KEY: &str = "s3cr3t-api-key-4d2f";

#[test]
fn a_run_sends_start_then_complete_or_fail_per_model_to_the_collector_and_the_file() {
    let schemas = Schemas::load();
    let collector = Collector::start(Duration::ZERO);
    let ws = failing_workspace();
    let lines = ws.path().join("out/events.jsonl");
    let ran = run_with(
        ws.path(),
        &["run", "--json"],
        &[
            ("OPENLINEAGE__URL", collector.url.clone()),
            ("OPENLINEAGE__API_KEY", KEY.to_string()),
            ("OPENLINEAGE__FILE", lines.display().to_string()),
        ],
    );
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let requests = collector.requests();
    assert!(!requests.is_empty(), "{}", ran.stderr);
    for r in &requests {
        assert_eq!(r.path, "/api/v1/lineage");
        assert_eq!(r.authorization.as_deref(), Some(&*format!("Bearer {KEY}")));
        assert!(!r.body.contains(KEY), "the key leaked into {}", r.body);
    }
    assert!(!ran.stderr.contains(KEY));
    let events: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect();
    for e in &events {
        schemas.check(e);
    }
    // The file transport writes the same events, in the same order.
    assert_eq!(read_lines(&lines), events);

    let sequence: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["job"]["name"].as_str().unwrap().to_string(),
                e["eventType"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let of = |job: &str| -> Vec<&str> {
        sequence
            .iter()
            .filter(|(j, _)| j == job)
            .map(|(_, t)| t.as_str())
            .collect()
    };
    assert_eq!(of("x.a"), ["START", "COMPLETE"]);
    assert_eq!(of("x.b"), ["START", "FAIL"]);
    assert_eq!(of("x.d"), ["START", "COMPLETE"]);
    assert_eq!(of("x.e"), ["START", "COMPLETE"]);
    assert!(of("x.c").is_empty(), "a blocked model does not run");
    assert_eq!(sequence.first().unwrap().0, "phlo-transform.run");
    assert_eq!(sequence.first().unwrap().1, "START");
    assert_eq!(
        sequence.last().unwrap(),
        &("phlo-transform.run".to_string(), "FAIL".to_string())
    );

    // Run ids: the parent is the phlo run; each model's run points at it.
    let parent = &events[0]["run"]["runId"];
    let run_id = ran.report["run_id"].as_str().unwrap();
    assert_eq!(parent.as_str().unwrap().replace('-', ""), run_id);
    let model_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["job"]["name"] != "phlo-transform.run")
        .collect();
    for e in &model_events {
        assert_eq!(e["run"]["facets"]["parent"]["run"]["runId"], *parent);
        assert_eq!(
            e["run"]["facets"]["parent"]["job"]["name"],
            "phlo-transform.run"
        );
        assert_eq!(e["job"]["namespace"], "phlo-transform");
    }
    let find = |job: &str, kind: &str| {
        *model_events
            .iter()
            .find(|e| e["job"]["name"] == job && e["eventType"] == kind)
            .unwrap()
    };
    assert_eq!(
        find("x.a", "START")["run"]["runId"],
        find("x.a", "COMPLETE")["run"]["runId"]
    );
    assert_ne!(
        find("x.a", "START")["run"]["runId"],
        find("x.b", "START")["run"]["runId"]
    );
    // Real times: the model's own start and end, as run.json has them.
    let a = ran.report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "x.a")
        .unwrap();
    assert_eq!(find("x.a", "START")["eventTime"], a["started_at"]);
    assert_eq!(find("x.a", "COMPLETE")["eventTime"], a["finished_at"]);
    // Outputs: the Delta table, by its location, with schema, lineage and the row count.
    let out = &find("x.a", "COMPLETE")["outputs"][0];
    assert_eq!(out["namespace"], "file");
    assert!(out["name"]
        .as_str()
        .unwrap()
        .ends_with("/.phlo/warehouse/x.a"));
    assert_eq!(out["outputFacets"]["outputStatistics"]["rowCount"], 1);
    assert_eq!(out["facets"]["schema"]["fields"][0]["name"], "id");
    // phlo-transform's freshness facet (validated above against docs/openlineage): x.a reads
    // nothing, so it is current as of nothing known.
    assert_eq!(
        out["facets"]["phloTransform_freshness"]["currentAsOf"],
        Value::Null
    );
    let e_out = &find("x.e", "COMPLETE")["outputs"][0];
    assert_eq!(
        e_out["facets"]["columnLineage"]["fields"]["id"]["inputFields"][0]["field"],
        "id"
    );
    assert_eq!(
        find("x.e", "START")["inputs"][0]["name"],
        find("x.d", "COMPLETE")["outputs"][0]["name"]
    );
    let failed = find("x.b", "FAIL");
    assert!(!failed["run"]["facets"]["errorMessage"]["message"]
        .as_str()
        .unwrap()
        .is_empty());
    assert_eq!(
        find("x.a", "START")["job"]["facets"]["documentation"]["description"],
        "The first model."
    );
}

#[test]
fn a_down_or_slow_collector_changes_nothing_and_holds_the_run_no_longer_than_the_drain() {
    let baseline = run_with(failing_workspace().path(), &["run", "--json"], &[]);
    assert_eq!(baseline.code, 1, "{}", baseline.stderr);
    let timeout = 2;
    // A generous liveness bound: the run, the bounded drain, and slack for a loaded machine.
    let bound = baseline.elapsed + Duration::from_secs(timeout + 8);

    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let slow = Collector::start(Duration::from_secs(60));
    for (what, url) in [
        ("closed port", closed),
        ("slow collector", slow.url.clone()),
    ] {
        let ran = run_with(
            failing_workspace().path(),
            &["run", "--json"],
            &[
                ("OPENLINEAGE__URL", url),
                ("OPENLINEAGE__TIMEOUT_SECONDS", timeout.to_string()),
            ],
        );
        assert_eq!(ran.code, baseline.code, "{what}: {}", ran.stderr);
        assert_eq!(statuses(&ran), statuses(&baseline), "{what}");
        assert_eq!(ran.report["status"], baseline.report["status"], "{what}");
        assert!(
            ran.elapsed < bound,
            "{what}: the run took {:?} (baseline {:?})",
            ran.elapsed,
            baseline.elapsed
        );
        assert!(ran.stderr.contains("OpenLineage"), "{what}: {}", ran.stderr);
    }
}

#[test]
fn a_renamed_model_with_the_same_id_is_reported_as_a_rename() {
    let schemas = Schemas::load();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(
        root,
        "transforms/x/old_name.sql",
        "-- @id x.stable\n-- @table\nselect 1 as id\n",
    );
    let lines = root.join("events.jsonl");
    let env = [("OPENLINEAGE__FILE", lines.display().to_string())];
    assert_eq!(run_with(root, &["run", "--json"], &env).code, 0);
    std::fs::rename(
        root.join("transforms/x/old_name.sql"),
        root.join("transforms/x/new_name.sql"),
    )
    .unwrap();
    std::fs::remove_file(&lines).unwrap();
    let ran = run_with(root, &["run", "--json"], &env);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let events = read_lines(&lines);
    for e in &events {
        schemas.check(e);
    }
    let renames: Vec<&Value> = events
        .iter()
        .filter(|e| e["dataset"]["facets"]["lifecycleStateChange"].is_object())
        .collect();
    assert_eq!(renames.len(), 1, "{events:#?}");
    let dataset = &renames[0]["dataset"];
    assert!(dataset["name"].as_str().unwrap().ends_with("/x.new_name"));
    let change = &dataset["facets"]["lifecycleStateChange"];
    assert_eq!(change["lifecycleStateChange"], "RENAME");
    assert_eq!(change["previousIdentifier"]["namespace"], "file");
    assert!(change["previousIdentifier"]["name"]
        .as_str()
        .unwrap()
        .ends_with("/x.old_name"));

    // Told once: the next run knows the model under its new name.
    std::fs::remove_file(&lines).unwrap();
    assert_eq!(run_with(root, &["run", "--json"], &env).code, 0);
    assert!(read_lines(&lines)
        .iter()
        .all(|e| e.get("dataset").is_none()));
}

#[test]
fn phlo_toml_configures_openlineage_and_the_environment_overrides_it() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(
        root,
        "phlo.toml",
        "[openlineage]\nfile = \"lineage/events.jsonl\"\nnamespace = \"lab-dev\"\ntimeout_seconds = 3\n",
    );
    write_file(root, "transforms/x/a.sql", "-- @table\nselect 1 as id\n");
    let ran = run_with(root, &["run", "--json"], &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let events = read_lines(&root.join("lineage/events.jsonl"));
    assert!(!events.is_empty());
    assert!(events.iter().all(|e| e["job"]["namespace"] == "lab-dev"));

    let other: PathBuf = root.join("other.jsonl");
    let ran = run_with(
        root,
        &["run", "--json"],
        &[
            ("OPENLINEAGE__NAMESPACE", "prod".to_string()),
            ("OPENLINEAGE__FILE", other.display().to_string()),
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let events = read_lines(&other);
    assert!(!events.is_empty());
    assert!(events.iter().all(|e| e["job"]["namespace"] == "prod"));

    // The API key is never a phlo.toml setting.
    write_file(
        root,
        "phlo.toml",
        "[openlineage]\nurl = \"http://localhost:5000\"\napi_key = \"nope\"\n",
    );
    assert_eq!(run_with(root, &["check"], &[]).code, 2);
}
