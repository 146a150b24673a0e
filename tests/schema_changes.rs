//! Schema changes in `plan` (SPEC §49–51): a model's columns against those recorded with its
//! last materialisation, classified SAFE / REVIEW / BREAKING, with the downstream models a
//! change reaches — reported before anything runs.

mod common;

use common::{run, write_file};
use std::path::Path;

const ORDERS_V1: &str = "-- @table
select id, customer, amount, cast(qty as int) as qty, legacy
from (values (1, 'ann', 10.5, 2, 'x'), (2, 'bob', 3.0, 1, 'y')) as t(id, customer, amount, qty, legacy)
";

/// `legacy` removed, `qty` widened, `note` added (nullable).
const ORDERS_V2: &str = "-- @table
select id, customer, amount, cast(qty as bigint) as qty, cast(null as varchar) as note
from (values (1, 'ann', 10.5, 2, 'x'), (2, 'bob', 3.0, 1, 'y')) as t(id, customer, amount, qty, legacy)
";

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "phlo.toml", "");
    write_file(root, "transforms/shop/orders.sql", ORDERS_V1);
    write_file(
        root,
        "transforms/shop/report.sql",
        "-- @table\nselect id,\n       legacy\nfrom shop.orders\n",
    );
    write_file(
        root,
        "transforms/shop/everything.sql",
        "select * from shop.orders\n",
    );
    let first = run(root, &["run"]);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    dir
}

fn edit(root: &Path, rel: &str, text: &str) {
    write_file(root, rel, text);
}

