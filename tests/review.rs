//! `review` (issue 41): one report of a branch's change for a pull request. A Git repository
//! whose workspace ran at `main`, then a branch that changes three models — a column removed
//! that a reader uses (BREAKING), a filter that changes a table's data, and a comment only —
//! reviewed as Markdown (snapshot) and JSON, with `--fail-on` and a candidate environment.

mod common;

use common::run;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The repository (workspace in `ws/`): `main` built once (so state has its records and test
/// results), then branch `feature` checked out with the three changes committed.
fn reviewed_repository() -> (tempfile::TempDir, PathBuf) {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let ws = dir.join("ws");
    common::git(dir, &["init", "-q", "-b", "main"]);
    common::write_file(dir, ".gitignore", ".phlo/\n");
    common::write_file(
        &ws,
        "phlo.toml",
        "[transform]\ndefault_materialization = \"table\"\n",
    );
    common::write_file(
        &ws,
        "sources/raw/orders.csv",
        "id,customer_id,amount,status\n1,10,5.5,paid\n2,10,7.0,open\n3,11,2.25,paid\n\
         4,12,9.0,paid\n5,12,1.0,open\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/orders.sql",
        "-- @key id\n-- @not-null customer_id\nselect id, customer_id, amount, status from raw.orders\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/report.sql",
        "select customer_id, sum(amount) as total from shop.orders group by customer_id\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/customers.sql",
        "-- @key customer_id\nselect customer_id, count(*) as orders from shop.orders group by customer_id\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/statuses.sql",
        "-- Order statuses seen.\nselect distinct status from raw.orders\n",
    );
    common::write_file(
        &ws,
        "tests/customers_have_orders.sql",
        "select * from shop.customers where orders < 1\n",
    );
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-q", "-m", "shop"]);
    let built = run(&ws, &["run"]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    common::git(dir, &["checkout", "-q", "-b", "feature"]);
    // Breaking: `amount` goes, and shop.report sums it.
    common::write_file(
        &ws,
        "transforms/shop/orders.sql",
        "-- @key id\n-- @not-null customer_id\nselect id, customer_id, status from raw.orders\n",
    );
    // Data: only paid orders are counted.
    common::write_file(
        &ws,
        "transforms/shop/customers.sql",
        "-- @key customer_id\nselect customer_id, count(*) as orders from shop.orders where status = 'paid' group by customer_id\n",
    );
    // A comment only.
    common::write_file(
        &ws,
        "transforms/shop/statuses.sql",
        "-- Order statuses seen (open, paid).\nselect distinct status from raw.orders\n",
    );
    common::git(dir, &["commit", "-q", "-a", "-m", "feature"]);
    (repo, ws)
}

fn names(v: &Value, field: &str) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x[field].as_str().unwrap_or("null").to_string())
        .collect()
}

