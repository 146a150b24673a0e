//! The Trino adapter's Iceberg awareness through the binary, on the real Trino and Nessie of
//! `scripts/services.sh up` (see tests/trino_workspace.rs for the variables naming them):
//! each write records the table's Iceberg state (snapshot, schema, partition spec, properties)
//! as the model's physical state and output identity, and a table written behind the run's
//! back is `output_drift` and built again (SPEC §39, §69); each attempt records Trino's query
//! ids and statistics (SPEC §68); a source without `timestamp_column` is as fresh as its
//! current snapshot (SPEC §34); a Trino or a Nessie that cannot be reached is a coded error
//! before anything is written.
//!
//! Every test writes into a schema of its own and drops it at the end ([`DropSchema`]).

mod common;
#[path = "warehouse/trino_cleanup.rs"]
mod trino_cleanup;
#[path = "warehouse/trino_env.rs"]
mod trino_env;

use common::{by_name, run, write_file, Output};
use phlo_transform_adapter::trino::client::{QueryResult, Trino, TrinoConfig};
use serde_json::Value;
use trino_cleanup::DropSchema;
use trino_env::{adapter_toml, nessie_url, trino_url, unique};
use url::Url;

fn trino(sql: &str) -> QueryResult {
    let client = Trino::new(TrinoConfig::new(
        Url::parse(&trino_url()).unwrap(),
        "phlo-test-writer",
    ))
    .unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(client.execute(sql))
        .unwrap_or_else(|e| panic!("{e}: {sql}"))
}

