//! One workspace per error class under testdata/errors: each fails `check` with exit code 2,
//! never panics, and both renderings (rustc-like text, JSON) are snapshot-tested.

mod common;

use common::{run, testdata};

const CASES: &[(&str, &str)] = &[
    ("syntax_error", "S001"),
    ("unresolved_relation", "R001"),
    ("ambiguous_relation", "R002"),
    ("cycle", "G001"),
    ("invalid_directive", "P004"),
    ("malformed_toml", "C001"),
    ("invalid_config", "C002"),
    ("unreadable_source", "R003"),
    ("type_errors", "T001"),
    ("coercion_errors", "T003"),
];

#[test]
fn every_error_class_is_reported_with_code_location_and_help() {
    for (case, code) in CASES {
        let dir = testdata(&format!("errors/{case}"));
        let human = run(&dir, &["check"]);
        assert_eq!(human.code, 2, "{case}: {}", human.stderr);
        assert!(
            !human.stderr.contains("panicked"),
            "{case} panicked:\n{}",
            human.stderr
        );
        insta::assert_snapshot!(format!("{case}_human"), human.stderr);

        let json = run(&dir, &["check", "--json"]);
        assert_eq!(json.code, 2, "{case}");
        let report = json.json();
        let diags = report["diagnostics"].as_array().unwrap();
        let d = diags
            .iter()
            .find(|d| d["code"] == *code)
            .unwrap_or_else(|| panic!("{case}: no {code} in {diags:?}"));
        for field in ["severity", "message", "file", "line", "column", "help"] {
            assert!(!d[field].is_null(), "{case}: {field} missing in {d}");
        }
        insta::assert_json_snapshot!(format!("{case}_json"), report["diagnostics"]);
    }
}

#[test]
fn ambiguity_lists_candidates_and_unresolved_suggests() {
    let report = run(&testdata("errors/ambiguous_relation"), &["check", "--json"]).json();
    assert_eq!(
        report["diagnostics"][0]["suggestions"],
        serde_json::json!(["assay.results", "manufacturing.results"])
    );
    let report = run(
        &testdata("errors/unresolved_relation"),
        &["check", "--json"],
    )
    .json();
    assert_eq!(
        report["diagnostics"][0]["suggestions"],
        serde_json::json!(["lab.results"])
    );
}

#[test]
fn a_cycle_is_reported_with_its_whole_path() {
    let report = run(&testdata("errors/cycle"), &["check", "--json"]).json();
    let message = report["diagnostics"][0]["message"].as_str().unwrap();
    assert_eq!(message, "dependency cycle: lab.a → lab.c → lab.b → lab.a");
}

