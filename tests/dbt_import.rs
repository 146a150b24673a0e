//! Issue 43: `import dbt` on two public dbt projects: dbt Labs' jaffle_shop_duckdb
//! (testdata/dbt/jaffle_shop_duckdb, Apache-2.0, its LICENSE beside it) and SQLMesh's
//! sushi_dbt (Apache-2.0, from the sqlmesh source distribution scripts/test.sh unpacks). What
//! cannot be converted is asserted exactly; the imported workspace `check`s and runs on the
//! embedded engine; and every imported model's rows equal what dbt-duckdb builds from the
//! same project (dbt-core 1.10 and dbt-duckdb in
//! the dbt environment scripts/test.sh installs; tests/python/dbt_duckdb_rows.py).

mod common;

use common::{copy_dir, run, testdata};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn dbt_python() -> PathBuf {
    common::pinned_python("PHLO_DBT_PYTHON", "dbt-venv")
}

fn python(program: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&common::python_stdout(program, args)).unwrap()
}

fn script(name: &str) -> String {
    common::python_script(name).to_string_lossy().into_owned()
}

/// Rows as a sorted multiset of their JSON texts, floats rounded to 9 significant digits
/// (the engines sum doubles in different orders).
fn canonical(rows: &Value) -> Vec<String> {
    let round = |v: &Value| match v.as_f64() {
        Some(f) if v.is_f64() => json!(format!("{f:.9e}")),
        Some(f) => json!(format!("{:.9e}", f)),
        None => v.clone(),
    };
    let mut out: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let r: Vec<Value> = r.as_array().unwrap().iter().map(round).collect();
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    out.sort();
    out
}

/// `import dbt <project> --out <dir>/ws --json`: the new workspace and the report.
fn import(project: &Path, dir: &Path) -> (PathBuf, Value) {
    let ws = dir.join("ws");
    let out = run(
        dir,
        &[
            "import",
            "dbt",
            project.to_str().unwrap(),
            "--out",
            ws.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    // Each thing left out is a coded warning with its file and line.
    let (left, diagnostics) = (
        report["unconverted"].as_array().unwrap(),
        report["diagnostics"].as_array().unwrap(),
    );
    assert_eq!(diagnostics.len(), left.len());
    for (d, u) in diagnostics.iter().zip(left) {
        assert!(
            d["code"] == "P017" && d["severity"] == "warning" && d["help"].is_string(),
            "{d}"
        );
        assert_eq!((&d["file"], &d["line"]), (&u["file"], &u["line"]));
    }
    (ws, report)
}

/// The report's unconverted list, one `file:line left_out: reason` a line.
fn unconverted(report: &Value) -> Vec<String> {
    report["unconverted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            format!(
                "{}:{} {}: {}",
                u["file"].as_str().unwrap(),
                u["line"],
                u["left_out"].as_str().unwrap(),
                u["reason"].as_str().unwrap()
            )
        })
        .collect()
}

