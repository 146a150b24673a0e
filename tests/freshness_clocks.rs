//! Freshness clocks (issue 40 item 4) end to end on the default engine: every model records
//! `current_as_of`, the newest source state its data reflects (the minimum over its inputs),
//! and `state`, `inspect`, the run report and OpenLineage show it; `plan` says when a model is
//! stale because a source advanced.
//!
//! `raw.events` is a Delta table written by delta-rs's Python bindings
//! (`tests/python/write_delta.py`, needs `python3 -m pip install deltalake pyarrow`), read by
//! `shop.a`; `raw.sites` is a CSV whose modification time the test sets, read by `shop.b`;
//! `shop.c` reads both models. Appending to the Delta table moves `shop.a` and not `shop.b`;
//! `shop.c` stays at the older of its two inputs.

mod common;

use common::{python_script, write_file};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

/// The CSV source's modification time: 2020-01-02T03:04:05Z.
const SITES_MTIME: u64 = 1_577_934_245;

fn phlo(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Value {
    let mut cmd = common::with_openlineage_env(dir, args, env);
    let out = cmd.output().expect("binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "phlo-transform {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// Appends (step 2) or creates (step 1) the Delta table with delta-rs; returns its version.
fn write_delta(table: &Path, step: u32) -> u64 {
    let out = Command::new("python3")
        .arg(python_script("write_delta.py"))
        .arg(table)
        .arg(step.to_string())
        .output()
        .expect("python3 runs (install: python3 -m pip install deltalake pyarrow)");
    assert!(
        out.status.success(),
        "write_delta.py failed (install: python3 -m pip install deltalake pyarrow):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    printed["version"].as_u64().unwrap()
}

/// The commit time of `version` as delta-rs wrote it (`commitInfo.timestamp`), read from the
/// log here rather than through phlo-transform: RFC 3339 as the reports print it.
fn commit_time(table: &Path, version: u64) -> String {
    let log = table.join(format!("_delta_log/{version:020}.json"));
    let text = std::fs::read_to_string(&log).unwrap();
    let ms = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|a| a["commitInfo"]["timestamp"].as_i64())
        .unwrap_or_else(|| panic!("no commitInfo.timestamp in {}", log.display()));
    instant(chrono::DateTime::from_timestamp_millis(ms).unwrap())
}

fn instant(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// Each model's `current_as_of` in a run report.
fn reported(report: &Value, model: &str) -> Value {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == model)
        .unwrap_or_else(|| panic!("no {model} in {report}"))["current_as_of"]
        .clone()
}

/// What `state model` recorded for `model` in the main environment.
fn recorded(ws: &Path, model: &str) -> Value {
    let doc = phlo(ws, &["state", "model", model, "--json"], &[]);
    doc["materializations"][0]["current_as_of"].clone()
}

#[test]
fn a_source_that_advances_moves_only_its_readers_clocks() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    let table = ws.join("sources/raw/events");
    write_file(ws, "phlo.toml", "");
    write_file(
        ws,
        "sources/raw/sites.csv",
        "site,region\noxford,south\nleeds,north\n",
    );
    std::fs::File::options()
        .write(true)
        .open(ws.join("sources/raw/sites.csv"))
        .unwrap()
        .set_modified(UNIX_EPOCH + Duration::from_secs(SITES_MTIME))
        .unwrap();
    write_file(
        ws,
        "transforms/shop/a.sql",
        "-- @table\nselect site, count(*) as n from raw.events group by site\n",
    );
    write_file(
        ws,
        "transforms/shop/b.sql",
        "-- @table\nselect site, region from raw.sites\n",
    );
    write_file(
        ws,
        "transforms/shop/c.sql",
        "-- @table\nselect a.site, a.n, b.region from shop.a as a join shop.b as b on a.site = b.site\n",
    );
    assert_eq!(write_delta(&table, 1), 0);
    let v0 = commit_time(&table, 0);
    let sites = instant(chrono::DateTime::from_timestamp(SITES_MTIME as i64, 0).unwrap());

    let first = phlo(ws, &["run", "--json"], &[]);
    assert_eq!(first["status"], "passed", "{first}");
    assert_eq!(reported(&first, "shop.a"), v0.as_str());
    assert_eq!(reported(&first, "shop.b"), sites.as_str());
    assert_eq!(
        reported(&first, "shop.c"),
        sites.as_str(),
        "the older input"
    );
    assert_eq!(recorded(ws, "shop.a"), v0.as_str());
    assert_eq!(recorded(ws, "shop.b"), sites.as_str());

    // delta-rs appends a commit; the plan names the source that advanced, with both instants.
    assert_eq!(write_delta(&table, 2), 1);
    let v1 = commit_time(&table, 1);
    assert!(v1 > v0, "{v1} after {v0}");
    let plan = phlo(ws, &["plan", "--json"], &[]);
    let planned = |name: &str| -> Value {
        plan["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {plan}"))
            .clone()
    };
    let a = planned("shop.a");
    assert_eq!(a["decision"], "build", "{a}");
    assert_eq!(a["current_as_of"], v0.as_str());
    let change = a["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "source_change")
        .unwrap_or_else(|| panic!("no source_change in {a}"));
    assert_eq!(change["subject"], "raw.events");
    assert_eq!(change["advanced"]["current_as_of"], v0.as_str());
    assert_eq!(change["advanced"]["source_as_of"], v1.as_str());
    let detail = change["detail"].as_str().unwrap();
    assert!(
        detail.contains("stale") && detail.contains(&v0) && detail.contains(&v1),
        "{detail}"
    );
    assert_eq!(planned("shop.b")["decision"], "skip");

    // The run builds A (and C, which reads it) and records the new instant; B keeps its own.
    let events = tmp.path().join("lineage.jsonl");
    let second = phlo(ws, &["run", "--json"], &[("OPENLINEAGE__FILE", &events)]);
    assert_eq!(second["status"], "passed", "{second}");
    assert_eq!(reported(&second, "shop.a"), v1.as_str());
    assert_eq!(reported(&second, "shop.b"), sites.as_str());
    assert_eq!(reported(&second, "shop.c"), sites.as_str());
    assert_eq!(recorded(ws, "shop.a"), v1.as_str());
    assert_eq!(recorded(ws, "shop.b"), sites.as_str());
    let inspected = phlo(ws, &["inspect", "shop.a", "--json"], &[]);
    assert_eq!(
        inspected["state"]["current_as_of"],
        v1.as_str(),
        "{inspected}"
    );
    let source = phlo(ws, &["inspect", "raw.events", "--json"], &[]);
    assert_eq!(source["current_as_of"], v1.as_str(), "{source}");

    // OpenLineage: the output dataset of A's COMPLETE carries the instant in its own facet.
    let complete: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["job"]["name"] == "shop.a" && e["eventType"] == "COMPLETE")
        .collect();
    assert_eq!(complete.len(), 1, "{complete:?}");
    let facet = &complete[0]["outputs"][0]["facets"]["phloTransform_freshness"];
    assert_eq!(facet["currentAsOf"], v1.as_str(), "{facet}");
    assert!(facet["_producer"].is_string() && facet["_schemaURL"].is_string());

    // Nothing advanced since: the next plan skips everything.
    let again = phlo(ws, &["plan", "--json"], &[]);
    assert_eq!(again["summary"]["build"], 0, "{again}");
}
