//! Issue 18 on the local engine: run-time SQL errors classified by cause, and table
//! guarantees that follow the plan's real nullability.

mod common;

use common::{run, write_file};

fn model<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

#[test]
fn a_division_by_zero_is_an_sql_error_of_the_model_and_is_never_retried() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(root, "transforms/x/a.sql", "-- @table\nselect 1 as x\n");
    write_file(
        root,
        "transforms/x/ratio.sql",
        "-- @table\nselect x, 10 / (x - 1) as r\nfrom x.a\n",
    );
    let out = run(root, &["run", "--retries", "2", "--json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = out.json();
    let ratio = model(&report, "x.ratio");
    let error = &ratio["error"];
    assert_eq!(
        (
            error["code"].as_str(),
            error["category"].as_str(),
            error["retryable"].as_bool(),
            error["file"].as_str(),
            ratio["attempts"].as_u64(),
        ),
        (
            Some("E006"),
            Some("sql"),
            Some(false),
            Some("transforms/x/ratio.sql"),
            Some(1)
        ),
        "{ratio}"
    );
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("division by zero"), "{message}");
    assert!(!message.contains("Arrow schema"), "{message}");
    let human = run(root, &["run"]);
    assert!(
        human
            .stdout
            .contains("E006: division by zero (in transforms/x/ratio.sql)"),
        "{}",
        human.stdout
    );
}

#[test]
fn a_failed_cast_and_a_not_null_violation_are_sql_errors_with_their_own_codes() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(
        root,
        "transforms/x/cast.sql",
        "-- @table\nselect cast('seven' as int) as n\n",
    );
    write_file(
        root,
        "transforms/x/keyed.sql",
        "-- @table\n-- @key id\nselect cast(null as int) as id\n",
    );
    let report = run(root, &["run", "--json"]).json();
    let codes: Vec<(&str, &str)> = ["x.cast", "x.keyed"]
        .iter()
        .map(|m| {
            let e = &model(&report, m)["error"];
            (e["code"].as_str().unwrap(), e["category"].as_str().unwrap())
        })
        .collect();
    assert_eq!(codes, [("E006", "sql"), ("E007", "sql")], "{report}");
}

/// ROLLUP, CUBE and GROUPING SETS over NOT NULL columns (an upstream `@key`) and a WHERE
/// clause proving them non-null: the subtotal rows are null, so the table must not be NOT NULL.
#[test]
fn grouping_sets_over_not_null_columns_build() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(
        root,
        "transforms/x/sales.sql",
        "-- @table\n-- @key region,product\nselect * from (values ('eu', 'tea', 3), ('eu', 'oat', 4), ('us', 'tea', 5)) as t(region, product, amount)\n",
    );
    for (name, grouping) in [
        ("rolled", "rollup (region, product)"),
        ("cubed", "cube (region, product)"),
        ("sets", "grouping sets ((region, product), (region), ())"),
    ] {
        write_file(
            root,
            &format!("transforms/x/{name}.sql"),
            &format!(
                "-- @table\nselect region, product, sum(amount) as total\nfrom x.sales\nwhere region is not null and product <> 'none'\ngroup by {grouping}\n"
            ),
        );
    }
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let report = out.json();
    let rows: Vec<(String, u64)> = ["x.rolled", "x.cubed", "x.sets"]
        .iter()
        .map(|m| (m.to_string(), model(&report, m)["rows"].as_u64().unwrap()))
        .collect();
    // rollup: 3 pairs + 2 regions + total; cube: + 2 products; sets: 3 + 2 + 1.
    assert_eq!(
        rows,
        [
            ("x.rolled".to_string(), 6),
            ("x.cubed".to_string(), 8),
            ("x.sets".to_string(), 6)
        ]
    );
    // The inferred schema says so too.
    let schema = run(root, &["inspect", "x.rolled", "--json"]).json()["schema"].clone();
    let nullable: Vec<bool> = schema["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["nullable"].as_bool().unwrap())
        .collect();
    assert_eq!(nullable[..2], [true, true], "{schema}");
}
