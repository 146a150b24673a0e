//! `init` (issue 43, item 3): a new workspace that `run` builds at once on the embedded engine
//! and whose tests pass; a directory that holds anything is refused, untouched.

mod common;

use common::{assert_refused, run};

#[test]
fn init_then_run_then_test_pass_on_the_embedded_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &["init", "shop", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    let files: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for expected in [
        "phlo.toml",
        "README.md",
        "sources/raw/orders.csv",
        "transforms/shop/orders.sql",
        "transforms/shop/daily_revenue.sql",
        "tests/daily_revenue_matches_orders.sql",
    ] {
        assert!(files.contains(&expected), "{files:?}");
    }
    let ws = tmp.path().join("shop");

    let check = run(&ws, &["check", "--json"]);
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let check = check.json();
    assert_eq!(check["diagnostics"], serde_json::json!([]), "{check}");
    let models: Vec<(&str, &str)> = check["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap(),
                m["materialization"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        models,
        [("shop.daily_revenue", "view"), ("shop.orders", "table")]
    );

    let built = run(&ws, &["run", "--json"]);
    assert_eq!(built.code, 0, "{}\n{}", built.stdout, built.stderr);
    let built = built.json();
    assert_eq!(built["status"], "passed", "{built}");
    assert_eq!(built["counts"]["passed"], 2, "{built}");
    let rows: Vec<(&str, u64)> = built["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["rows"].as_u64().unwrap_or(0)))
        .collect();
    // 8 orders in the CSV, 2 cancelled; the table holds 6 rows.
    assert!(rows.contains(&("shop.orders", 6)), "{rows:?}");
    let tests = built["tests"].as_array().unwrap();
    // The custom test, and the @key / @not-null tests of both models.
    assert!(tests.len() >= 6, "{built}");
    assert!(tests.iter().all(|t| t["status"] == "passed"), "{built}");
    assert!(
        tests
            .iter()
            .any(|t| t["name"] == "daily_revenue_matches_orders"),
        "{built}"
    );

    let tested = run(&ws, &["test", "--json"]);
    assert_eq!(tested.code, 0, "{}\n{}", tested.stdout, tested.stderr);
    let tested = tested.json();
    assert_eq!(tested["status"], "passed", "{tested}");
    assert_eq!(
        tested["tests"].as_array().unwrap().len(),
        tests.len(),
        "{tested}"
    );

    // And it is not a fixed answer: a violation the custom test exists for is caught.
    let model = ws.join("transforms/shop/daily_revenue.sql");
    let text = std::fs::read_to_string(&model).unwrap();
    std::fs::write(&model, text.replace("sum(o.amount)", "max(o.amount)")).unwrap();
    let broken = run(&ws, &["run", "--json"]);
    assert_eq!(broken.code, 1, "{}\n{}", broken.stdout, broken.stderr);
    let broken = broken.json();
    let failed: Vec<&str> = broken["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "failed")
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["daily_revenue_matches_orders"], "{broken}");
}

#[test]
fn init_refuses_a_directory_that_is_not_empty_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "mine\n").unwrap();
    let out = run(tmp.path(), &["init", "--json"]);
    assert_refused(&out, "P012", "never overwrites");
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["file"], tmp.path().display().to_string());
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing written beside the existing file");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("notes.txt")).unwrap(),
        "mine\n"
    );

    // Text mode: the code on stderr, exit 2.
    let text = run(tmp.path(), &["init"]);
    assert_eq!(text.code, 2);
    assert!(text.stderr.contains("P012"), "{}", text.stderr);

    // Initialising twice is refused the same way.
    let fresh = tempfile::tempdir().unwrap();
    assert_eq!(run(fresh.path(), &["init"]).code, 0);
    assert_refused(
        &run(fresh.path(), &["init", "--json"]),
        "P012",
        "never overwrites",
    );
}
