//! Source freshness in `plan` (SPEC §34): age of the latest `timestamp_column` value against
//! the declared requirement; `freshness_policy = "block"` blocks the readers of a stale source.

mod common;

use common::{run, write_file};
use serde_json::Value;
use std::path::Path;

fn csv_loaded_at(root: &Path, loaded_at: &str) {
    write_file(
        root,
        "data/samples.csv",
        &format!("sample_id,loaded_at\nS-1,2020-01-01T00:00:00\nS-2,{loaded_at}\n"),
    );
}

fn workspace(policy: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(
        root,
        "phlo.toml",
        &format!(
            "[source.\"lims.samples\"]\nlocation = \"data/samples.csv\"\nfreshness = \"6h\"\ntimestamp_column = \"loaded_at\"\nfreshness_policy = \"{policy}\"\n"
        ),
    );
    write_file(
        root,
        "transforms/lab/samples.sql",
        "-- @table\nselect sample_id, loaded_at from lims.samples\n",
    );
    write_file(
        root,
        "transforms/lab/counts.sql",
        "-- @table\nselect count(*) as n from lab.samples\n",
    );
    csv_loaded_at(root, "2021-06-01T12:00:00");
    dir
}

fn decision(plan: &Value, model: &str) -> String {
    plan["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == model)
        .map(|m| m["decision"].as_str().unwrap().to_string())
        .unwrap()
}

#[test]
fn a_stale_source_under_block_blocks_its_readers_and_their_dependents() {
    let ws = workspace("block");
    let out = run(ws.path(), &["--json", "plan"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan = out.json();
    let source = &plan["sources"][0];
    assert_eq!(source["source"], "lims.samples");
    assert_eq!(source["status"], "STALE");
    assert_eq!(source["latest"], "2021-06-01T12:00:00Z");
    assert!(source["age_seconds"].as_u64().unwrap() > 86_400 * 365);
    assert_eq!(decision(&plan, "lab.samples"), "blocked");
    assert_eq!(decision(&plan, "lab.counts"), "blocked");
    let reason = &plan["models"][0]["reasons"][0];
    assert_eq!(reason["kind"], "source_stale");

    let text = run(ws.path(), &["plan"]).stdout;
    assert!(text.contains("lims.samples\n    age: "), "{text}");
    assert!(
        text.contains("required: <6h\n    status: STALE (policy block"),
        "{text}"
    );

    // Nothing is built while the source is stale.
    run(ws.path(), &["run"]);
    assert!(!ws.path().join(".phlo/warehouse/lab.samples").exists());

    // Fresh data unblocks it.
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S").to_string();
    csv_loaded_at(ws.path(), &now);
    let plan = run(ws.path(), &["--json", "plan"]).json();
    assert_eq!(plan["sources"][0]["status"], "FRESH");
    assert_eq!(decision(&plan, "lab.samples"), "build");
    assert_eq!(decision(&plan, "lab.counts"), "build");
}

#[test]
fn warn_policy_reports_stale_and_builds() {
    let ws = workspace("warn");
    let plan = run(ws.path(), &["--json", "plan"]).json();
    assert_eq!(plan["sources"][0]["status"], "STALE");
    assert_eq!(decision(&plan, "lab.samples"), "build");
}

#[test]
fn invalid_requirements_are_config_errors() {
    let ws = workspace("warn");
    write_file(
        ws.path(),
        "phlo.toml",
        "[source.\"lims.samples\"]\nlocation = \"data/samples.csv\"\nfreshness = \"6 hours\"\ntimestamp_column = \"loaded_at\"\n",
    );
    let out = run(ws.path(), &["--json", "check"]);
    assert_eq!(out.code, 2);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["code"], "C004");
    assert!(
        d["message"].as_str().unwrap().contains("not a duration"),
        "{d}"
    );
}

/// Without `timestamp_column` the age is the source's last commit time, which only Trino's
/// Iceberg tables have (tests/trino_state.rs): the local engine says UNKNOWN and why, and
/// under `block` its readers wait.
#[test]
fn freshness_without_a_timestamp_column_is_unknown_where_no_commit_time_is_known() {
    let ws = workspace("block");
    write_file(
        ws.path(),
        "phlo.toml",
        "[source.\"lims.samples\"]\nlocation = \"data/samples.csv\"\nfreshness = \"6h\"\nfreshness_policy = \"block\"\n",
    );
    let out = run(ws.path(), &["--json", "plan"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan = out.json();
    let source = &plan["sources"][0];
    assert_eq!(source["status"], "UNKNOWN", "{source}");
    assert_eq!(source["timestamp_column"], Value::Null, "{source}");
    assert!(
        source["reason"]
            .as_str()
            .unwrap()
            .contains("declare timestamp_column"),
        "{source}"
    );
    assert_eq!(decision(&plan, "lab.samples"), "blocked");
}