fn ok(out: &Output) -> Value {
    assert_eq!(
        out.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    out.json()
}

fn model<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no model {name} in {report:#}"))
}

/// The current snapshot id of `table` (quoted, three parts), as Trino reads it.
fn current_snapshot(table: &str) -> i64 {
    let unquoted = table.trim_end_matches('"');
    let r = trino(&format!(
        "SELECT snapshot_id FROM {unquoted}$snapshots\" ORDER BY committed_at DESC LIMIT 1"
    ));
    r.rows[0][0].as_i64().unwrap()
}

fn count(table: &str) -> u64 {
    trino(&format!("SELECT count(*) FROM {table}")).rows[0][0]
        .as_u64()
        .unwrap()
}

fn reason_kinds(plan: &Value, name: &str) -> Vec<String> {
    model(plan, name)["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn each_write_records_its_iceberg_state_and_a_write_behind_our_back_is_output_drift() {
    let schema = unique("drift");
    let _cleanup = DropSchema(schema.clone());
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(root, "phlo.toml", &adapter_toml(&schema, "phlo-test"));
    write_file(
        root,
        "transforms/x/a.sql",
        "-- @table\nselect 1 as id, 'one' as label\nunion all select 2, 'two'\n",
    );
    write_file(
        root,
        "transforms/x/b.sql",
        "-- @incremental key=id\nselect id, label from x.a\n",
    );
    let report = ok(&run(root, &["run", "--json"]));
    assert!(
        by_name(&report, "status").values().all(|s| s == "passed"),
        "{report:#}"
    );
    let a_table = format!("iceberg.\"{schema}\".\"x__a\"");
    let b_table = format!("iceberg.\"{schema}\".\"x__b\"");

    // Per-attempt statistics: Trino's query ids, in the run report and the state.
    let queries = model(&report, "x.a")["queries"].as_array().unwrap().clone();
    assert!(!queries.is_empty(), "{report:#}");
    for q in &queries {
        assert_eq!(q["attempt"], 1, "{q}");
        assert!(
            q["query_id"].as_str().is_some_and(|id| !id.is_empty()),
            "{q}"
        );
        for key in ["rows", "bytes", "cpu_ms", "wall_ms"] {
            assert!(q[key].is_u64(), "{key} in {q}");
        }
    }
    let ctas = queries
        .iter()
        .find(|q| q["written_rows"] == 2)
        .unwrap_or_else(|| panic!("the write of 2 rows: {queries:#?}"));
    let ids: Vec<String> = queries
        .iter()
        .map(|q| format!("'{}'", q["query_id"].as_str().unwrap()))
        .collect();
    let known = trino(&format!(
        "SELECT count(*) FROM system.runtime.queries WHERE query_id IN ({}) AND \"source\" = 'phlo-transform'",
        ids.join(", ")
    ));
    assert_eq!(
        known.rows[0][0].as_u64(),
        Some(ids.len() as u64),
        "the ids are Trino's"
    );
    let run_id = report["run_id"].as_str().unwrap();
    let shown = ok(&run(root, &["state", "show", run_id, "--json"]));
    let attempt = shown["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["node"] == "x.a")
        .unwrap();
    assert_eq!(attempt["queries"].as_array().unwrap().len(), queries.len());
    assert_eq!(
        attempt["queries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["query_id"] == ctas["query_id"])
            .map(|q| q["written_rows"].clone()),
        Some(Value::from(2))
    );

    // The physical state: the snapshot Trino reports, schema, spec, properties.
    let inspect = ok(&run(root, &["inspect", "x.a", "--json"]));
    let snapshot = current_snapshot(&a_table);
    let state = &inspect["state"];
    assert_eq!(
        state["output_identity"],
        format!("iceberg:snapshot:{snapshot},schema:0"),
        "{inspect:#}"
    );
    let physical = &state["physical_state"];
    assert_eq!(physical["format"], "iceberg", "{physical:#}");
    assert_eq!(physical["snapshot_id"], snapshot);
    assert_eq!(physical["schema_id"], 0);
    assert_eq!(physical["partition_spec"]["fields"], Value::Array(vec![]));
    assert!(
        physical["properties"]
            .as_object()
            .is_some_and(|p| p.contains_key("write.format.default")),
        "{physical:#}"
    );
    assert!(physical["metadata_location"]
        .as_str()
        .is_some_and(|l| l.ends_with(".metadata.json")));
    let text = run(root, &["inspect", "x.a"]);
    assert!(
        text.stdout
            .contains(&format!("Iceberg snapshot: {snapshot} (")),
        "{}",
        text.stdout
    );
    assert!(text
        .stdout
        .contains("Iceberg partition spec: 0 (unpartitioned)"));

    // Nothing changed: nothing to build.
    let plan = ok(&run(root, &["plan", "--json"]));
    assert!(
        by_name(&plan, "decision").values().all(|d| d == "skip"),
        "{plan:#}"
    );

    // A row inserted through Trino directly moves A's snapshot: output drift, built again.
    trino(&format!("INSERT INTO {a_table} VALUES (3, 'three')"));
    let plan = ok(&run(root, &["plan", "--json"]));
    let decisions = by_name(&plan, "decision");
    assert_eq!(decisions["x.a"], "build", "{plan:#}");
    assert_eq!(reason_kinds(&plan, "x.a"), ["output_drift"]);
    assert_eq!(decisions["x.b"], "skip", "{plan:#}");
    let detail = model(&plan, "x.a")["reasons"][0]["detail"]
        .as_str()
        .unwrap();
    assert!(
        detail.contains(&format!("iceberg:snapshot:{snapshot},schema:0")),
        "{detail}"
    );
    let report = ok(&run(root, &["run", "--json"]));
    assert_eq!(by_name(&report, "status")["x.a"], "passed");
    assert_eq!(count(&a_table), 2);
    let plan = ok(&run(root, &["plan", "--json"]));
    assert!(
        by_name(&plan, "decision").values().all(|d| d == "skip"),
        "{plan:#}"
    );

    // On an incremental table the rows written behind our back would survive a merge: the
    // drift is a full rebuild.
    trino(&format!("INSERT INTO {b_table} VALUES (9, 'nine')"));
    let plan = ok(&run(root, &["plan", "--json"]));
    assert_eq!(reason_kinds(&plan, "x.b"), ["output_drift"], "{plan:#}");
    assert_eq!(model(&plan, "x.b")["full_rebuild"], true, "{plan:#}");
    let report = ok(&run(root, &["run", "--json"]));
    assert_eq!(model(&report, "x.b")["write"], "full", "{report:#}");
    assert_eq!(count(&b_table), 2);
}

#[test]
fn a_source_without_a_timestamp_column_is_as_fresh_as_its_current_snapshot() {
    let schema = unique("fresh");
    let _cleanup = DropSchema(schema.clone());
    trino(&format!("CREATE SCHEMA iceberg.\"{schema}\""));
    let events = format!("iceberg.\"{schema}\".\"events\"");
    trino(&format!("CREATE TABLE {events} AS SELECT 1 AS id"));
    let snapshot_at = trino(&format!(
        "SELECT CAST(floor(to_unixtime(committed_at)) AS bigint) FROM iceberg.\"{schema}\".\"events$snapshots\""
    ))
    .rows[0][0]
        .as_i64()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let toml = |freshness: &str| {
        format!(
            "{}\n[source.\"iceberg.{schema}.events\"]\nfreshness = \"{freshness}\"\nfreshness_policy = \"block\"\ncolumns = {{ id = \"integer\" }}\n",
            adapter_toml(&schema, "phlo-test")
        )
    };
    write_file(root, "phlo.toml", &toml("1h"));
    write_file(
        root,
        "transforms/x/a.sql",
        &format!("-- @table\nselect id from iceberg.{schema}.events\n"),
    );
    let plan = ok(&run(root, &["plan", "--json"]));
    let source = &plan["sources"][0];
    assert_eq!(source["status"], "FRESH", "{plan:#}");
    assert_eq!(source["timestamp_column"], Value::Null, "{source}");
    let latest = chrono::DateTime::parse_from_rfc3339(source["latest"].as_str().unwrap())
        .unwrap()
        .timestamp();
    assert_eq!(latest, snapshot_at, "the snapshot's commit time: {source}");
    assert_eq!(by_name(&plan, "decision")["x.a"], "build");

    // A second later the snapshot is older than a 1s requirement: STALE, and under
    // `block` its reader is blocked.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    write_file(root, "phlo.toml", &toml("1s"));
    let plan = ok(&run(root, &["plan", "--json"]));
    assert_eq!(plan["sources"][0]["status"], "STALE", "{plan:#}");
    assert_eq!(by_name(&plan, "decision")["x.a"], "blocked", "{plan:#}");

    // A new snapshot (an INSERT) is fresh again.
    trino(&format!("INSERT INTO {events} VALUES (2)"));
    let plan = ok(&run(root, &["plan", "--json"]));
    assert_eq!(plan["sources"][0]["status"], "FRESH", "{plan:#}");
}

/// A local port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn diagnostic(out: &Output) -> Value {
    assert_ne!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    report["diagnostics"][0].clone()
}

#[test]
fn a_trino_that_is_not_started_is_a_coded_error_and_nothing_is_recorded() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let url = format!("http://127.0.0.1:{}", closed_port());
    write_file(
        root,
        "phlo.toml",
        &adapter_toml("never_written", "phlo-test").replace(&trino_url(), &url),
    );
    write_file(root, "transforms/x/a.sql", "-- @table\nselect 1 as id\n");
    let out = run(root, &["run", "--json"]);
    let d = diagnostic(&out);
    assert_eq!(d["code"], "A008", "{d:#}");
    assert!(d["message"].as_str().unwrap().contains(&url), "{d:#}");
    assert!(d["help"].as_str().unwrap().contains("start Trino"), "{d:#}");
    nothing_recorded(root);
}

/// The state knows nothing of model `x.a`: no run planned it, nothing was built.
fn nothing_recorded(root: &std::path::Path) {
    let d = diagnostic(&run(root, &["state", "model", "x.a", "--json"]));
    assert_eq!(d["code"], "Y005", "{d:#}");
}

#[test]
fn an_unreachable_nessie_is_a_coded_error_before_anything_is_written() {
    let schema = unique("nonessie");
    let _cleanup = DropSchema(schema.clone());
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let dead = format!("http://127.0.0.1:{}/api/v2", closed_port());
    write_file(
        root,
        "phlo.toml",
        &adapter_toml(&schema, "phlo-test").replace(&nessie_url(), &dead),
    );
    write_file(root, "transforms/x/a.sql", "-- @table\nselect 1 as id\n");
    let out = run(root, &["run", "--json"]);
    let d = diagnostic(&out);
    assert_eq!(d["code"], "A008", "{d:#}");
    assert!(d["message"].as_str().unwrap().contains("Nessie"), "{d:#}");
    assert!(
        d["help"].as_str().unwrap().contains("[adapter.nessie]"),
        "{d:#}"
    );
    let schemas = trino(&format!(
        "SELECT count(*) FROM iceberg.information_schema.schemata WHERE schema_name = '{schema}'"
    ));
    assert_eq!(schemas.rows[0][0].as_u64(), Some(0), "nothing was written");
    nothing_recorded(root);

    // A reference Nessie does not have is a configuration error.
    write_file(
        root,
        "phlo.toml",
        &format!(
            "{}ref = \"{}\"\n",
            adapter_toml(&schema, "phlo-test"),
            unique("no_such_branch")
        ),
    );
    let d = diagnostic(&run(root, &["run", "--json"]));
    assert_eq!(d["code"], "A010", "{d:#}");
    assert!(
        d["message"].as_str().unwrap().contains("no_such_branch"),
        "{d:#}"
    );
}