#[test]
fn review_of_a_branch_with_a_breaking_a_data_and_a_comment_change() {
    let (repo, ws) = reviewed_repository();
    let dir = repo.path();
    let base = common::git_out(dir, &["rev-parse", "main"]);
    let head = common::git_out(dir, &["rev-parse", "HEAD"]);

    // The PR comment: the reader's compile error goes to stderr, the Markdown to stdout.
    let md = run(&ws, &["review", "--base", "main"]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    assert!(md.stderr.contains("error[T001]"), "{}", md.stderr);
    let markdown = md
        .stdout
        .replace(&base[..12], "<merge-base>")
        .replace(&head[..12], "<head>");
    insta::assert_snapshot!("review_markdown", markdown);

    let out = run(&ws, &["review", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = out.json();
    assert_eq!(r["planned_against"], "main");
    assert_eq!(r["candidate"], Value::Null);
    assert_eq!(r["compile_errors"], 1);
    assert_eq!(r["lineage"]["base"]["commit"], base.as_str());
    assert_eq!(
        r["headline"],
        serde_json::json!({
            "models_changed": 2, "downstream_rebuilt": 0, "no_semantic_change": 1,
            "models_removed": 0, "blocked": 1,
            "columns_added": 0, "columns_removed": 1, "columns_changed": 0,
            "breaking_changes": 1, "review_changes": 0,
            "rows_added": 0, "rows_removed": 0, "records_modified": 2,
            "models_diffed": 2, "models_not_diffed": 1, "diff_policy_violations": 0,
            "tests_passed": 0, "tests_failed": 0, "tests_not_run": 6
        })
    );
    // The comment-only model: no semantic change, nothing planned for it.
    let models = &r["models"];
    assert_eq!(
        names(models, "name"),
        [
            "shop.customers",
            "shop.orders",
            "shop.report",
            "shop.statuses"
        ]
    );
    assert_eq!(
        names(models, "change"),
        ["changed", "changed", "downstream", "no_semantic_change"]
    );
    assert_eq!(
        names(models, "decision"),
        ["build", "build", "blocked", "null"]
    );
    assert_eq!(models[3]["reasons"], serde_json::json!([]));
    assert_eq!(
        models[3]["causes"],
        serde_json::json!(["transforms/shop/statuses.sql modified: formatting or comments only"])
    );
    assert_eq!(models[0]["sql_change"], "semantic");
    // The breaking change and the reader it breaks.
    let schema = &r["schema_changes"];
    assert_eq!(schema.as_array().unwrap().len(), 1, "{schema}");
    assert_eq!(schema[0]["model"], "shop.orders");
    assert_eq!(schema[0]["severity"], "BREAKING");
    assert_eq!(schema[0]["changes"][0]["kind"], "removed");
    assert_eq!(schema[0]["changes"][0]["column"], "amount");
    assert_eq!(schema[0]["downstream"][0]["model"], "shop.report");
    // The lineage delta names the orphaned reader.
    assert_eq!(
        r["lineage"]["orphaned"][0]["consumers"][0]["id"],
        "dataset://shop.report#total"
    );
    // Data: the filter modified two customers' counts, keyed on @key; the removal is a schema
    // difference with every row the same; the blocked reader is skipped with the reason.
    let data = &r["data"];
    assert_eq!(
        names(data, "model"),
        ["shop.orders", "shop.customers", "shop.report"]
    );
    assert_eq!(names(data, "status"), ["diffed", "diffed", "skipped"]);
    let customers = &data[1]["summary"];
    assert_eq!(customers["key"], serde_json::json!(["customer_id"]));
    assert_eq!(
        customers["records"],
        serde_json::json!({"added": 0, "removed": 0, "modified": 2, "unchanged": 1})
    );
    assert_eq!(
        customers["changed_columns"],
        serde_json::json!([{"column": "orders", "values": 2}])
    );
    assert_eq!(data[0]["summary"]["schema"]["removed"][0]["name"], "amount");
    assert!(data[2]["reason"]
        .as_str()
        .unwrap()
        .starts_with("blocked: does not compile"));
    // Tests: every one passed at main, none at the branch's versions.
    let tests = &r["tests"];
    assert_eq!(tests.as_array().unwrap().len(), 6);
    assert!(tests
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "passed" && t["current"] == false));
    assert_eq!(
        names(&r["files"], "path"),
        [
            "transforms/shop/customers.sql",
            "transforms/shop/orders.sql",
            "transforms/shop/statuses.sql"
        ]
    );
    // The compile error travels in the envelope.
    assert_eq!(names(&r["diagnostics"], "code"), ["T001"]);

    // --fail-on breaking: the same report, exit 1 and an L018 naming the change.
    let refused = run(&ws, &["--json", "review", "--fail-on", "breaking,tests"]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    let r = refused.json();
    assert_eq!(r["headline"]["breaking_changes"], 1);
    let l018: Vec<&Value> = r["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "L018")
        .collect();
    // No test failed at its current version: only `breaking` refuses.
    assert_eq!(l018.len(), 1, "{r}");
    assert!(l018[0]["message"]
        .as_str()
        .unwrap()
        .contains("shop.orders.amount (removed column)"));
    assert!(!l018[0]["help"].as_str().unwrap().is_empty());
    let passes = run(&ws, &["review", "--fail-on", "diff-policy"]);
    assert_eq!(passes.code, 0, "{}", passes.stderr);

    // On a candidate environment built from the branch: its data, its test results (at the
    // current versions) and the gates of promoting it.
    assert_eq!(run(&ws, &["ref", "create", "ci-7"]).code, 0);
    // The reader does not compile: the run builds the rest and exits 2.
    let ci = run(&ws, &["--ref", "ci-7", "run"]);
    assert_eq!(ci.code, 2, "{}{}", ci.stdout, ci.stderr);
    let out = run(&ws, &["--ref", "ci-7", "review", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let r = out.json();
    assert_eq!(r["candidate"], "ci-7");
    assert_eq!(r["headline"]["tests_passed"], 6);
    assert_eq!(r["headline"]["tests_not_run"], 0);
    assert_eq!(r["headline"]["records_modified"], 2);
    assert!(r["data"][1]["summary"]["base"]
        .as_str()
        .unwrap()
        .contains("main"));
    let promotion = &r["promotion"];
    assert_eq!(promotion["from"], "ci-7");
    assert_eq!(promotion["to"], "main");
    assert_eq!(promotion["passed"], false);
    let failed: Vec<&str> = promotion["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["passed"] == false)
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["run", "blocked", "schema"]);
    let md = run(&ws, &["--ref", "ci-7", "review"]);
    assert!(
        md.stdout
            .contains("| blocked into `main`<br>5 of 8 gates passed |"),
        "{}",
        md.stdout
    );

    // Work-tree edits are part of the change: a deleted model is reported removed.
    std::fs::remove_file(ws.join("transforms/shop/statuses.sql")).unwrap();
    let r = run(&ws, &["review", "--format", "json"]).json();
    assert_eq!(r["headline"]["models_removed"], 1);
    let removed: Vec<&Value> = r["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["change"] == "removed")
        .collect();
    assert_eq!(removed.len(), 1, "{r}");
    assert_eq!(removed[0]["name"], "shop.statuses");
    assert_eq!(removed[0]["path"], "transforms/shop/statuses.sql");

    // A workspace that refuses BREAKING changes: still reviewed, and refused as by
    // `--fail-on breaking` (where `plan` would stop with L011 and no report).
    common::write_file(
        &ws,
        "phlo.toml",
        "[transform]\ndefault_materialization = \"table\"\n\n[schema]\nbreaking_changes = \"error\"\n",
    );
    let out = run(&ws, &["--json", "review"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let r = out.json();
    assert_eq!(r["headline"]["breaking_changes"], 1);
    assert!(
        names(&r["diagnostics"], "code").contains(&"L018".to_string()),
        "{r}"
    );
}

/// A base Git cannot resolve is the lineage diff's coded error, with help; an unknown
/// candidate environment is Y007.
#[test]
fn review_against_an_unknown_ref_is_an_error() {
    let (_repo, ws) = reviewed_repository();
    let out = run(&ws, &["--json", "review", "--base", "no-such-branch"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let r = out.json();
    let d = &r["diagnostics"][0];
    assert_eq!(d["code"], "L015", "{r}");
    assert!(d["help"].as_str().is_some_and(|h| !h.is_empty()));
    // A candidate environment that does not exist stops it too.
    let out = run(&ws, &["--json", "--ref", "ci-0", "review"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.json()["diagnostics"][0]["code"], "Y007");
}

/// examples/ci/run.sh (docs/ci.md's pipeline run locally on a copy of examples/lab with two
/// commits): every step passes and the review it would post says the change is safe to
/// promote, with the new column, the data change and the comment-only model.
#[test]
fn the_ci_recipe_runs_end_to_end() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci/run.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .env("PHLO_TRANSFORM", common::bin())
        .env_remove("PHLO_STATE_URL")
        .env_remove("KEEP")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for step in [
        "check",
        "plan --since main",
        "run --since main",
        "test",
        "diff --from main --to ci-1 --full",
        "review --base main",
    ] {
        assert!(stderr.contains(step), "{step}:\n{stderr}");
    }
    for line in [
        "| 2 changed<br>7 downstream rebuilt<br>1 without semantic change | +1 column<br>",
        "safe into `main`<br>8 of 8 gates passed",
        "| `manufacturing.site_monthly_yield` | `site_code, month_start` (model) | 13 → 13 | 0 | 0 | 2 | `yield_ratio` 2 | passed |",
        "| `shared.calendar` | no semantic change |",
    ] {
        assert!(stdout.contains(line), "{line}:\n{stdout}");
    }
}

/// A view's change is data impact too: its old definition against its new one, over the
/// same data.
#[test]
fn a_changed_view_is_diffed() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let ws = dir.join("ws");
    common::git(dir, &["init", "-q", "-b", "main"]);
    common::write_file(dir, ".gitignore", ".phlo/\n");
    common::write_file(&ws, "phlo.toml", "");
    common::write_file(
        &ws,
        "sources/raw/orders.csv",
        "id,amount\n1,5.5\n2,7.0\n3,2.25\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/orders.sql",
        "-- @view\n-- @key id\nselect id, amount from raw.orders\n",
    );
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-q", "-m", "shop"]);
    let built = run(&ws, &["run"]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    common::git(dir, &["checkout", "-q", "-b", "feature"]);
    common::write_file(
        &ws,
        "transforms/shop/orders.sql",
        "-- @view\n-- @key id\nselect id, amount * 2 as amount from raw.orders\n",
    );
    common::git(dir, &["commit", "-q", "-a", "-m", "double"]);
    let r = run(&ws, &["review", "--format", "json"]).json();
    let data = r["data"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(names(&r["data"], "model"), ["shop.orders"], "{r}");
    assert_eq!(data[0]["status"], "diffed", "{r}");
    assert_eq!(data[0]["summary"]["records"]["modified"], 3, "{r}");
}