/// The imported models, as (name, materialization).
fn models(report: &Value) -> Vec<(String, String)> {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().into(),
                m["materialization"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// `check` with no diagnostic, then `run`: its counts and its tests, every test passed.
fn checks_and_runs(ws: &Path) -> (Value, Vec<Value>) {
    let check = run(ws, &["check", "--json"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert_eq!(check.json()["diagnostics"], json!([]));
    let first = run(ws, &["run", "--json"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let tests = first.json()["tests"].as_array().unwrap().clone();
    assert!(tests.iter().all(|t| t["status"] == "passed"), "{tests:?}");
    (first.json()["counts"].clone(), tests)
}

/// Every imported model's rows (its views built as tables here, so both sides can be read)
/// equal those dbt-duckdb builds from a copy of `project` (with the profile's `target`, or
/// its default).
fn assert_rows_equal_dbt_duckdb(
    dir: &Path,
    project: &Path,
    ws: &Path,
    report: &Value,
    target: Option<&str>,
) {
    let imported = report["models"].as_array().unwrap();
    assert!(!imported.is_empty(), "no model to compare");
    for m in imported {
        let path = ws.join(m["path"].as_str().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("-- @view\n", "-- @table\n")).unwrap();
    }
    let second = run(ws, &["run", "--json"]);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    let dbt_copy = dir.join("dbt");
    copy_dir(project, &dbt_copy);
    let mut args = vec![
        script("dbt_duckdb_rows.py"),
        dbt_copy.to_string_lossy().into_owned(),
    ];
    if let Some(t) = target {
        args.extend(["--target".to_string(), t.to_string()]);
    }
    let dbt_names: Vec<String> = imported
        .iter()
        .map(|m| m["dbt_name"].as_str().unwrap().to_string())
        .collect();
    args.extend(dbt_names.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let dbt = python(&dbt_python(), &args);
    let mut table_args = vec![script("table_rows.py")];
    let tables: Vec<String> = imported
        .iter()
        .map(|m| {
            ws.join(".phlo/warehouse")
                .join(m["name"].as_str().unwrap())
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    table_args.extend(tables.iter().cloned());
    let table_args: Vec<&str> = table_args.iter().map(String::as_str).collect();
    let ours = python(Path::new("python3"), &table_args);
    for (dbt_name, table) in dbt_names.iter().zip(&tables) {
        let (theirs, mine) = (&dbt[dbt_name], &ours[table]);
        assert_eq!(mine["columns"], theirs["columns"], "{dbt_name}'s columns");
        assert_eq!(
            theirs["rows"].as_array().unwrap().len(),
            mine["rows"].as_array().unwrap().len(),
            "{dbt_name}'s row count"
        );
        assert!(
            !mine["rows"].as_array().unwrap().is_empty(),
            "{dbt_name} has no rows"
        );
        assert_eq!(
            canonical(&mine["rows"]),
            canonical(&theirs["rows"]),
            "{dbt_name}'s rows"
        );
    }
}

#[test]
fn jaffle_shop_imports_checks_runs_and_equals_dbt_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let project = testdata("dbt/jaffle_shop_duckdb");
    let (ws, report) = import(&project, dir.path());
    assert_eq!(
        unconverted(&report),
        [
            "models/orders.sql:1 model orders: Jinja statement `{% set payment_methods = ['credit_card', 'coupon', 'bank_transfer', 'gift_card']…`",
            "models/orders.sql:20 model orders: Jinja statement `{% for payment_method in payment_methods -%}`",
            "models/orders.sql:21 model orders: Jinja expression `{{ payment_method }}`",
            "models/orders.sql:21 model orders: Jinja expression `{{ payment_method }}`",
            "models/orders.sql:40 model orders: Jinja statement `{% for payment_method in payment_methods -%}`",
            "models/orders.sql:42 model orders: Jinja expression `{{ payment_method }}`",
            "models/schema.yml:29 description of customers.total_order_amount: the model's SQL never names the column `total_order_amount`",
        ]
    );
    assert_eq!(
        models(&report),
        pairs(&[
            ("jaffle_shop.customers", "table"),
            ("jaffle_shop.staging.stg_customers", "view"),
            ("jaffle_shop.staging.stg_orders", "view"),
            ("jaffle_shop.staging.stg_payments", "view"),
        ])
    );
    assert_eq!(
        report["sources"],
        json!([
            "seeds.raw_customers",
            "seeds.raw_orders",
            "seeds.raw_payments"
        ])
    );
    assert_eq!(
        report["tests"],
        json!([
            "tests/accepted_values_stg_orders_status.sql",
            "tests/accepted_values_stg_payments_payment_method.sql",
            "tests/unique_customers_customer_id.sql",
            "tests/unique_stg_customers_customer_id.sql",
            "tests/unique_stg_orders_order_id.sql",
            "tests/unique_stg_payments_payment_id.sql",
        ])
    );
    let toml = std::fs::read_to_string(ws.join("phlo.toml")).unwrap();
    assert!(toml.contains("dialect = \"duckdb\""), "{toml}");
    assert!(toml.contains("[model.\"jaffle_shop.customers\".columns.customer_id]\ndescription = \"This is a unique identifier for a customer\""), "{toml}");

    // It checks, with no warning, and runs: 4 models, 4 not-null and 6 data tests.
    let (counts, tests) = checks_and_runs(&ws);
    assert_eq!(counts["passed"], 4);
    assert_eq!(tests.len(), 10);
    assert_rows_equal_dbt_duckdb(dir.path(), &project, &ws, &report, None);
}

/// SQLMesh's dbt version of its sushi example (`examples/sushi_dbt` of the sqlmesh 0.236.4
/// source distribution, Apache-2.0): scripts/test.sh unpacks it from PyPI into the cache
/// (`PHLO_DBT_SUSHI`); this repository keeps none of it.
fn sushi_dbt() -> PathBuf {
    let dir = std::env::var_os("PHLO_DBT_SUSHI")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME is set");
            Path::new(&home).join(".cache/phlo-transform/dbt-projects/sqlmesh-0.236.4/sushi_dbt")
        });
    assert!(
        dir.join("dbt_project.yml").is_file(),
        "{} has no dbt_project.yml (run scripts/test.sh --setup-only)",
        dir.display()
    );
    dir
}

#[test]
fn sqlmesh_sushi_dbt_imports_checks_runs_and_equals_dbt_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let project = sushi_dbt();
    let (ws, report) = import(&project, dir.path());
    // Written for SQLMesh's dbt loader as much as for dbt: its incremental models read
    // SQLMesh's `sqlmesh_incremental`, `start_ds` and `end_ds` (undefined in dbt) and use
    // SQLMesh's `incremental_by_time_range` strategy; `+start` is SQLMesh's too (no dbt
    // materialization reads it, so it is listed and the models are imported without it).
    // Their `{% if is_incremental() %}` filters and `{{ var('top_waiters:limit') }}` convert.
    assert_eq!(
        unconverted(&report),
        [
            "dbt_project.yml:20 setting `start: 'Jan 1 2022'`: not a configuration of dbt's materializations: the models it configures are imported without it",
            "macros/incremental.sql:1 macro incremental_by_time: macros are not imported",
            "macros/incremental.sql:13 macro incremental_dates_by_time_type: macros are not imported",
            "macros/log_value.sql:1 macro log_value: macros are not imported",
            "models/customer_revenue_by_day.sql:22 model customer_revenue_by_day: Jinja statement `{% if sqlmesh_incremental is defined %}`",
            "models/customer_revenue_by_day.sql:24 model customer_revenue_by_day: Jinja expression `{{ end_ds }}`",
            "models/customer_revenue_by_day.sql:24 model customer_revenue_by_day: Jinja expression `{{ start_ds }}`",
            "models/customer_revenue_by_day.sql:41 model customer_revenue_by_day: Jinja statement `{% if sqlmesh_incremental is defined %}`",
            "models/customer_revenue_by_day.sql:43 model customer_revenue_by_day: Jinja expression `{{ end_ds }}`",
            "models/customer_revenue_by_day.sql:43 model customer_revenue_by_day: Jinja expression `{{ start_ds }}`",
            "models/top_waiters.sql:11 model top_waiters: Jinja expression `{{ ref('waiter_revenue_by_day', version=1) }}`",
            "models/top_waiters.sql:16 model top_waiters: Jinja expression `{{ ref('waiter_revenue_by_day', v=1) }}`",
            "models/waiter_as_customer_by_day.sql:1 model waiter_as_customer_by_day: setting `incremental_strategy: 'incremental_by_time_range'`",
            "models/waiter_revenue_by_day.sql:23 model waiter_revenue_by_day: Jinja statement `{% if sqlmesh_incremental is defined %}`",
            "models/waiter_revenue_by_day.sql:25 model waiter_revenue_by_day: Jinja expression `{{ end_ds }}`",
            "models/waiter_revenue_by_day.sql:25 model waiter_revenue_by_day: Jinja expression `{{ start_ds }}`",
            "models/waiter_revenue_by_day_v1.sql:23 model waiter_revenue_by_day_v1: Jinja statement `{% if sqlmesh_incremental is defined %}`",
            "models/waiter_revenue_by_day_v1.sql:25 model waiter_revenue_by_day_v1: Jinja expression `{{ end_ds }}`",
            "models/waiter_revenue_by_day_v1.sql:25 model waiter_revenue_by_day_v1: Jinja expression `{{ start_ds }}`",
            "models/waiters.sql:11 model waiters: Jinja expression `{{ incremental_by_time('ds', 'ds') }}`",
            "tests/generic/greater_than_amount.sql:1 test greater_than_amount: Jinja statement `{%- test greater_than_amount(model, column_name, amount) -%}`",
            "tests/generic/less_than_amount.sql:1 test less_than_amount: Jinja statement `{% test less_than_amount(model, column_name, amount) %}`",
        ]
    );
    assert_eq!(models(&report), pairs(&[("sushi.customers", "table")]));
    assert_eq!(
        report["sources"],
        json!([
            "seeds.items",
            "seeds.order_items",
            "seeds.orders",
            "seeds.waiter_names"
        ])
    );
    // The singular test, and the seeds' tests of seeds/properties.yml.
    assert_eq!(
        report["tests"],
        json!([
            "tests/assert_item_price_above_zero.sql",
            "tests/not_null_items_id.sql",
            "tests/not_null_order_items_id.sql",
            "tests/not_null_orders_id.sql",
            "tests/not_null_waiter_names_id.sql",
            "tests/relationships_order_items_item_id.sql",
            "tests/relationships_order_items_order_id.sql",
        ])
    );
    let relationship =
        std::fs::read_to_string(ws.join("tests/relationships_order_items_order_id.sql")).unwrap();
    assert!(
        relationship.contains("from seeds.order_items as child\nleft join seeds.orders as parent on child.order_id = parent.id"),
        "{relationship}"
    );
    let toml = std::fs::read_to_string(ws.join("phlo.toml")).unwrap();
    assert!(toml.contains("dialect = \"duckdb\""), "{toml}");
    assert!(
        toml.contains(
            "[model.\"sushi.customers\".columns.customer_id]\ndescription = \"Customer id\""
        ),
        "{toml}"
    );
    // It checks and runs: one model and its not-null test. The seeds' data tests read no
    // model, and `run` and `test` plan only the tests of the models they act on.
    let (counts, tests) = checks_and_runs(&ws);
    assert_eq!(counts["passed"], 1);
    let names: Vec<&str> = tests.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["sushi.customers.not_null.customer_id"]);
    // The profile's default target is in memory; its `duckdb` target writes local.duckdb.
    assert_rows_equal_dbt_duckdb(dir.path(), &project, &ws, &report, Some("duckdb"));
}

#[test]
fn a_folder_without_dbt_project_yml_and_a_non_empty_out_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[
            "import",
            "dbt",
            dir.path().to_str().unwrap(),
            "--out",
            "x",
            "--json",
        ],
    );
    assert_eq!(out.code, 2);
    assert_eq!(out.json()["diagnostics"][0]["code"], "P016");
    let project = testdata("dbt/jaffle_shop_duckdb");
    std::fs::write(dir.path().join("mine.txt"), "kept").unwrap();
    let out = run(
        dir.path(),
        &[
            "import",
            "dbt",
            project.to_str().unwrap(),
            "--out",
            dir.path().to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(out.code, 2);
    assert_eq!(out.json()["diagnostics"][0]["code"], "P018");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