/// A compile error blocks the models it reaches; what compiles still runs (issue 11).
#[test]
fn run_builds_what_compiles_and_blocks_what_does_not() {
    let ws = common::workspace("errors/unresolved_relation");
    let out = run(ws.path(), &["run", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let report = out.json();
    assert_eq!(
        common::by_name(&report, "status"),
        common::map(&[("lab.results", "passed"), ("lab.summary", "blocked")])
    );
    let summary = &report["models"][1];
    assert_eq!(summary["error"]["code"], "E008");
    assert!(
        summary["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("does not compile: error[R001] at workflows/lab/transforms/summary.sql:2"),
        "{summary}"
    );

    // Nothing that compiles in the selection: refused, nothing created.
    let ws = common::workspace("errors/unresolved_relation");
    let out = run(ws.path(), &["run", "lab.summary"]);
    assert_eq!(out.code, 2);
    assert!(!ws.path().join(".phlo/warehouse").exists());
}

#[test]
fn a_missing_workspace_is_a_clear_error() {
    let out = run(
        std::path::Path::new("/nonexistent/phlo-workspace"),
        &["check"],
    );
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("error[P001]"), "{}", out.stderr);
}

#[test]
fn type_errors_are_all_reported_with_their_codes_and_downstream_is_not_blamed() {
    let report = run(&testdata("errors/type_errors"), &["check", "--json"]).json();
    let mut got: Vec<(String, String)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let want: Vec<(String, String)> = [
        ("transforms/lab/calls.sql", "T005"),
        ("transforms/lab/grouping.sql", "T006"),
        ("transforms/lab/typo.sql", "T001"),
        ("transforms/lab/unioned.sql", "T007"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, want);
    let typo = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "T001")
        .unwrap();
    assert_eq!(
        (typo["line"].as_u64(), typo["column"].as_u64()),
        (Some(2), Some(8))
    );
}

/// What DataFusion's analyzer (type coercion) rejects is reported at check time, at the
/// rejected expression, one line each; a view is checked like a table.
#[test]
fn analyzer_errors_are_located_at_the_rejected_expression() {
    let report = run(&testdata("errors/coercion_errors"), &["check", "--json"]).json();
    let mut got: Vec<(String, String, u64, u64)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let message = d["message"].as_str().unwrap();
            assert!(!message.contains('\n'), "one line: {message}");
            assert!(d["help"].is_string(), "{d}");
            (
                d["file"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    let want: Vec<(String, String, u64, u64)> = [
        ("transforms/lab/case_condition.sql", "T011", 2, 8),
        ("transforms/lab/date_vs_boolean.sql", "T003", 3, 7),
        ("transforms/lab/in_subquery.sql", "T003", 3, 7),
        ("transforms/lab/join_keys.sql", "T003", 5, 6),
        ("transforms/lab/sum_of_dates.sql", "T010", 2, 8),
    ]
    .iter()
    .map(|(f, c, l, col)| (f.to_string(), c.to_string(), *l, *col))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn inspect_shows_inferred_column_types() {
    let out = run(
        &testdata("mvp"),
        &["inspect", "reporting.monthly", "--json"],
    );
    let schema = &out.json()["schema"];
    assert_eq!(schema["status"], "known");
    let cols: Vec<String> = common::column_types(schema);
    assert_eq!(
        cols,
        [
            "experiment_id:Utf8",
            "sample_id:Utf8",
            "site:Utf8",
            "result:Float64"
        ]
    );
}

#[test]
fn explain_code_prints_the_table_entry_and_suggests_close_codes() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["explain-code", "t003"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("T003 INCOMPATIBLE_TYPES (type)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("help: Cast one side"), "{}", out.stdout);

    let entry = run(dir.path(), &["--json", "explain-code", "E006"]).json();
    assert_eq!(entry["name"], "SQL_RUNTIME_ERROR");
    assert_eq!(entry["category"], "execution");
    assert!(entry["explanation"]
        .as_str()
        .unwrap()
        .contains("never retried"));

    let all = run(dir.path(), &["--json", "explain-code"]).json();
    let all = all.as_array().unwrap();
    assert!(all.iter().any(|c| c["code"] == "Y006"), "{all:?}");
    assert!(all
        .iter()
        .all(|c| c["help"].as_str().is_some_and(|h| !h.is_empty())));

    let unknown = run(dir.path(), &["--json", "explain-code", "T0O3"]);
    assert_eq!(unknown.code, 2);
    let d = &unknown.json()["diagnostics"][0];
    assert_eq!(d["code"], "P011");
    assert_eq!(d["suggestions"][0], "T003");
}

/// Issue 12: `inspect --sql` (decided in the library, `inspect_command`) refuses a model that
/// is never sent to a warehouse, an ephemeral one or one with compile errors (P008, saying
/// which), and prints the statements of one that is.
#[test]
fn inspect_sql_refuses_models_never_sent_to_the_warehouse() {
    let ws = common::workspace("lineage");
    let dir = ws.path();
    common::write_file(
        dir,
        "transforms/cases/broken.sql",
        "select no_such_column from raw.orders\n",
    );
    let refused = |model: &str, says: &str| {
        let out = common::run(dir, &["inspect", model, "--sql", "--json"]);
        assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
        let d = &out.json()["diagnostics"][0];
        assert_eq!(d["code"], "P008", "{d}");
        assert!(d["message"].as_str().unwrap().contains(says), "{d}");
    };
    refused("cases.base", "never sent to the warehouse: it is ephemeral");
    refused(
        "cases.broken",
        "never sent to the warehouse: it has compile errors",
    );
    let sent = common::run(dir, &["inspect", "cases.chain", "--sql", "--json"]);
    assert_eq!(sent.code, 0, "{}", sent.stderr);
    let statements = sent.json()["statements"].clone();
    assert!(
        statements.as_array().is_some_and(|s| !s.is_empty()),
        "{statements}"
    );
}
