//! Delta and Iceberg sources end to end, with independent writers and readers: the sources are
//! written by delta-rs's Python bindings (`deltalake`) and by PyIceberg (SQL catalog on SQLite),
//! and the Delta tables phlo-transform writes are read back by `deltalake` — rows, columns, the
//! application transaction `phlo-transform:<model>` and the commit metadata.
//!
//! The Python side lives in `tests/python/`:
//! - `write_delta.py <table-dir> <step>`: step 1 creates a Delta table of 5 rows (id, site,
//!   value), step 2 appends 3 rows (version 1).
//! - `write_iceberg.py <catalog-dir> <table-dir> <ns.table> <step>`: step 1 creates an Iceberg
//!   table whose *location* is `<table-dir>` and appends 4 rows (sample_id, site, passed),
//!   step 2 appends 2 rows (a new snapshot), step `evolve` adds a column (a new schema, no new
//!   snapshot). The SQLite catalog lives in `<catalog-dir>`, outside
//!   the workspace: phlo-transform reads the table catalog-free, from the newest
//!   `<table-dir>/metadata/NNNNN-<uuid>.metadata.json` (PyIceberg writes no `version-hint.text`).
//!   So an Iceberg table at `sources/<ns>/<name>/` is found by convention, exactly like a Delta
//!   table there; `declared_delta_and_iceberg_sources_follow_their_location` declares both kinds
//!   in phlo.toml instead.
//! - `read_delta.py <table-dir> <app-id>`: prints what delta-rs sees as JSON.
//!
//! These tests need `python3` with `deltalake`, `pyiceberg[sql-sqlite,pyarrow]` and `pyarrow`
//! (`.ci/run` installs them). Without them every test here fails, saying what to install.

mod common;

use common::{by_name, map, run, write_file};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const PIP_INSTALL: &str =
    "python3 -m pip install deltalake \"pyiceberg[sql-sqlite,pyarrow]\" pyarrow";

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python")
}

