//! Typed compilation end to end: dialect functions, analysis modes, unknown propagation.

mod common;

use common::{run, write_file};
use std::path::Path;

fn workspace(phlo_toml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "phlo.toml", &format!("{phlo_toml}\n[source.\"lims.events\".columns]\nid = \"bigint\"\nstarted = \"timestamp\"\nfinished = \"timestamp\"\npayload = \"varchar\"\n"));
    write_file(root, "transforms/lab/durations.sql", "select id, date_diff('day', started, finished) as days,\n       json_extract_scalar(payload, '$.site') as site\nfrom lims.events\n");
    write_file(
        root,
        "transforms/lab/summary.sql",
        "select site, sum(days) as total_days from lab.durations group by site\n",
    );
    dir
}

fn columns(dir: &Path, model: &str) -> serde_json::Value {
    run(dir, &["inspect", model, "--json"]).json()["schema"].clone()
}

#[test]
fn trino_functions_type_check_under_the_trino_dialect() {
    let ws = workspace("[transform]\ndialect = \"trino\"\n");
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let schema = columns(ws.path(), "lab.durations");
    let types: Vec<String> = common::column_types(&schema);
    assert_eq!(types, ["id:Int64", "days:Int64", "site:Utf8"]);
    let summary = columns(ws.path(), "lab.summary");
    assert_eq!(summary["columns"][1]["type"], "Int64");
}

#[test]
fn without_the_dialect_the_same_functions_are_unknown() {
    let ws = workspace("");
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 2);
    let diags = out.json()["diagnostics"].clone();
    assert_eq!(diags[0]["code"], "T005", "{diags}");
    assert_eq!(
        (diags[0]["line"].as_u64(), diags[0]["column"].as_u64()),
        (Some(1), Some(12))
    );
}

#[test]
fn baseline_turns_untypeable_constructs_into_warnings_and_unknown_schemas() {
    let ws = workspace("[transform]\nanalysis = \"baseline\"\n");
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let diags = out.json()["diagnostics"].clone();
    assert_eq!(diags[0]["severity"], "warning");
    assert_eq!(diags[0]["code"], "T005");
    assert_eq!(columns(ws.path(), "lab.durations")["status"], "unknown");
    let downstream = columns(ws.path(), "lab.summary");
    assert_eq!(downstream["status"], "unknown");
    assert_eq!(
        downstream["reason"],
        "upstream lab.durations has an unknown schema"
    );
}

#[test]
fn a_model_can_turn_analysis_off() {
    let ws = workspace("");
    let file = ws.path().join("transforms/lab/durations.sql");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("-- @analysis off\n{text}")).unwrap();
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json()["diagnostics"].as_array().unwrap().len(), 0);
    assert_eq!(
        columns(ws.path(), "lab.durations")["reason"],
        "analysis is off for this model"
    );
}

#[test]
fn an_unknown_dialect_is_a_config_error() {
    let ws = workspace("[transform]\ndialect = \"oracle\"\n");
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 2);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["code"], "C002");
    assert!(d["message"].as_str().unwrap().contains("oracle"), "{d}");
}

fn contract_workspace(contract: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "phlo.toml", contract);
    write_file(
        root,
        "transforms/assay/assay_results.sql",
        "-- @key experiment_id\nselect 'e1' as experiment_id, cast(nullif(1.5, 0) as double) as result, 2 as replicate\n",
    );
    dir
}

#[test]
fn a_satisfied_enforced_contract_checks_clean_and_adds_not_null_tests() {
    let ws = contract_workspace(
        "[model.assay_results.contract]\nenforced = true\n\n[model.assay_results.columns.experiment_id]\ntype = \"VARCHAR\"\nnullable = false\n\n[model.assay_results.columns.result]\ntype = \"DOUBLE\"\nnullable = false\n\n[model.assay_results.columns.replicate]\ntype = \"bigint\"\n",
    );
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(ws.path().join(".phlo/transform/manifest.json")).unwrap(),
    )
    .unwrap();
    let tests: Vec<&str> = manifest["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tests.contains(&"assay.assay_results.not_null.result"),
        "{tests:?}"
    );
    assert_eq!(manifest["models"][0]["contract"]["enforced"], true);
}

