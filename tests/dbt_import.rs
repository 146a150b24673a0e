//! Issue 43: `import dbt` on dbt Labs' jaffle_shop_duckdb (testdata/dbt/jaffle_shop_duckdb,
//! Apache-2.0, its LICENSE beside it). What cannot be converted is asserted exactly; the
//! imported workspace `check`s and runs on the embedded engine; and every imported model's
//! rows equal what dbt-duckdb builds from the same project (dbt-core 1.10 and dbt-duckdb in
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

#[test]
fn jaffle_shop_imports_checks_runs_and_equals_dbt_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let project = testdata("dbt/jaffle_shop_duckdb");
    let ws = dir.path().join("ws");
    let out = run(
        dir.path(),
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
    let unconverted: Vec<String> = report["unconverted"]
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
        .collect();
    assert_eq!(
        unconverted,
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
    // Each is a coded warning with its file and line.
    let diagnostics = report["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), unconverted.len());
    assert!(diagnostics
        .iter()
        .all(|d| d["code"] == "P017" && d["severity"] == "warning" && d["help"].is_string()));
    assert_eq!(
        (
            diagnostics[0]["file"].as_str(),
            diagnostics[0]["line"].as_u64()
        ),
        (Some("models/orders.sql"), Some(1))
    );

    let models: Vec<(String, String)> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().into(),
                m["materialization"].as_str().unwrap().into(),
            )
        })
        .collect();
    let names = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        models,
        names(&[
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
    let check = run(&ws, &["check", "--json"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert_eq!(check.json()["diagnostics"], json!([]));
    let first = run(&ws, &["run", "--json"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let counts = &first.json()["counts"];
    assert_eq!(counts["passed"], 4);
    let tests = first.json()["tests"].as_array().unwrap().clone();
    assert_eq!(tests.len(), 10);
    assert!(tests.iter().all(|t| t["status"] == "passed"), "{tests:?}");

    // dbt-duckdb's rows: the views built as tables here so both sides can be read.
    for m in report["models"].as_array().unwrap() {
        let path = ws.join(m["path"].as_str().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("-- @view\n", "-- @table\n")).unwrap();
    }
    let second = run(&ws, &["run", "--json"]);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    let dbt_copy = dir.path().join("dbt");
    copy_dir(&project, &dbt_copy);
    let mut args = vec![
        script("dbt_duckdb_rows.py"),
        dbt_copy.to_string_lossy().into_owned(),
    ];
    let dbt_names: Vec<String> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["dbt_name"].as_str().unwrap().to_string())
        .collect();
    args.extend(dbt_names.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let dbt = python(&dbt_python(), &args);
    let mut table_args = vec![script("table_rows.py")];
    let tables: Vec<String> = report["models"]
        .as_array()
        .unwrap()
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
        assert_eq!(
            canonical(&mine["rows"]),
            canonical(&theirs["rows"]),
            "{dbt_name}'s rows"
        );
    }
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