/// Fails (never skips) when python3 or one of the packages is missing.
fn require_python() {
    let probe = Command::new("python3")
        .args([
            "-c",
            "import deltalake, pyarrow, pyiceberg, sqlalchemy\n\
             from pyiceberg.catalog.sql import SqlCatalog\n\
             print(deltalake.__version__, pyiceberg.__version__, pyarrow.__version__)",
        ])
        .output();
    match probe {
        Err(e) => panic!(
            "the lakehouse tests need python3 on PATH ({e}); then install the packages: {PIP_INSTALL}"
        ),
        Ok(out) if !out.status.success() => panic!(
            "the lakehouse tests need the Python packages deltalake, pyiceberg (with its SQL/SQLite \
             catalog) and pyarrow, which python3 cannot import:\n{}\ninstall them with: {PIP_INSTALL}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Ok(_) => {}
    }
}

/// Runs `tests/python/<script> <args…>` and parses the JSON it prints.
fn python(script: &str, args: &[&Path], extra: &[&str]) -> Value {
    let out = Command::new("python3")
        .arg(scripts().join(script))
        .args(args)
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("python3 {script}: {e} (install: {PIP_INSTALL})"));
    assert!(
        out.status.success(),
        "python3 {script} {args:?} {extra:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "python3 {script} printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A temporary directory holding the workspace (`ws/`) and, next to it, the Iceberg catalog.
struct Lake {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    catalog: PathBuf,
    /// What `write_iceberg.py` printed for step 1 (metadata_location, snapshot_id, …).
    iceberg_1: Value,
}

impl Lake {
    fn delta(&self, step: u32) -> Value {
        python(
            "write_delta.py",
            &[&self.ws.join("sources/lims/results")],
            &[&step.to_string()],
        )
    }

    /// `step`: "1", "2" or "evolve" (see write_iceberg.py).
    fn iceberg(&self, step: &str) -> Value {
        python(
            "write_iceberg.py",
            &[&self.catalog, &self.ws.join("sources/lims/samples")],
            &["lims.samples", step],
        )
    }

    /// What delta-rs reads from the table phlo-transform wrote for `model`.
    fn read(&self, model: &str) -> Value {
        let dir = self.ws.join(".phlo/warehouse").join(model);
        assert!(
            dir.join("_delta_log").is_dir(),
            "{} is no Delta table",
            dir.display()
        );
        python(
            "read_delta.py",
            &[&dir],
            &[&format!("phlo-transform:{model}")],
        )
    }
}

/// Sources (by convention):
/// - `lims.results`, Delta, `sources/lims/results/`: id, site, value —
///   (1 oxford 1.5) (2 oxford 2.5) (3 cambridge 3.0) (4 leeds 4.0) (5 cambridge 5.0);
///   step 2 appends (6 oxford 6.0) (7 leeds 7.0) (8 york 8.0).
/// - `lims.samples`, Iceberg, `sources/lims/samples/`: sample_id, site, passed —
///   (101 oxford T) (102 oxford F) (103 cambridge T) (104 leeds T);
///   step 2 appends (105 cambridge T) (106 york F).
///
/// Models, all `@table`:
/// - `lab.results_by_site` reads only the Delta source,
/// - `lab.samples_by_site` reads only the Iceberg source,
/// - `lab.results_samples` joins both sources on site,
/// - `reporting.site_summary` joins the two per-site models.
fn lake() -> Lake {
    require_python();
    let tmp = tempfile::tempdir().unwrap();
    let mut lake = Lake {
        ws: tmp.path().join("ws"),
        catalog: tmp.path().join("iceberg-catalog"),
        _tmp: tmp,
        iceberg_1: Value::Null,
    };
    let ws = &lake.ws;
    write_file(ws, "phlo.toml", "[transform]\n");
    write_file(
        ws,
        "transforms/lab/results_by_site.sql",
        "-- @table\nselect site, count(*) as n, sum(value) as total\nfrom lims.results\ngroup by site\n",
    );
    write_file(
        ws,
        "transforms/lab/samples_by_site.sql",
        "-- @table\nselect site, count(*) as samples, sum(case when passed then 1 else 0 end) as passed\n\
         from lims.samples\ngroup by site\n",
    );
    write_file(
        ws,
        "transforms/lab/results_samples.sql",
        "-- @table\nselect r.id, r.site, r.value, s.sample_id, s.passed\n\
         from lims.results r\njoin lims.samples s on r.site = s.site\n",
    );
    write_file(
        ws,
        "transforms/reporting/site_summary.sql",
        "-- @table\nselect r.site, r.n, r.total, s.samples, s.passed\n\
         from lab.results_by_site r\njoin lab.samples_by_site s on r.site = s.site\n",
    );
    assert_eq!(lake.delta(1), json!({"version": 0, "rows": 5}));
    let iceberg = lake.iceberg("1");
    assert_eq!(iceberg["rows"], 4, "{iceberg}");
    assert!(ws.join("sources/lims/samples/data").is_dir());
    assert!(ws.join("sources/lims/samples/metadata").is_dir());
    lake.iceberg_1 = iceberg;
    lake
}

fn model<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no model {name} in {report}"))
}

fn rows(report: &Value, name: &str) -> Option<u64> {
    model(report, name)["rows"].as_u64()
}

fn reasons(plan: &Value, name: &str) -> Vec<(String, Option<String>)> {
    model(plan, name)["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["subject"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn detail(plan: &Value, name: &str) -> String {
    model(plan, name)["reasons"][0]["detail"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The rows as delta-rs read them, in a fixed order.
fn data(read: &Value) -> Vec<Value> {
    let mut rows = read["data"].as_array().unwrap().clone();
    rows.sort_by_key(|r| r.to_string());
    rows
}

fn sorted(rows: Value) -> Vec<Value> {
    let mut rows = rows.as_array().unwrap().clone();
    rows.sort_by_key(|r| r.to_string());
    rows
}

fn run_ok(dir: &Path) -> Value {
    let out = run(dir, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    assert_eq!(report["status"], "passed", "{report}");
    report
}

fn plan(dir: &Path) -> Value {
    let out = run(dir, &["plan", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.json()
}

/// `{name: state}` of the sources in the manifest the last command wrote.
fn source_states(dir: &Path) -> std::collections::BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join(".phlo/transform/manifest.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    manifest["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["state"].as_str().unwrap_or("<none>").to_string(),
            )
        })
        .collect()
}

/// The Delta commit phlo-transform made for `name` in run `report`: the application
/// transaction and the commit metadata, as delta-rs reads them. Returns the txn version.
fn assert_commit(read: &Value, report: &Value, name: &str) -> i64 {
    let txn = read["txn_version"]
        .as_i64()
        .unwrap_or_else(|| panic!("no txn for phlo-transform:{name}: {read}"));
    assert!(txn > 0, "{read}");
    assert_eq!(
        read["txn_version_log"], txn,
        "txn in the log vs the API: {read}"
    );
    let version = model(report, name)["version"].as_str().unwrap();
    assert_eq!(read["history_model_version"], version, "{read}");
    assert_eq!(read["log_model_version"], version, "{read}");
    assert_eq!(read["history_run_id"], report["run_id"], "{read}");
    assert_eq!(read["log_run_id"], report["run_id"], "{read}");
    txn
}

#[test]
fn delta_and_iceberg_sources_build_tables_that_delta_rs_reads_back() {
    let lake = lake();
    let dir = &lake.ws;

    let check = run(dir, &["check", "--json"]);
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let check = check.json();
    assert_eq!(check["diagnostics"], json!([]), "{check}");
    assert_eq!(
        model(&check, "lab.results_samples")["depends_on"],
        json!(["lims.results", "lims.samples"])
    );
    assert_eq!(
        model(&check, "reporting.site_summary")["depends_on"],
        json!(["lab.results_by_site", "lab.samples_by_site"])
    );

    let report = run_ok(dir);
    assert!(
        report["models"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["status"] == "passed"),
        "{report}"
    );
    // Per site: results oxford 2, cambridge 2, leeds 1; samples oxford 2, cambridge 1, leeds 1.
    assert_eq!(rows(&report, "lab.results_by_site"), Some(3));
    assert_eq!(rows(&report, "lab.samples_by_site"), Some(3));
    // 2×2 oxford + 2×1 cambridge + 1×1 leeds
    assert_eq!(rows(&report, "lab.results_samples"), Some(7));
    assert_eq!(rows(&report, "reporting.site_summary"), Some(3));

    // The source states: the Delta log version, the Iceberg snapshot and schema ids.
    let snapshot = lake.iceberg_1["snapshot_id"].as_i64().unwrap();
    assert_eq!(
        source_states(dir),
        [
            ("lims.results".to_string(), "delta:v0".to_string()),
            (
                "lims.samples".to_string(),
                format!("iceberg:snapshot:{snapshot},schema:0")
            ),
        ]
        .into_iter()
        .collect()
    );

    // What delta-rs reads from the tables phlo-transform wrote.
    let by_site = lake.read("lab.results_by_site");
    assert_eq!(by_site["columns"], json!(["site", "n", "total"]));
    assert_eq!(by_site["rows"], 3);
    // Version 0 creates the table (CDF, constraints) with its rows, in one commit.
    assert_eq!(by_site["version"], 0);
    assert_eq!(
        data(&by_site),
        sorted(json!([
            ["cambridge", 2, 8.0],
            ["leeds", 1, 4.0],
            ["oxford", 2, 4.0]
        ]))
    );
    assert_commit(&by_site, &report, "lab.results_by_site");

    let samples = lake.read("lab.samples_by_site");
    assert_eq!(samples["columns"], json!(["site", "samples", "passed"]));
    assert_eq!(
        data(&samples),
        sorted(json!([
            ["cambridge", 1, 1],
            ["leeds", 1, 1],
            ["oxford", 2, 1]
        ]))
    );
    assert_commit(&samples, &report, "lab.samples_by_site");

    let joined = lake.read("lab.results_samples");
    assert_eq!(
        joined["columns"],
        json!(["id", "site", "value", "sample_id", "passed"])
    );
    assert_eq!(joined["rows"], 7);
    assert_eq!(
        data(&joined),
        sorted(json!([
            [1, "oxford", 1.5, 101, true],
            [1, "oxford", 1.5, 102, false],
            [2, "oxford", 2.5, 101, true],
            [2, "oxford", 2.5, 102, false],
            [3, "cambridge", 3.0, 103, true],
            [4, "leeds", 4.0, 104, true],
            [5, "cambridge", 5.0, 103, true]
        ]))
    );
    assert_commit(&joined, &report, "lab.results_samples");

    let summary = lake.read("reporting.site_summary");
    assert_eq!(
        summary["columns"],
        json!(["site", "n", "total", "samples", "passed"])
    );
    assert_eq!(
        data(&summary),
        sorted(json!([
            ["cambridge", 2, 8.0, 1, 1],
            ["leeds", 1, 4.0, 1, 1],
            ["oxford", 2, 4.0, 2, 1]
        ]))
    );
    let txn = assert_commit(&summary, &report, "reporting.site_summary");

    // Nothing changed: everything is skipped and no table gets a new commit.
    let plan = plan(dir);
    assert!(
        by_name(&plan, "decision").values().all(|d| d == "skip"),
        "{plan}"
    );
    let again = run_ok(dir);
    assert!(
        by_name(&again, "status").values().all(|s| s == "skipped"),
        "{again}"
    );
    let summary = lake.read("reporting.site_summary");
    assert_eq!(
        (summary["version"].as_i64(), summary["txn_version"].as_i64()),
        (Some(0), Some(txn))
    );
}

#[test]
fn a_delta_append_rebuilds_the_models_that_read_it_with_source_change() {
    let lake = lake();
    let dir = &lake.ws;
    let first = run_ok(dir);
    let before = |m: &str| lake.read(m)["txn_version"].as_i64().unwrap();
    let (txn_by_site, txn_samples) = (before("lab.results_by_site"), before("lab.samples_by_site"));

    assert_eq!(lake.delta(2), json!({"version": 1, "rows": 8}));
    let plan = plan(dir);
    assert_eq!(
        by_name(&plan, "decision"),
        map(&[
            ("lab.results_by_site", "build"),
            ("lab.results_samples", "build"),
            ("lab.samples_by_site", "skip"),
            ("reporting.site_summary", "build")
        ])
    );
    let source_change = vec![(
        "source_change".to_string(),
        Some("lims.results".to_string()),
    )];
    assert_eq!(reasons(&plan, "lab.results_by_site"), source_change);
    assert_eq!(reasons(&plan, "lab.results_samples"), source_change);
    let d = detail(&plan, "lab.results_by_site");
    assert!(d.contains("delta:v0") && d.contains("delta:v1"), "{d}");
    assert_eq!(
        reasons(&plan, "lab.samples_by_site"),
        [("unchanged".to_string(), None)]
    );
    assert_eq!(
        reasons(&plan, "reporting.site_summary")[0],
        (
            "dependency_change".to_string(),
            Some("lab.results_by_site".to_string())
        )
    );

    let report = run_ok(dir);
    assert_eq!(
        by_name(&report, "status"),
        map(&[
            ("lab.results_by_site", "passed"),
            ("lab.results_samples", "passed"),
            ("lab.samples_by_site", "skipped"),
            ("reporting.site_summary", "passed")
        ])
    );
    // Results per site now: oxford 3, cambridge 2, leeds 2, york 1 (york has no samples).
    assert_eq!(rows(&report, "lab.results_by_site"), Some(4));
    // 3×2 oxford + 2×1 cambridge + 2×1 leeds (york: no samples)
    assert_eq!(rows(&report, "lab.results_samples"), Some(10));
    assert_eq!(rows(&report, "reporting.site_summary"), Some(3));
    assert_eq!(source_states(dir)["lims.results"], "delta:v1");

    let by_site = lake.read("lab.results_by_site");
    assert_eq!(by_site["version"], 1);
    assert_eq!(
        data(&by_site),
        sorted(json!([
            ["cambridge", 2, 8.0],
            ["leeds", 2, 11.0],
            ["oxford", 3, 10.0],
            ["york", 1, 8.0]
        ]))
    );
    let txn = assert_commit(&by_site, &report, "lab.results_by_site");
    assert!(txn > txn_by_site, "{txn} after {txn_by_site}");
    assert_ne!(
        model(&report, "lab.results_by_site")["version"],
        model(&first, "lab.results_by_site")["version"]
    );
    assert_eq!(lake.read("lab.results_samples")["rows"], 10);
    let summary = lake.read("reporting.site_summary");
    assert_eq!(
        data(&summary),
        sorted(json!([
            ["cambridge", 2, 8.0, 1, 1],
            ["leeds", 2, 11.0, 1, 1],
            ["oxford", 3, 10.0, 2, 1]
        ]))
    );
    assert_commit(&summary, &report, "reporting.site_summary");

    // The Iceberg-only model was not touched: same Delta version, same transaction, and its
    // last commit still belongs to the first run.
    let samples = lake.read("lab.samples_by_site");
    assert_eq!(
        (samples["version"].as_i64(), samples["txn_version"].as_i64()),
        (Some(0), Some(txn_samples))
    );
    assert_commit(&samples, &first, "lab.samples_by_site");
}

#[test]
fn an_iceberg_snapshot_rebuilds_the_models_that_read_it_with_source_change() {
    let lake = lake();
    let dir = &lake.ws;
    let first = run_ok(dir);
    let txn_by_site = lake.read("lab.results_by_site")["txn_version"]
        .as_i64()
        .unwrap();

    let appended = lake.iceberg("2");
    assert_eq!(appended["rows"], 6, "{appended}");
    let (old, new) = (
        lake.iceberg_1["snapshot_id"].as_i64().unwrap(),
        appended["snapshot_id"].as_i64().unwrap(),
    );
    assert_ne!(old, new);
    // PyIceberg names its metadata files `NNNNN-<uuid>.metadata.json`; the newest is 00002.
    let location = appended["metadata_location"].as_str().unwrap();
    assert!(location.contains("/metadata/00002-"), "{location}");

    let plan = plan(dir);
    assert_eq!(
        by_name(&plan, "decision"),
        map(&[
            ("lab.results_by_site", "skip"),
            ("lab.results_samples", "build"),
            ("lab.samples_by_site", "build"),
            ("reporting.site_summary", "build")
        ])
    );
    let source_change = vec![(
        "source_change".to_string(),
        Some("lims.samples".to_string()),
    )];
    assert_eq!(reasons(&plan, "lab.samples_by_site"), source_change);
    assert_eq!(reasons(&plan, "lab.results_samples"), source_change);
    let d = detail(&plan, "lab.samples_by_site");
    assert!(
        d.contains(&format!("iceberg:snapshot:{old},schema:0"))
            && d.contains(&format!("iceberg:snapshot:{new},schema:0")),
        "{d}"
    );
    assert_eq!(
        reasons(&plan, "lab.results_by_site"),
        [("unchanged".to_string(), None)]
    );

    let report = run_ok(dir);
    assert_eq!(model(&report, "lab.results_by_site")["status"], "skipped");
    // Samples per site now: oxford 2, cambridge 2, leeds 1, york 1.
    assert_eq!(rows(&report, "lab.samples_by_site"), Some(4));
    // 2×2 oxford + 2×2 cambridge + 1×1 leeds
    assert_eq!(rows(&report, "lab.results_samples"), Some(9));
    assert_eq!(rows(&report, "reporting.site_summary"), Some(3));
    assert_eq!(
        source_states(dir)["lims.samples"],
        format!("iceberg:snapshot:{new},schema:0")
    );

    let samples = lake.read("lab.samples_by_site");
    assert_eq!(samples["version"], 1);
    assert_eq!(
        data(&samples),
        sorted(json!([
            ["cambridge", 2, 2],
            ["leeds", 1, 1],
            ["oxford", 2, 1],
            ["york", 1, 0]
        ]))
    );
    assert_commit(&samples, &report, "lab.samples_by_site");
    let summary = lake.read("reporting.site_summary");
    assert_eq!(
        data(&summary),
        sorted(json!([
            ["cambridge", 2, 8.0, 2, 2],
            ["leeds", 1, 4.0, 1, 1],
            ["oxford", 2, 4.0, 2, 1]
        ]))
    );
    assert_commit(&summary, &report, "reporting.site_summary");
    let by_site = lake.read("lab.results_by_site");
    assert_eq!(
        (by_site["version"].as_i64(), by_site["txn_version"].as_i64()),
        (Some(0), Some(txn_by_site))
    );
    assert_commit(&by_site, &first, "lab.results_by_site");

    // Then the Delta source too: every source-reading model has now seen both appends.
    lake.delta(2);
    let report = run_ok(dir);
    assert_eq!(model(&report, "lab.samples_by_site")["status"], "skipped");
    // 3×2 oxford + 2×2 cambridge + 2×1 leeds + 1×1 york
    assert_eq!(rows(&report, "lab.results_samples"), Some(13));
    assert_eq!(
        data(&lake.read("reporting.site_summary")),
        sorted(json!([
            ["cambridge", 2, 8.0, 2, 2],
            ["leeds", 2, 11.0, 1, 1],
            ["oxford", 3, 10.0, 2, 1],
            ["york", 1, 8.0, 1, 0]
        ]))
    );
}

/// Sources declared in phlo.toml rather than found by convention: a Delta table by its
/// directory, an Iceberg table by its directory (follows the newest metadata.json) and the same
/// Iceberg table by one metadata.json file (pinned to that metadata, format inferred).
#[test]
fn declared_delta_and_iceberg_sources_follow_their_location() {
    require_python();
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let catalog = tmp.path().join("iceberg-catalog");
    let delta = |step: &str| python("write_delta.py", &[&ws.join("lake/orders")], &[step]);
    let iceberg = |step: &str| {
        python(
            "write_iceberg.py",
            &[&catalog, &ws.join("lake/samples")],
            &["raw.samples", step],
        )
    };
    delta("1");
    let first = iceberg("1");
    // The metadata.json PyIceberg just committed, relative to the workspace.
    let metadata = first["metadata_location"].as_str().unwrap();
    let metadata = Path::new(metadata.strip_prefix("file://").unwrap_or(metadata));
    let ws_abs = ws.canonicalize().unwrap();
    let pinned = metadata
        .strip_prefix(&ws_abs)
        .or_else(|_| metadata.strip_prefix(&ws))
        .unwrap_or_else(|_| panic!("{} is not below {}", metadata.display(), ws.display()))
        .to_string_lossy()
        .replace('\\', "/");
    write_file(
        &ws,
        "phlo.toml",
        &format!(
            "[source.\"raw.orders\"]\nlocation = \"lake/orders\"\nformat = \"delta\"\n\n\
             [source.\"raw.samples\"]\nlocation = \"lake/samples\"\nformat = \"iceberg\"\n\n\
             [source.\"raw.samples_pinned\"]\nlocation = \"{pinned}\"\n"
        ),
    );
    write_file(
        &ws,
        "transforms/shop/orders_by_site.sql",
        "-- @table\nselect site, count(*) as n from raw.orders group by site\n",
    );
    write_file(
        &ws,
        "transforms/shop/samples.sql",
        "-- @table\nselect * from raw.samples\n",
    );
    write_file(
        &ws,
        "transforms/shop/samples_pinned.sql",
        "-- @table\nselect * from raw.samples_pinned\n",
    );

    let report = run_ok(&ws);
    assert_eq!(rows(&report, "shop.orders_by_site"), Some(3));
    assert_eq!(rows(&report, "shop.samples"), Some(4));
    assert_eq!(rows(&report, "shop.samples_pinned"), Some(4));
    let snapshot = first["snapshot_id"].as_i64().unwrap();
    let states = source_states(&ws);
    assert_eq!(states["raw.orders"], "delta:v0");
    assert_eq!(
        states["raw.samples"],
        format!("iceberg:snapshot:{snapshot},schema:0")
    );
    assert_eq!(
        states["raw.samples_pinned"],
        format!("iceberg:snapshot:{snapshot},schema:0")
    );

    delta("2");
    let second = iceberg("2");
    let new = second["snapshot_id"].as_i64().unwrap();
    let plan = plan(&ws);
    assert_eq!(
        reasons(&plan, "shop.orders_by_site"),
        [("source_change".to_string(), Some("raw.orders".to_string()))]
    );
    assert_eq!(
        reasons(&plan, "shop.samples"),
        [("source_change".to_string(), Some("raw.samples".to_string()))]
    );
    assert_eq!(
        model(&plan, "shop.samples_pinned")["decision"],
        "skip",
        "{plan}"
    );

    let report = run_ok(&ws);
    assert_eq!(rows(&report, "shop.orders_by_site"), Some(4));
    assert_eq!(rows(&report, "shop.samples"), Some(6));
    assert_eq!(model(&report, "shop.samples_pinned")["status"], "skipped");
    let states = source_states(&ws);
    assert_eq!(states["raw.orders"], "delta:v1");
    assert_eq!(
        states["raw.samples"],
        format!("iceberg:snapshot:{new},schema:0")
    );
    assert_eq!(
        states["raw.samples_pinned"],
        format!("iceberg:snapshot:{snapshot},schema:0")
    );
    let samples = python(
        "read_delta.py",
        &[&ws.join(".phlo/warehouse/shop.samples")],
        &["phlo-transform:shop.samples"],
    );
    assert_eq!(samples["columns"], json!(["sample_id", "site", "passed"]));
    assert_eq!(samples["rows"], 6);
    assert_commit(&samples, &report, "shop.samples");
}

/// Iceberg schema evolution without a new snapshot (PyIceberg `update_schema().add_column`):
/// the table's current schema (id 1) has a column the current snapshot (written under schema 0)
/// lacks. The state changes (`schema:1`), and reading the table's current state must give the
/// current schema with the new column null for the old rows — what PyIceberg, Spark and Java
/// Iceberg do.
///
/// Fails with iceberg 0.10.1 (the engine's reader): its default scan projects the current
/// *snapshot's* schema (id 0) while the DataFusion provider declares the current schema (id 1),
/// so every model reading the table fails ("Batch has 3 columns but BatchCoalescer expects 4").
/// Upstream: apache/iceberg-rust#2905 / #2565.
#[test]
fn an_iceberg_schema_change_is_a_source_change_and_reads_the_current_schema() {
    let lake = lake();
    let dir = &lake.ws;
    write_file(
        dir,
        "transforms/lab/samples_all.sql",
        "-- @table\nselect * from lims.samples\n",
    );
    let first = run_ok(dir);
    assert_eq!(rows(&first, "lab.samples_all"), Some(4));

    let evolved = lake.iceberg("evolve");
    let snapshot = lake.iceberg_1["snapshot_id"].as_i64().unwrap();
    assert_eq!(evolved["snapshot_id"], snapshot, "{evolved}");
    assert_eq!(evolved["schema_id"], 1, "{evolved}");

    // A new model that reads the new column.
    write_file(
        dir,
        "transforms/lab/sample_notes.sql",
        "-- @table\nselect sample_id, note from lims.samples\n",
    );
    let plan = plan(dir);
    let d = detail(&plan, "lab.samples_all");
    assert!(
        d.contains(&format!("iceberg:snapshot:{snapshot},schema:1")),
        "{d}"
    );
    for name in [
        "lab.samples_all",
        "lab.samples_by_site",
        "lab.results_samples",
    ] {
        assert_eq!(
            reasons(&plan, name),
            [(
                "source_change".to_string(),
                Some("lims.samples".to_string())
            )],
            "{name}"
        );
    }
    assert_eq!(model(&plan, "lab.results_by_site")["decision"], "skip");

    let out = run(dir, &["run", "--json"]);
    let report = out.json();
    let failures: Vec<String> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["status"] == "failed")
        .map(|m| format!("{}: {}", m["name"], m["error"]["message"]))
        .collect();
    assert!(
        failures.is_empty() && out.code == 0,
        "reading the Iceberg source after `add_column` (no new snapshot) failed:\n{}",
        failures.join("\n")
    );
    assert_eq!(rows(&report, "lab.samples_all"), Some(4));
    let all = lake.read("lab.samples_all");
    assert_eq!(
        all["columns"],
        json!(["sample_id", "site", "passed", "note"])
    );
    assert!(
        all["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r[3].is_null()),
        "{all}"
    );
    let notes = lake.read("lab.sample_notes");
    assert_eq!(
        data(&notes),
        sorted(json!([[101, null], [102, null], [103, null], [104, null]]))
    );
}