#[test]
fn contract_violations_are_k_errors_located_in_phlo_toml() {
    let ws = contract_workspace(
        "[model.\"assay.assay_results\".contract]\nenforced = true\n\n[model.\"assay.assay_results\".columns.experiment_id]\ntype = \"bigint\"\n\n[model.\"assay.assay_results\".columns.reslt]\ntype = \"double\"\n\n[model.\"assay.assay_results\".renames]\nresults = \"legacy_result\"\n",
    );
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 2);
    let diags = out.json()["diagnostics"].clone();
    let found: Vec<(String, u64)> = diags
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert!(found.contains(&("K002".into(), 4)), "{found:?}"); // experiment_id is Utf8, not bigint
    assert!(found.contains(&("K001".into(), 7)), "{found:?}"); // reslt does not exist
    assert!(
        found.iter().filter(|(c, _)| c == "K003").count() == 2,
        "{found:?}"
    ); // result, replicate undeclared
    assert!(
        found.iter().any(|(c, _)| c == "K001") && found.len() == 5,
        "{found:?}"
    ); // + the rename of a missing column
    let typo = diags
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains("reslt"))
        .unwrap();
    assert_eq!(typo["suggestions"], serde_json::json!(["result"]));
}

#[test]
fn key_directives_must_name_real_columns() {
    let ws = contract_workspace("");
    let file = ws.path().join("transforms/assay/assay_results.sql");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("@key experiment_id", "@key experiment");
    std::fs::write(&file, text).unwrap();
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 2);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(
        (d["code"].as_str(), d["line"].as_u64()),
        (Some("K004"), Some(1))
    );
    assert_eq!(d["suggestions"], serde_json::json!(["experiment_id"]));
}

/// A function the target declares with overloads: PostgreSQL rounds a double only to an
/// integer (`round(double precision)`), a numeric to digits (`round(numeric, integer)`), and
/// has no `round(double precision, integer)`: under its dialect that call is T010 at the call,
/// where DuckDB (and the local engine) accept it.
#[test]
fn round_to_digits_of_a_double_is_a_type_error_on_postgres_only() {
    let model = "select round(x, 2) as a,\n       round(x) as b,\n       round(cast(x as decimal(10, 4)), 2) as c,\n       round(n, 1) as d\nfrom m.src\n";
    let ws = |dialect: &str| {
        let dir = tempfile::tempdir().unwrap();
        write_file(
            dir.path(),
            "phlo.toml",
            &format!(
                "[transform]\ndialect = \"{dialect}\"\n\n[source.\"m.src\".columns]\nx = \"double\"\nn = \"bigint\"\n"
            ),
        );
        write_file(dir.path(), "transforms/m/r.sql", model);
        dir
    };
    let pg = ws("postgres");
    let out = run(pg.path(), &["check", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let diags = out.json()["diagnostics"].clone();
    let got: Vec<(&str, u64, u64)> = diags
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [("T010", 1, 8)], "{diags}");
    assert!(
        diags[0]["message"].as_str().unwrap().contains("`round`"),
        "{diags}"
    );
    // Without the offending call the other overloads type-check.
    let fixed = model.replace(
        "round(x, 2) as a",
        "round(cast(x as decimal(10, 4)), 1) as a",
    );
    write_file(pg.path(), "transforms/m/r.sql", &fixed);
    let out = run(pg.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let duck = ws("duckdb");
    let out = run(duck.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let schema = columns(duck.path(), "m.r");
    assert_eq!(
        common::column_types(&schema),
        ["a:Float64", "b:Float64", "c:Decimal128(10, 4)", "d:Int64"]
    );
}
