//! Incremental models on the local engine (SPEC §26–29) and Delta tables as exact sinks, on
//! real Delta tables read back by an independent reader: delta-rs's Python bindings
//! (`tests/python/inspect_delta.py`, needs `python3 -m pip install deltalake pyarrow`).
//!
//! Every incremental model has a `@table` twin with the same query; after new and changed
//! source rows arrive, the incremental table must hold exactly the twin's rows.

mod common;

use common::{run, write_file};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

fn inspect(ws: &Path, model: &str, extra: &[&str]) -> Value {
    let dir = ws.join(".phlo/warehouse").join(model);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/inspect_delta.py");
    let mut args = vec![
        script.to_string_lossy().to_string(),
        dir.to_string_lossy().to_string(),
    ];
    if extra.is_empty() {
        args.push(format!("phlo-transform:{model}"));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new("python3")
        .args(&args)
        .output()
        .expect("python3 runs (install: python3 -m pip install deltalake pyarrow)");
    assert!(
        out.status.success(),
        "inspect_delta.py {args:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

const ORDERS_1: &str = "id,day,amount,ts\n1,2024-01-01,10,100\n2,2024-01-01,20,101\n3,2024-01-02,30,102\n4,2024-01-02,40,103\n";
/// Order 2 changed (amount and ts), orders 5 and 6 new (one on a new day).
const ORDERS_2: &str = "id,day,amount,ts\n1,2024-01-01,10,100\n2,2024-01-01,25,110\n3,2024-01-02,30,102\n4,2024-01-02,40,103\n5,2024-01-02,50,111\n6,2024-01-03,60,112\n";
const EVENTS_1: &str = "id,kind,amount\n1,click,1\n2,view,2\n";
const EVENTS_2: &str = "id,kind,amount\n1,click,1\n2,view,2\n3,click,3\n4,buy,4\n";

const SELECT_ORDERS: &str = "select id, day, amount, ts from shop.orders\n";
const SELECT_DAILY: &str =
    "select day, count(*) as n, sum(amount) as total from shop.orders group by day\n";
const SELECT_EVENTS: &str = "select id, kind, amount from shop.events where amount > 0\n";

/// (incremental model, its `@table` twin)
const PAIRS: &[(&str, &str)] = &[
    ("shop.events_append", "shop.events_full"),
    ("shop.orders_key", "shop.orders_full"),
    ("shop.daily_partition", "shop.daily_full"),
    ("shop.orders_window", "shop.orders_full"),
];

fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    write_file(
        ws,
        "phlo.toml",
        "[transform]\n\n[transform.maintenance]\ncompact_every = 2\nvacuum_retention = \"1d\"\ncheckpoint_interval = 3\n",
    );
    write_file(ws, "sources/shop/orders.csv", ORDERS_1);
    write_file(ws, "sources/shop/events.csv", EVENTS_1);
    let model = |name: &str, header: &str, sql: &str| {
        write_file(
            ws,
            &format!("transforms/shop/{name}.sql"),
            &format!("{header}{sql}"),
        );
    };
    model("events_append", "-- @incremental append\n", SELECT_EVENTS);
    model("events_full", "-- @table\n", SELECT_EVENTS);
    model("orders_key", "-- @incremental key=id\n", SELECT_ORDERS);
    model("orders_full", "-- @table\n", SELECT_ORDERS);
    model(
        "daily_partition",
        "-- @incremental partition=day\n",
        SELECT_DAILY,
    );
    model("daily_full", "-- @table\n", SELECT_DAILY);
    model(
        "orders_window",
        "-- @incremental window=ts\n-- @key id\n",
        SELECT_ORDERS,
    );
    tmp
}

fn run_json(ws: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = run(ws, &all);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.json()
}

fn model<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

fn write_of(report: &Value, name: &str) -> String {
    model(report, name)["write"]
        .as_str()
        .unwrap_or("-")
        .to_string()
}

fn assert_equal_to_twins(ws: &Path) {
    for (incremental, full) in PAIRS {
        let a = inspect(ws, incremental, &[]);
        let b = inspect(ws, full, &[]);
        assert_eq!(a["rows"], b["rows"], "{incremental} differs from {full}");
    }
}

#[test]
fn incremental_tables_equal_full_rebuilds_and_write_each_state_once() {
    let tmp = workspace();
    let ws = tmp.path();
    let first = run_json(ws, &["run"]);
    for (incremental, _) in PAIRS {
        assert_eq!(
            write_of(&first, incremental),
            "full",
            "first build: {first}"
        );
    }
    assert_equal_to_twins(ws);

    write_file(ws, "sources/shop/orders.csv", ORDERS_2);
    write_file(ws, "sources/shop/events.csv", EVENTS_2);
    let second = run_json(ws, &["run"]);
    assert_eq!(write_of(&second, "shop.events_append"), "append");
    assert_eq!(
        write_of(&second, "shop.orders_key"),
        "merge (2 inserted, 1 updated)"
    );
    assert_eq!(
        write_of(&second, "shop.orders_window"),
        "merge (2 inserted, 1 updated)"
    );
    // Day 1 (order 2 changed), day 2 (order 5), day 3 (new).
    assert_eq!(
        write_of(&second, "shop.daily_partition"),
        "replace 3 partition(s)"
    );
    assert_equal_to_twins(ws);

    // The independent reader sees CDF, constraints, NOT NULL and the transactions.
    let key = inspect(ws, "shop.orders_key", &[]);
    assert_eq!(key["configuration"]["delta.enableChangeDataFeed"], "true");
    assert_eq!(key["configuration"]["phlo.strategy"], "key=id");
    assert_eq!(key["configuration"]["delta.checkpointInterval"], "3");
    assert_eq!(key["nullable"]["id"], false, "{key}");
    assert_eq!(key["nullable"]["amount"], true, "{key}");
    assert!(key["txn_version"].as_i64().unwrap() > 0, "{key}");
    assert!(key["cdf_rows"].as_u64().unwrap() >= 6, "{key}");
    let events = inspect(ws, "shop.events_append", &[]);
    assert_eq!(
        events["configuration"]["delta.constraints.phlo_check_1"], "amount > 0",
        "{events}"
    );
    let daily = inspect(ws, "shop.daily_partition", &[]);
    assert_eq!(daily["partition_columns"], json!(["day"]));
    // Two data writes each: compacted once (the vacuum keeps a day of versions, so the
    // Change Data Feed above still reads every version).
    let ops = events["operations"].as_array().unwrap();
    assert!(ops.contains(&json!("OPTIMIZE")), "{ops:?}");

    // The same state again, with its run record lost: no commit is added.
    let before: Vec<Value> = PAIRS
        .iter()
        .map(|(m, _)| inspect(ws, m, &[])["version"].clone())
        .collect();
    std::fs::remove_file(ws.join(".phlo/transform/state.db")).unwrap();
    let again = run_json(ws, &["run"]);
    for (m, _) in PAIRS {
        assert_eq!(model(&again, m)["reused_commit"], true, "{again}");
    }
    let after: Vec<Value> = PAIRS
        .iter()
        .map(|(m, _)| inspect(ws, m, &[])["version"].clone())
        .collect();
    assert_eq!(before, after);
    assert_equal_to_twins(ws);
}

#[test]
fn a_key_change_plans_a_full_rebuild_and_foreign_constraints_are_refused() {
    let tmp = workspace();
    let ws = tmp.path();
    run_json(ws, &["run"]);
    write_file(
        ws,
        "transforms/shop/orders_key.sql",
        &format!("-- @incremental key=id,day\n{SELECT_ORDERS}"),
    );
    let plan = run_json(ws, &["plan"]);
    let planned = model(&plan, "shop.orders_key");
    assert_eq!(
        planned["reasons"][0]["kind"], "incremental_change",
        "{planned}"
    );
    assert_eq!(planned["full_rebuild"], true);
    let out = run(ws, &["plan"]);
    assert!(out.stdout.contains("FULL REBUILD"), "{}", out.stdout);
    let report = run_json(ws, &["run"]);
    assert_eq!(write_of(&report, "shop.orders_key"), "full");
    let table = inspect(ws, "shop.orders_key", &[]);
    assert_eq!(table["configuration"]["phlo.strategy"], "key=id,day");
    assert_eq!(table["nullable"]["day"], false);

    // Another writer adds a CHECK constraint the model does not guarantee.
    inspect(
        ws,
        "shop.orders_key",
        &["add-constraint", "positive", "amount > -1000"],
    );
    write_file(ws, "sources/shop/orders.csv", ORDERS_2);
    let out = run(ws, &["run", "--json"]);
    assert_ne!(out.code, 0);
    let failed = model(&out.json(), "shop.orders_key")["error"].clone();
    assert_eq!(failed["code"], "A005", "{failed}");
    // An explicit full refresh replaces the table, constraints included.
    let refreshed = run_json(ws, &["run", "--full-refresh"]);
    assert_eq!(write_of(&refreshed, "shop.orders_key"), "full");
    let table = inspect(ws, "shop.orders_key", &[]);
    assert!(table["configuration"]
        .get("delta.constraints.positive")
        .is_none());
    assert_equal_to_twins(ws);
}
