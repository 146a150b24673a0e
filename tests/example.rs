//! The README's main command: the example workspace builds, tests pass, a second run skips.

mod common;

use common::run;

#[test]
fn example_workspace_runs_then_skips_everything() {
    let ws = tempfile::tempdir().unwrap();
    common::copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/lab"),
        ws.path(),
    );
    let first = run(ws.path(), &["run", "--json"]);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let report = first.json();
    let models = report["models"].as_array().unwrap();
    assert!(models.len() >= 12, "{} models", models.len());
    assert!(models.iter().all(|m| m["status"] == "passed"), "{report}");
    assert!(report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "passed"));

    let second = run(ws.path(), &["run", "--json"]).json();
    assert!(
        second["models"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["status"] == "skipped"),
        "{second}"
    );

    // Switching a table to a view replaces the Delta table with a view definition.
    let release = ws
        .path()
        .join("workflows/manufacturing/transforms/batch_release.sql");
    let text = std::fs::read_to_string(&release).unwrap();
    std::fs::write(&release, text.replace("-- @table", "-- @view")).unwrap();
    let third = run(ws.path(), &["run", "--json"]);
    assert_eq!(third.code, 0, "{}", third.stdout);
    // The example's `default_schema = "analytics"` places every model in that schema.
    let warehouse = ws.path().join(".phlo/warehouse");
    assert!(warehouse
        .join("analytics.manufacturing__batch_release.view.json")
        .is_file());
    assert!(!warehouse
        .join("analytics.manufacturing__batch_release")
        .exists());
}