#[test]
fn removing_a_referenced_column_reports_breaking_with_the_reader_and_line() {
    let ws = workspace();
    edit(ws.path(), "transforms/shop/orders.sql", ORDERS_V2);
    let out = run(ws.path(), &["plan"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let text = &out.stderr;
    assert!(
        text.contains("Schema changes: shop.orders  [BREAKING]"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("- legacy") && l.contains("BREAKING")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("~ qty Int32 -> Int64") && l.contains("REVIEW")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("+ note Utf8") && l.contains("SAFE")),
        "{text}"
    );
    assert!(
        text.contains("shop.report  direct reference to legacy at line 3"),
        "{text}"
    );
    assert!(
        text.contains("shop.everything  SELECT * dependency"),
        "{text}"
    );

    let json = run(ws.path(), &["--json", "plan"]).json();
    let orders = json["schema_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["model"] == "shop.orders")
        .expect("orders changes");
    assert_eq!(orders["severity"], "BREAKING");
    let report = orders["downstream"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["model"] == "shop.report")
        .unwrap();
    assert_eq!(report["references"][0]["kind"], "direct");
    assert_eq!(report["references"][0]["line"], 3);
    // Nothing ran: the table still has the old column.
    let cols = run(ws.path(), &["--json", "state", "model", "shop.orders"]);
    assert!(cols.stdout.contains("legacy"), "{}", cols.stdout);
}

#[test]
fn a_plan_that_compiles_carries_its_schema_changes() {
    let ws = workspace();
    edit(ws.path(), "transforms/shop/orders.sql", ORDERS_V2);
    edit(
        ws.path(),
        "transforms/shop/report.sql",
        "-- @table\nselect id, note\nfrom shop.orders\n",
    );
    let out = run(ws.path(), &["--json", "plan"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan = out.json();
    let orders = plan["schema_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["model"] == "shop.orders")
        .unwrap();
    let kinds: Vec<(String, String)> = orders["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().into(),
                c["column"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("type_changed".into(), "qty".into()),
            ("added".into(), "note".into()),
            ("removed".into(), "legacy".into())
        ]
    );
    let readers: Vec<&str> = orders["downstream"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["model"].as_str().unwrap())
        .collect();
    assert_eq!(
        readers,
        ["shop.everything"],
        "report no longer reads legacy"
    );
    // The human plan prints the same section.
    let text = run(ws.path(), &["plan"]);
    assert!(
        text.stdout
            .contains("Schema changes: shop.orders  [BREAKING]"),
        "{}",
        text.stdout
    );
    // An unchanged workspace has none.
    assert_eq!(run(ws.path(), &["run"]).code, 0);
    assert_eq!(
        run(ws.path(), &["--json", "plan"]).json()["schema_changes"],
        serde_json::json!([])
    );
}

#[test]
fn breaking_changes_error_policy_rejects_the_plan() {
    let ws = workspace();
    edit(
        ws.path(),
        "transforms/shop/report.sql",
        "-- @table\nselect id\nfrom shop.orders\n",
    );
    assert_eq!(run(ws.path(), &["run"]).code, 0);
    // Removing `legacy` from shop.report was itself breaking: the policy is set afterwards.
    edit(
        ws.path(),
        "phlo.toml",
        "[schema]\nbreaking_changes = \"error\"\n",
    );
    edit(ws.path(), "transforms/shop/orders.sql", ORDERS_V2);
    let out = run(ws.path(), &["--json", "plan"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["code"], "L011");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("shop.orders.legacy"),
        "{d}"
    );
    // A nullable addition alone is SAFE and passes.
    edit(
        ws.path(),
        "transforms/shop/orders.sql",
        &ORDERS_V1.replace("legacy\nfrom", "legacy, cast(null as int) as extra\nfrom"),
    );
    let ok = run(ws.path(), &["plan"]);
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
}

/// `explain` gives the decision `plan` gives, with the same reasons, and the schema changes.
#[test]
fn explain_matches_the_plan_decision() {
    let ws = workspace();
    let same = run(ws.path(), &["--json", "explain", "shop.orders"]).json();
    assert_eq!(same["planned"]["decision"], "skip");
    assert_eq!(same["planned"]["reasons"][0]["kind"], "unchanged");
    assert!(same["recorded"]["version"].is_string());

    edit(ws.path(), "transforms/shop/orders.sql", ORDERS_V2);
    edit(
        ws.path(),
        "transforms/shop/report.sql",
        "-- @table\nselect id\nfrom shop.orders\n",
    );
    let e = run(ws.path(), &["--json", "explain", "shop.orders"]).json();
    assert_eq!(e["planned"]["decision"], "build");
    assert_eq!(e["planned"]["reasons"][0]["kind"], "sql_semantic_change");
    assert_eq!(e["schema_change"]["severity"], "BREAKING");
    let text = run(ws.path(), &["explain", "shop.report"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("Decision:      build"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("upstream shop.orders will rebuild in this plan"),
        "{}",
        text.stdout
    );
    let unknown = run(ws.path(), &["--json", "explain", "shop.ordrs"]);
    assert_eq!(unknown.code, 2);
    assert_eq!(
        unknown.json()["diagnostics"][0]["suggestions"][0],
        "shop.orders"
    );
}

/// The columns of `model`'s changes that `plan <args>` (over compile errors) reports.
fn removed_columns(root: &Path, args: &[&str], model: &str) -> Vec<String> {
    let out = run(root, args);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    out.json()["schema_changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["model"] == model)
        .flat_map(|s| s["changes"].as_array().unwrap().clone())
        .filter(|c| c["kind"] == "removed")
        .map(|c| c["column"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_plan_over_compile_errors_compares_with_the_environment_ref_names() {
    let ws = workspace();
    let root = ws.path();
    assert_eq!(
        run(root, &["ref", "create", "dev", "--from", "main"]).code,
        0
    );
    // Only `dev` records orders with `extra`.
    let with_extra = ORDERS_V1.replace(", legacy\n", ", legacy, 'e' as extra\n");
    edit(root, "transforms/shop/orders.sql", &with_extra);
    let built = run(root, &["run", "--ref", "dev"]);
    assert_eq!(built.code, 0, "{}\n{}", built.stdout, built.stderr);
    // `extra` goes again while a reader still names it: a compile error.
    edit(root, "transforms/shop/orders.sql", ORDERS_V1);
    edit(
        root,
        "transforms/shop/report.sql",
        "-- @table\nselect id, legacy, extra\nfrom shop.orders\n",
    );
    let dev = ["--json", "plan", "--ref", "dev"];
    assert_eq!(removed_columns(root, &dev, "shop.orders"), ["extra"]);
    let main = ["--json", "plan"];
    assert!(removed_columns(root, &main, "shop.orders").is_empty());
}

/// Issue 38: over compile errors a `--ref` that cannot be bound shows nothing recorded, never
/// main's records (which are not what `--ref` asked about).
#[test]
fn a_plan_over_compile_errors_with_an_unknown_ref_compares_with_nothing() {
    let ws = workspace();
    let root = ws.path();
    let with_extra = ORDERS_V1.replace(", legacy\n", ", legacy, 'e' as extra\n");
    edit(root, "transforms/shop/orders.sql", &with_extra);
    let built = run(root, &["run"]);
    assert_eq!(built.code, 0, "{}\n{}", built.stdout, built.stderr);
    edit(root, "transforms/shop/orders.sql", ORDERS_V1);
    edit(
        root,
        "transforms/shop/report.sql",
        "-- @table\nselect id, legacy, extra\nfrom shop.orders\n",
    );
    let main = ["--json", "plan"];
    assert_eq!(removed_columns(root, &main, "shop.orders"), ["extra"]);
    let unknown = ["--json", "plan", "--ref", "nosuch"];
    assert!(removed_columns(root, &unknown, "shop.orders").is_empty());
}

/// Issue 38: a `run` over compile errors judges what they block on the plan the run makes, in
/// the environment `--ref` names: in `dev`, which holds the edited `shop.orders`, `changed`
/// selects nothing that can build, so the run is refused as for a workspace that does not
/// compile; in main the edited `shop.orders` and its view are changed and run.
#[test]
fn a_run_over_compile_errors_selects_by_the_state_of_the_environment_ref_names() {
    let ws = workspace();
    let root = ws.path();
    assert_eq!(
        run(root, &["ref", "create", "dev", "--from", "main"]).code,
        0
    );
    let with_extra = ORDERS_V1.replace(", legacy\n", ", legacy, 'e' as extra\n");
    edit(root, "transforms/shop/orders.sql", &with_extra);
    let built = run(root, &["run", "--ref", "dev"]);
    assert_eq!(built.code, 0, "{}\n{}", built.stdout, built.stderr);
    edit(
        root,
        "transforms/shop/report.sql",
        "-- @table\nselect id, legacy, missing\nfrom shop.orders\n",
    );
    let refused = run(root, &["--json", "run", "--ref", "dev", "-s", "changed"]);
    assert_eq!(refused.code, 2, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused.json().get("run_id").is_none(),
        "nothing runs: {}",
        refused.stdout
    );
    let part = run(root, &["--json", "run", "-s", "changed"]);
    assert_eq!(part.code, 0, "{}\n{}", part.stdout, part.stderr);
    assert!(part.json().get("run_id").is_some(), "{}", part.stdout);
}
