//! The issue-13 scenarios every SQL warehouse adapter passes, written once over a
//! [`Warehouse`]: TPC-H as `@table` models equal to the local engine, SPEC §64 partial
//! failure, an incremental strategy equal to a full rebuild, and kill -9 + `run --resume`.
//! tests/postgres_adapter.rs and tests/duckdb_adapter.rs run them on the real engines and add
//! what is particular to each.

#![allow(dead_code)]

use crate::common::{by_name, run, workspace, write_file, Output};
use crate::interrupt::{kill_after, runtime, MODELS};
use crate::rows::{self, Row};
use crate::tpch_data;
use crate::types;
use std::path::Path;

/// A real warehouse a test workspace builds into, reached by the engine's own client.
pub trait Warehouse {
    /// The `[adapter]` section of `phlo.toml` pointing a workspace at it.
    fn adapter_toml(&self) -> String;
    /// Runs one statement.
    fn execute(&self, sql: &str);
    /// The first column of the first row, as text.
    fn scalar(&self, sql: &str) -> Option<String>;
    /// The rows of each `schema.table`, in canonical form ([`rows`]).
    fn rows(&self, tables: &[String]) -> Vec<Vec<Row>>;
    /// A query reading the comment of column `column` of table `schema.table`.
    fn column_comment(&self, schema: &str, table: &str, column: &str) -> String;
    /// The dialect the adapter speaks: the local engine's `[transform] dialect` when it
    /// stands in for this warehouse.
    fn dialect(&self) -> &'static str;
    /// `name:type` of each column of each `schema.table` as the engine's catalog reports
    /// them, types canonical ([`types::canonical`]).
    fn column_types(&self, tables: &[String]) -> Vec<Vec<String>>;
    /// A model written for the local engine, spelled for this warehouse where its SQL names
    /// something differently (PostgreSQL has no `DOUBLE`): what a user targeting it writes.
    fn spell(&self, sql: &str) -> String {
        sql.to_string()
    }
    /// The `schema.table` model `name` is built as: its first segment the schema, the rest
    /// joined with `__` (no `default_schema`).
    fn relation(&self, name: &str) -> String {
        let (schema, rest) = name.split_once('.').unwrap();
        format!("{schema}.{}", rest.replace('.', "__"))
    }
}

/// The JSON report of a command that must succeed. On failure the message leads with what
/// failed (each model not passed with its error, the command's diagnostics, stderr) before
/// the whole report: CI shows only part of a long message.
pub fn ok(out: &Output) -> serde_json::Value {
    if out.code != 0 {
        let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_default();
        let failed: Vec<String> = report["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["status"] != "passed")
            .map(|m| format!("{} {}: {}", m["name"], m["status"], m["error"]))
            .collect();
        panic!(
            "exit {}\nmodels not passed:\n{}\ndiagnostics: {}\nstderr:\n{}\nstdout:\n{}",
            out.code,
            failed.join("\n"),
            report["diagnostics"],
            out.stderr,
            out.stdout
        );
    }
    out.json()
}

pub fn append(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    let mut s = std::fs::read_to_string(&path).unwrap_or_default();
    s.push_str(text);
    std::fs::write(path, s).unwrap();
}

/// Rows of the local engine's Delta tables, read by Python `deltalake`.
fn delta_rows(dirs: &[std::path::PathBuf]) -> Vec<Vec<Row>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/table_rows.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .args(dirs)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tables: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    dirs.iter()
        .map(|d| rows::from_json_rows(&tables[d.to_str().unwrap()]["rows"]))
        .collect()
}

/// The 22 TPC-H queries (testdata/tpch) as `@table` models on the warehouse give the local
/// engine's rows over the same generated data, the local engine running in the warehouse's
/// dialect (`[transform] dialect`); the column types `check` reports in that dialect are the
/// ones the warehouse's catalog reports for the built tables except exactly `known`
/// (`model.column: local <type>, engine <type>`, listed with their reasons in
/// docs/dialects.md), and `check` reports the same types with the adapter configured. A
/// second run skips them all. Returns the warehouse workspace for engine-specific checks.
pub fn tpch_equals_the_local_engine(
    warehouse: &dyn Warehouse,
    known: &[&str],
) -> tempfile::TempDir {
    let tables = tpch_data::generate(200, 1500);
    // The local engine reads the same data as Parquet files with the warehouse's types.
    let local = workspace("tpch");
    tpch_data::write_parquet(&tables, &local.path().join("data"));
    let mut toml = format!(
        "\n[transform]\ndefault_materialization = \"table\"\ndialect = \"{}\"\n",
        warehouse.dialect()
    );
    for t in &tables {
        toml.push_str(&format!(
            "\n[source.\"tpch.{0}\"]\nlocation = \"data/{0}.parquet\"\n",
            t.name
        ));
    }
    append(local.path(), "phlo.toml", &toml);
    let report = ok(&run(local.path(), &["run", "--json"]));
    assert!(
        by_name(&report, "status").values().all(|s| s == "passed"),
        "{report:#}"
    );
    let dirs: Vec<_> = (1..=22)
        .map(|i| local.path().join(format!(".phlo/warehouse/tpch.q{i:02}")))
        .collect();
    let expected = delta_rows(&dirs);

    // The warehouse holds the same rows in schema tpch, typed as the spec says.
    for sql in tpch_data::sql_statements(&tables, "tpch") {
        warehouse.execute(&sql);
    }
    let ws = workspace("tpch");
    append(
        ws.path(),
        "phlo.toml",
        &format!(
            "\n[transform]\ndefault_materialization = \"table\"\n{}",
            warehouse.adapter_toml()
        ),
    );
    let report = ok(&run(ws.path(), &["run", "--json"]));
    let statuses = by_name(&report, "status");
    assert_eq!(statuses.len(), 22);
    assert!(statuses.values().all(|s| s == "passed"), "{report:#}");

    let names: Vec<String> = (1..=22).map(|i| format!("tpch.q{i:02}")).collect();
    let actual = warehouse.rows(&names);
    let mut differences = Vec::new();
    for ((name, e), a) in names.iter().zip(&expected).zip(actual) {
        if let Some(d) = rows::difference(e.clone(), a) {
            differences.push(format!("{name}: {d}"));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    let checked = types::checked_types(local.path(), &names);
    assert_eq!(types::checked_types(ws.path(), &names), checked);
    let engine = warehouse.column_types(&names);
    assert_eq!(
        types::differences(&names, &checked, &engine),
        known,
        "column types: local engine in the {} dialect vs the engine",
        warehouse.dialect()
    );
    // The data exercises the queries: most return rows.
    let non_empty = expected.iter().filter(|r| !r.is_empty()).count();
    assert!(non_empty >= 18, "only {non_empty} queries returned rows");
    let again = ok(&run(ws.path(), &["run", "--json"]));
    assert!(by_name(&again, "status").values().all(|s| s == "skipped"));
    ws
}

/// A → B → C and D → E (SPEC §64), B failing on the engine (a string cast to an integer).
pub fn spec64_workspace(root: &Path, warehouse: &dyn Warehouse) {
    write_file(root, "phlo.toml", &warehouse.adapter_toml());
    write_file(root, "transforms/x/a.sql", "-- @table\nselect 1 as id\n");
    write_file(
        root,
        "transforms/x/b.sql",
        "-- @table\nselect cast('seven' as integer) as id from x.a\n",
    );
    write_file(
        root,
        "transforms/x/c.sql",
        "-- @table\nselect id from x.b\n",
    );
    write_file(root, "transforms/x/d.sql", "-- @table\nselect 2 as id\n");
    write_file(root, "transforms/x/e.sql", "-- @view\nselect id from x.d\n");
}

/// SPEC §64 on the warehouse: B fails, C is blocked, A, D and E pass; B is not built; once B
/// is fixed only B and C run. Returns the first run's report for engine-specific checks.
pub fn spec64_partial_failure(root: &Path, warehouse: &dyn Warehouse) -> serde_json::Value {
    spec64_workspace(root, warehouse);
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let report = out.json();
    assert_eq!(
        by_name(&report, "status"),
        crate::common::map(&[
            ("x.a", "passed"),
            ("x.b", "failed"),
            ("x.c", "blocked"),
            ("x.d", "passed"),
            ("x.e", "passed"),
        ])
    );
    // What failed was not built; what passed holds its rows.
    let tables = "SELECT CAST(count(*) AS VARCHAR) FROM information_schema.tables \
                  WHERE table_schema = 'x' AND table_name LIKE 'b%'";
    assert_eq!(warehouse.scalar(tables), Some("0".into()));
    assert_eq!(
        warehouse.rows(&["x.e".into()]),
        vec![vec![vec![Some("2".to_string())]]]
    );
    // Fixing B builds B and C only.
    write_file(
        root,
        "transforms/x/b.sql",
        "-- @table\nselect id + 1 as id from x.a\n",
    );
    let fixed = ok(&run(root, &["run", "--json"]));
    let s = by_name(&fixed, "status");
    assert_eq!((s["x.b"].as_str(), s["x.c"].as_str()), ("passed", "passed"));
    assert_eq!(
        (s["x.a"].as_str(), s["x.d"].as_str(), s["x.e"].as_str()),
        ("skipped", "skipped", "skipped")
    );
    assert_eq!(
        warehouse.rows(&["x.c".into()]),
        vec![vec![vec![Some("2".to_string())]]]
    );
    report
}

/// An incremental strategy and the source rows that arrive after the first build: a late row
/// of an existing day for append and partition; new keys (one on an existing day) for key;
/// only rows past the watermark for window (a late row is by design not picked up by it).
pub type IncrementalCase = (&'static str, &'static str);
pub const INCREMENTAL: [IncrementalCase; 4] = [
    (
        "-- @incremental append",
        "(4, '2024-01-03', 4.00), (2, '2024-01-02', 2.50)",
    ),
    (
        "-- @incremental key=id",
        "(4, '2024-01-03', 4.00), (5, '2024-01-02', 2.50)",
    ),
    (
        "-- @incremental partition=day",
        "(4, '2024-01-03', 4.00), (2, '2024-01-02', 2.50)",
    ),
    (
        "-- @incremental window=day",
        "(4, '2024-01-03', 4.00), (5, '2024-01-04', 2.50)",
    ),
];

/// An incremental model over `raw.events`, then the case's new source rows and a changed
/// query: the incremental write (not a full one) leaves the rows a `--full-refresh` gives.
pub fn incremental_equals_full(root: &Path, warehouse: &dyn Warehouse, case: IncrementalCase) {
    let (directive, more) = case;
    warehouse.execute("CREATE SCHEMA raw");
    warehouse.execute("CREATE TABLE raw.events (id bigint, day date, amount decimal(10,2))");
    warehouse.execute(
        "INSERT INTO raw.events VALUES (1, '2024-01-01', 1.50), (2, '2024-01-02', 2.00), \
         (3, '2024-01-02', NULL)",
    );
    write_file(
        root,
        "phlo.toml",
        &format!(
            "[source.\"raw.events\".columns]\nid = \"bigint\"\nday = \"date\"\n\
             amount = \"decimal(10,2)\"\n{}",
            warehouse.adapter_toml()
        ),
    );
    let model = |extra: &str| {
        format!("{directive}\nselect id, day, amount * 2{extra} as doubled from raw.events\n")
    };
    write_file(root, "transforms/m/inc.sql", &model(""));
    ok(&run(root, &["run", "--json"]));
    warehouse.execute(&format!("INSERT INTO raw.events VALUES {more}"));
    // The model changes (not its strategy): it builds incrementally over the new rows.
    write_file(root, "transforms/m/inc.sql", &model(" + 0"));
    let report = ok(&run(root, &["run", "--json"]));
    assert_ne!(
        report["models"][0]["write"], "full",
        "{directive}: {report:#}"
    );
    let incremental = warehouse.rows(&["m.inc".into()]).remove(0);
    let full = ok(&run(root, &["run", "--json", "--full-refresh"]));
    assert_eq!(full["models"][0]["write"], "full", "{full:#}");
    let rebuilt = warehouse.rows(&["m.inc".into()]).remove(0);
    assert_eq!(rows::difference(incremental, rebuilt), None, "{directive}");
}

const KILLED_ROWS: usize = 50_000;

/// SPEC §65a on a warehouse: five chains of ten `@table` models over a source table in the
/// warehouse, killed with SIGKILL once ten passed, then `run --resume`. The resumed run is the
/// same run and passes; no model that passed before the kill is built again (a column comment
/// set on its table after the kill survives; a rebuild creates the table anew); every other
/// model is built, every table holds all its rows, and no half-built `…__phlo_new` relation is
/// left.
pub fn killed_run_resumes(root: &Path, warehouse: &dyn Warehouse) {
    warehouse.execute("CREATE SCHEMA raw");
    warehouse.execute(&format!(
        "CREATE TABLE raw.numbers AS SELECT CAST(g AS BIGINT) AS v, CAST(g * 2 AS BIGINT) AS w \
         FROM generate_series(1, {KILLED_ROWS}) AS s(g)"
    ));
    write_file(
        root,
        "phlo.toml",
        &format!(
            "[source.\"raw.numbers\".columns]\nv = \"bigint\"\nw = \"bigint\"\n{}",
            warehouse.adapter_toml()
        ),
    );
    crate::interrupt::chains(root, "select v, w from raw.numbers");
    let (run_id, before) = kill_after(&runtime(), root, 10);
    let passed_before: Vec<String> = before.into_iter().map(|n| n.node).collect();
    for name in &passed_before {
        warehouse.execute(&format!(
            "COMMENT ON COLUMN {name}.v IS 'built before the kill'"
        ));
    }

    let names: Vec<&str> = passed_before.iter().map(String::as_str).collect();
    crate::interrupt::resume(root, &run_id, &names);
    for i in 0..MODELS {
        let (name, table) = (format!("x.m{i:02}"), format!("m{i:02}"));
        let kept = warehouse.scalar(&warehouse.column_comment("x", &table, "v"));
        assert_eq!(
            kept.as_deref() == Some("built before the kill"),
            passed_before.contains(&name),
            "{name}: column comment {kept:?}"
        );
        let first = 1 + i % 10;
        assert_eq!(
            warehouse.scalar(&format!(
                "SELECT CAST(count(*) AS VARCHAR) || ' ' || CAST(min(v) AS VARCHAR) FROM {name}"
            )),
            Some(format!("{KILLED_ROWS} {first}")),
            "{name}"
        );
    }
    let half_built = "SELECT CAST(count(*) AS VARCHAR) FROM information_schema.tables \
                      WHERE table_name LIKE '%phlo_new'";
    assert_eq!(warehouse.scalar(half_built), Some("0".into()));
    let again = ok(&run(root, &["run", "--json"]));
    assert_eq!(again["counts"]["skipped"], MODELS);
}

/// The columns of model `name` as `inspect --json` reports them (`["id:Int64", …]`).
fn typed_columns(root: &Path, name: &str) -> Vec<String> {
    let inspect = ok(&run(root, &["inspect", name, "--json"]));
    crate::common::column_types(&inspect["schema"])
}

/// Makes every entry of the workspace's warehouse schema cache `seconds` older.
fn age_schema_cache(root: &Path, seconds: u64) {
    let path = root.join(".phlo/warehouse-schemas.json");
    let mut cache: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the schema cache")).unwrap();
    for target in cache["targets"].as_object_mut().unwrap().values_mut() {
        for relation in target["relations"].as_object_mut().unwrap().values_mut() {
            let read_at = relation["read_at"].as_u64().unwrap();
            relation["read_at"] = (read_at - seconds).into();
        }
    }
    std::fs::write(&path, serde_json::to_vec(&cache).unwrap()).unwrap();
}

/// Item 6 of issue 13: `raw.orders` is neither a model nor a declared source but a table of
/// the warehouse; the model reading it is typed from the warehouse's catalog. `check` types it
/// from the schema cache without asking the warehouse again, `plan` refreshes the cache, and
/// with the warehouse unreachable (`offline` makes it so, `online` undoes it) `check` still
/// types the model from the cache, warning (A013) how old the cache is once it is older than
/// an hour. A relation dropped from the warehouse leaves the cache at the next `plan`.
pub fn warehouse_relations_are_typed_from_the_catalog_and_cached(
    root: &Path,
    warehouse: &dyn Warehouse,
    offline: &dyn Fn(),
    online: &dyn Fn(),
) {
    warehouse.execute("CREATE SCHEMA raw");
    warehouse.execute("CREATE TABLE raw.orders (id bigint, amount decimal(12,2))");
    warehouse.execute("INSERT INTO raw.orders VALUES (1, 2.50), (2, 3.25)");
    write_file(root, "phlo.toml", &warehouse.adapter_toml());
    write_file(
        root,
        "transforms/x/orders.sql",
        "-- @table\nselect * from raw.orders\n",
    );
    ok(&run(root, &["check", "--json"]));
    assert_eq!(
        typed_columns(root, "x.orders"),
        ["id:Int64", "amount:Decimal128(12, 2)"]
    );
    assert!(root.join(".phlo/warehouse-schemas.json").is_file());
    let report = ok(&run(root, &["run", "--json"]));
    assert_eq!(by_name(&report, "status")["x.orders"], "passed");
    assert_eq!(
        warehouse.scalar("SELECT CAST(sum(amount) AS VARCHAR) FROM x.orders"),
        Some("5.75".into())
    );

    // A new column: `check` keeps typing from the cache; `plan` reads the catalog again.
    warehouse.execute("ALTER TABLE raw.orders ADD COLUMN note varchar");
    assert_eq!(typed_columns(root, "x.orders").len(), 2);
    ok(&run(root, &["plan", "--json"]));
    assert_eq!(
        typed_columns(root, "x.orders"),
        ["id:Int64", "amount:Decimal128(12, 2)", "note:Utf8"]
    );

    // The warehouse cannot be reached: `check` still types from the cache, silently while it
    // is fresh, with a warning naming its age once it is stale.
    offline();
    let check = ok(&run(root, &["check", "--json"]));
    assert!(!check.to_string().contains("A013"), "{check:#}");
    age_schema_cache(root, 2 * 3600);
    let check = ok(&run(root, &["check", "--json"]));
    let warning = check["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "A013")
        .unwrap_or_else(|| panic!("no A013: {check:#}"))
        .clone();
    assert_eq!(warning["severity"], "warning", "{warning:#}");
    assert_eq!(warning["file"], "phlo.toml", "{warning:#}");
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.contains("`raw.orders`") && message.contains("read 2 h ago"),
        "{message}"
    );
    assert!(
        warning["help"].as_str().unwrap().contains("plan"),
        "{warning:#}"
    );
    assert_eq!(typed_columns(root, "x.orders").len(), 3);
    let text = run(root, &["check"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stderr.contains("warning[A013]"), "{}", text.stderr);

    // Back online, the relation dropped: the next `plan` forgets it, and it is unresolved.
    online();
    warehouse.execute("DROP TABLE raw.orders");
    let plan = run(root, &["plan", "--json"]);
    assert_eq!(plan.code, 2, "{}", plan.stdout);
    assert!(plan.stdout.contains("R001"), "{}", plan.stdout);
    let check = run(root, &["check", "--json"]);
    assert_eq!(check.code, 2, "{}", check.stdout);
    assert!(check.stdout.contains("R001"), "{}", check.stdout);
}

/// Item 6 of issue 13, the schema cache's key: the cache is kept per warehouse (the target's
/// address), not per target name. A target pointed at another warehouse, or `--adapter`
/// choosing a target at another one, is typed from that warehouse while the first one's
/// cached schemas are fresh — never from them.
pub fn another_warehouse_is_never_typed_from_the_first_ones_schemas(
    root: &Path,
    first: &dyn Warehouse,
    second: &dyn Warehouse,
) {
    first.execute("CREATE SCHEMA raw");
    first.execute("CREATE TABLE raw.orders (id bigint, amount decimal(12,2))");
    second.execute("CREATE SCHEMA raw");
    second.execute("CREATE TABLE raw.orders (id bigint, note varchar, placed date)");
    write_file(
        root,
        "transforms/x/orders.sql",
        "-- @table\nselect * from raw.orders\n",
    );
    let first_columns = ["id:Int64", "amount:Decimal128(12, 2)"];
    let second_columns = ["id:Int64", "note:Utf8", "placed:Date32"];
    write_file(root, "phlo.toml", &first.adapter_toml());
    ok(&run(root, &["check", "--json"]));
    assert_eq!(typed_columns(root, "x.orders"), first_columns);
    // The same target pointed at the second warehouse: typed from it at once.
    write_file(root, "phlo.toml", &second.adapter_toml());
    assert_eq!(typed_columns(root, "x.orders"), second_columns);
    // Both warehouses as targets: each one's schemas, whichever `--adapter` chooses.
    let named = second
        .adapter_toml()
        .replace("[adapter]", "[adapters.other]");
    write_file(
        root,
        "phlo.toml",
        &format!("{}{named}", first.adapter_toml()),
    );
    assert_eq!(typed_columns(root, "x.orders"), first_columns);
    let inspect = ok(&run(
        root,
        &["inspect", "x.orders", "--json", "--adapter", "other"],
    ));
    assert_eq!(
        crate::common::column_types(&inspect["schema"]),
        second_columns
    );
    let cache: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".phlo/warehouse-schemas.json")).unwrap())
            .unwrap();
    assert_eq!(cache["targets"].as_object().unwrap().len(), 2, "{cache:#}");
}

/// A relation only a data test reads (`tests/*.sql`) is a warehouse relation too: `check`
/// resolves it from the catalog, and `run` runs the test against it.
pub fn a_warehouse_relation_only_a_test_reads_is_typed_from_the_catalog(
    root: &Path,
    warehouse: &dyn Warehouse,
) {
    warehouse.execute("CREATE SCHEMA raw");
    warehouse.execute("CREATE TABLE raw.orders (id bigint)");
    warehouse.execute("INSERT INTO raw.orders VALUES (1), (2)");
    warehouse.execute("CREATE TABLE raw.refunds (order_id bigint)");
    warehouse.execute("INSERT INTO raw.refunds VALUES (2), (9)");
    write_file(root, "phlo.toml", &warehouse.adapter_toml());
    write_file(
        root,
        "transforms/x/orders.sql",
        "-- @table\nselect id from raw.orders\n",
    );
    // Only the test reads raw.refunds: a refund of an order that does not exist.
    write_file(
        root,
        "tests/refunds_have_orders.sql",
        "select r.order_id from raw.refunds r\nleft join x.orders o on o.id = r.order_id\nwhere o.id is null\n",
    );
    let check = run(root, &["check", "--json"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert!(!check.stdout.contains("R001"), "{}", check.stdout);
    let out = run(root, &["run", "--json"]);
    let report = out.json();
    assert_eq!(
        by_name(&report, "status")["x.orders"],
        "passed",
        "{report:#}"
    );
    let test = &report["tests"][0];
    assert_eq!(test["name"], "refunds_have_orders", "{report:#}");
    assert_eq!(test["status"], "failed", "{report:#}");
    assert_eq!(test["violations"], 1, "{report:#}");
}

/// The warehouse's type name for a canonical source column type.
fn source_type(warehouse: &dyn Warehouse, canonical: &str) -> &'static str {
    match (canonical, warehouse.dialect()) {
        ("double", "postgres") => "double precision",
        ("double", _) => "double",
        ("bigint", _) => "bigint",
        ("date", _) => "date",
        ("timestamp", "trino") => "timestamp(6)",
        ("timestamp", _) => "timestamp",
        _ => "varchar",
    }
}

/// The type the local engine's CSV inference gives a column of `values`: integers bigint,
/// other numbers double, ISO dates date, ISO date-times timestamp, anything else varchar.
fn csv_type(values: &[&str]) -> &'static str {
    fn digits(s: &str) -> bool {
        !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
    }
    fn date(s: &str) -> bool {
        let p: Vec<&str> = s.split('-').collect();
        p.len() == 3 && p.iter().all(|x| digits(x))
    }
    let all = |f: fn(&str) -> bool| values.iter().all(|v| f(v));
    if all(|s| digits(s.strip_prefix('-').unwrap_or(s))) {
        "bigint"
    } else if all(|s| s.parse::<f64>().is_ok()) {
        "double"
    } else if all(|s| s.len() == 10 && date(s)) {
        "date"
    } else if all(|s| s.len() == 19 && date(&s[..10]) && &s[10..11] == "T" && digits(&s[11..13])) {
        "timestamp"
    } else {
        "varchar"
    }
}

/// Copies the CSV sources of a workspace (`sources/<ns>/<name>.csv`, unquoted fields) into
/// the warehouse as tables `<ns>.<name>`, each column typed as the local engine infers it.
pub fn load_csv_sources(warehouse: &dyn Warehouse, root: &Path) {
    let mut files: Vec<_> = std::fs::read_dir(root.join("sources"))
        .unwrap()
        .flat_map(|ns| std::fs::read_dir(ns.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    for file in files {
        let ns = file
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        let name = file.file_stem().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        let types: Vec<&str> = (0..header.len())
            .map(|i| csv_type(&rows.iter().map(|r| r[i]).collect::<Vec<_>>()))
            .collect();
        let columns: Vec<String> = header
            .iter()
            .zip(&types)
            .map(|(c, t)| format!("\"{c}\" {}", source_type(warehouse, t)))
            .collect();
        let values: Vec<String> = rows
            .iter()
            .map(|r| {
                let fields: Vec<String> = r
                    .iter()
                    .zip(&types)
                    .map(|(v, t)| match *t {
                        "bigint" | "double" => v.to_string(),
                        "varchar" => format!("'{}'", v.replace('\'', "''")),
                        other => format!(
                            "CAST('{}' AS {})",
                            v.replace('T', " "),
                            source_type(warehouse, other)
                        ),
                    })
                    .collect();
                format!("({})", fields.join(", "))
            })
            .collect();
        warehouse.execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{ns}\""));
        warehouse.execute(&format!("DROP TABLE IF EXISTS \"{ns}\".\"{name}\""));
        warehouse.execute(&format!(
            "CREATE TABLE \"{ns}\".\"{name}\" ({})",
            columns.join(", ")
        ));
        warehouse.execute(&format!(
            "INSERT INTO \"{ns}\".\"{name}\" VALUES {}",
            values.join(", ")
        ));
    }
}

/// The realistic workspace with `n` models in `dir`, its models spelled for `warehouse`.
fn generate_realistic(warehouse: &dyn Warehouse, dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    crate::generate::realistic::generate(dir, n).unwrap();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "sql") {
                let sql = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&path, warehouse.spell(&sql)).unwrap();
            }
        }
    }
}

/// What differs between the local engine in the warehouse's dialect and the warehouse on one
/// workspace: `types` (see [`types::differences`]; every model, views included) and `rows`
/// (`model: first difference`; table models).
#[derive(Debug, Default)]
pub struct Differences {
    pub types: Vec<String>,
    pub rows: Vec<String>,
}

/// The realistic generated workspace of benches/ (benches/support/realistic.rs) with `n`
/// models, run on the local engine in the warehouse's dialect and on the warehouse over the
/// same source rows; returns every difference of column types and of rows, for the caller
/// to assert against its engine's known list.
pub fn realistic_differences(warehouse: &dyn Warehouse, dir: &Path, n: usize) -> Differences {
    let local = dir.join("local");
    generate_realistic(warehouse, &local, n);
    let toml = std::fs::read_to_string(local.join("phlo.toml")).unwrap();
    let with_dialect = toml.replacen(
        "[transform]\n",
        &format!("[transform]\ndialect = \"{}\"\n", warehouse.dialect()),
        1,
    );
    assert_ne!(toml, with_dialect);
    std::fs::write(local.join("phlo.toml"), with_dialect).unwrap();
    let report = ok(&run(&local, &["run", "--json"]));
    let statuses = by_name(&report, "status");
    assert_eq!(statuses.len(), n, "{report:#}");
    assert!(statuses.values().all(|s| s == "passed"), "{report:#}");
    let models: Vec<String> = statuses.keys().cloned().collect();
    let tables: Vec<String> = models
        .iter()
        .filter(|m| local.join(".phlo/warehouse").join(m).is_dir())
        .cloned()
        .collect();
    assert!(tables.len() * 3 >= n, "{tables:?}");
    let dirs: Vec<_> = tables
        .iter()
        .map(|m| local.join(".phlo/warehouse").join(m))
        .collect();
    let expected = delta_rows(&dirs);
    let checked = types::checked_types(&local, &models);

    let ws = dir.join("warehouse");
    generate_realistic(warehouse, &ws, n);
    load_csv_sources(warehouse, &ws);
    append(&ws, "phlo.toml", &warehouse.adapter_toml());
    // Two extra attempts for failures the engine marks transient (a server sharing its
    // memory with the test beside this one may kill a query, CI's machines slower than
    // this one): SQL errors are never retried, so a wrong model still fails here.
    let report = ok(&run(&ws, &["run", "--json", "--retries", "2"]));
    assert!(
        by_name(&report, "status").values().all(|s| s == "passed"),
        "{report:#}"
    );
    assert_eq!(types::checked_types(&ws, &models), checked);

    let relations: Vec<String> = models.iter().map(|m| warehouse.relation(m)).collect();
    let engine = warehouse.column_types(&relations);
    let mut out = Differences {
        types: types::differences(&models, &checked, &engine),
        rows: Vec::new(),
    };
    let relations: Vec<String> = tables.iter().map(|m| warehouse.relation(m)).collect();
    for ((name, e), a) in tables.iter().zip(expected).zip(warehouse.rows(&relations)) {
        if let Some(d) = rows::difference(e, a) {
            out.rows.push(format!("{name}: {d}"));
        }
    }
    out
}

/// Item 7 of issue 13: a source dropped behind our back. The model reading it fails with A003
/// (relation unavailable), its previous table stays in place, nothing new is
/// recorded for it (the next `plan` still builds it), and once the source is back the next run
/// builds the model.
pub fn a_source_dropped_behind_our_back_fails_and_the_next_run_repairs(
    root: &Path,
    warehouse: &dyn Warehouse,
) {
    warehouse.execute("CREATE SCHEMA raw");
    warehouse.execute("CREATE TABLE raw.t (id bigint)");
    warehouse.execute("INSERT INTO raw.t VALUES (1)");
    write_file(
        root,
        "phlo.toml",
        &format!(
            "[source.\"raw.t\".columns]\nid = \"bigint\"\n{}",
            warehouse.adapter_toml()
        ),
    );
    write_file(
        root,
        "transforms/x/a.sql",
        "-- @table\nselect id from raw.t\n",
    );
    ok(&run(root, &["run", "--json"]));
    warehouse.execute("DROP TABLE raw.t");
    // A changed model, so that the run builds it again.
    write_file(
        root,
        "transforms/x/a.sql",
        "-- @table\nselect id + 0 as id from raw.t\n",
    );
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    let a = &report["models"][0];
    assert_eq!(a["status"], "failed", "{report:#}");
    assert_eq!(a["error"]["code"], "A003", "{report:#}");
    assert!(
        a["error"]["message"].as_str().unwrap().contains("raw"),
        "{report:#}"
    );
    assert!(
        a["error"]["help"]
            .as_str()
            .unwrap()
            .contains("dropped behind phlo-transform's back"),
        "{report:#}"
    );
    // The report people read shows the help line under the failed model.
    let text = run(root, &["run"]);
    assert_eq!(text.code, 1, "{}\n{}", text.stdout, text.stderr);
    let shown = format!("{}{}", text.stdout, text.stderr);
    assert!(
        shown.contains("A003") && shown.contains("help: a relation the statement reads"),
        "{shown}"
    );
    // The previous table is untouched, and the model is still to be built.
    assert_eq!(
        warehouse.scalar("SELECT CAST(sum(id) AS VARCHAR) FROM x.a"),
        Some("1".into())
    );
    let plan = ok(&run(root, &["plan", "--json"]));
    assert_eq!(by_name(&plan, "decision")["x.a"], "build", "{plan:#}");
    // The source is back: the next run builds the model.
    warehouse.execute("CREATE TABLE raw.t (id bigint)");
    warehouse.execute("INSERT INTO raw.t VALUES (2)");
    let report = ok(&run(root, &["run", "--json"]));
    assert_eq!(by_name(&report, "status")["x.a"], "passed");
    assert_eq!(
        warehouse.scalar("SELECT CAST(sum(id) AS VARCHAR) FROM x.a"),
        Some("2".into())
    );
}

/// The keyed model `x.results` (three rows, a column of each kind the adapters read; `price`
/// an unconstrained numeric whose values have one decimal, then two) and the edit the diff
/// scenario makes to it.
const DIFF_BASE: &str = "-- @table\n-- @key id\nselect 1 as id, 'a' as name, cast(1.5 as real) as amount, cast(1.5 as numeric) as price, cast(2 as decimal(10,2)) as qty, cast('2024-01-02' as date) as day, cast('2024-01-02 10:00:00' as timestamp) as at, true as ok\nunion all select 2 as id, 'b' as name, cast(2.5 as real) as amount, cast(2.5 as numeric) as price, cast(2.25 as decimal(10,2)) as qty, cast('2024-01-03' as date) as day, cast('2024-01-03 11:30:00' as timestamp) as at, false as ok\nunion all select 3 as id, 'c' as name, cast(3.5 as real) as amount, cast(3.5 as numeric) as price, cast(3.5 as decimal(10,2)) as qty, cast('2024-01-04' as date) as day, cast('2024-01-04 12:00:00' as timestamp) as at, true as ok\n";
/// id 2's amount and price changed, id 3 removed, id 4 added; id 1 unchanged.
const DIFF_CANDIDATE: &str = "-- @table\n-- @key id\nselect 1 as id, 'a' as name, cast(1.5 as real) as amount, cast(1.5 as numeric) as price, cast(2 as decimal(10,2)) as qty, cast('2024-01-02' as date) as day, cast('2024-01-02 10:00:00' as timestamp) as at, true as ok\nunion all select 2 as id, 'b' as name, cast(2.75 as real) as amount, cast(2.75 as numeric) as price, cast(2.25 as decimal(10,2)) as qty, cast('2024-01-03' as date) as day, cast('2024-01-03 11:30:00' as timestamp) as at, false as ok\nunion all select 4 as id, 'd' as name, cast(4.5 as real) as amount, cast(4.5 as numeric) as price, cast(4.25 as decimal(10,2)) as qty, cast('2024-01-05' as date) as day, cast('2024-01-05 09:00:00' as timestamp) as at, true as ok\n";

/// `diff <model>` on the warehouse: the model's SQL, changed in the workspace and run by the
/// warehouse, against its relation there, each read through the adapter as Arrow; a view
/// is read the same way. Returns the changed model's report for engine-specific checks.
pub fn diff_reads_the_warehouse(root: &Path, warehouse: &dyn Warehouse) -> serde_json::Value {
    write_file(root, "phlo.toml", &warehouse.adapter_toml());
    write_file(
        root,
        "transforms/x/results.sql",
        &warehouse.spell(DIFF_BASE),
    );
    write_file(
        root,
        "transforms/x/totals.sql",
        "-- @view\nselect name, amount from x.results\n",
    );
    ok(&run(root, &["run", "--json"]));
    // Nothing changed: every row equal.
    let same = ok(&run(root, &["diff", "x.results", "--json"]));
    assert_eq!(
        same["records"],
        serde_json::json!({"added": 0, "removed": 0, "modified": 0, "unchanged": 3}),
        "{same}"
    );
    write_file(
        root,
        "transforms/x/results.sql",
        &warehouse.spell(DIFF_CANDIDATE),
    );
    let report = ok(&run(root, &["diff", "x.results", "--json"]));
    // Compared in the warehouse by the join-diff query (as a large table is), the same
    // counts and samples.
    let args = ["diff", "x.results", "--json"];
    crate::common::assert_pushed_down_agrees(root, &args, warehouse.dialect(), &report);
    assert_eq!(report["key"], serde_json::json!(["id"]));
    assert_eq!(
        report["records"],
        serde_json::json!({"added": 1, "removed": 1, "modified": 1, "unchanged": 1}),
        "{report}"
    );
    for (column, changed) in [
        ("name", 0),
        ("amount", 1),
        ("price", 1),
        ("qty", 0),
        ("day", 0),
        ("at", 0),
        ("ok", 0),
    ] {
        assert_eq!(
            report["changed_values"][column], changed,
            "{column}: {report}"
        );
    }
    // Both sides read as the same types, nullable (no constraint comes with the rows).
    assert_eq!(
        report["schema"]["retyped"],
        serde_json::json!([]),
        "{report}"
    );
    assert_eq!(
        report["schema"]["nullability"],
        serde_json::json!([]),
        "{report}"
    );
    // Sample values print as written, whatever the engine's Arrow types.
    let added = &report["samples"]["added"][0]["values"];
    assert_eq!(added["qty"], "4.25", "{added}");
    assert_eq!(added["day"], "2024-01-05", "{added}");
    assert_eq!(added["at"], "2024-01-05T09:00:00", "{added}");
    assert_eq!(report["samples"]["added"][0]["key"]["id"], 4);
    assert_eq!(report["samples"]["removed"][0]["key"]["id"], 3);
    let base = report["base"]["description"].as_str().unwrap();
    assert!(
        base.contains(&format!("relation {}", warehouse.relation("x.results"))),
        "{base}"
    );
    // The warehouse was only read: its table still holds the built rows.
    let built = ok(&run(
        root,
        &["diff", "x.results", "--to", "materialized", "--json"],
    ));
    assert_eq!(built["records"]["unchanged"], 3, "{built}");
    // A view is read the same way: its SQL, unchanged, over the built table gives the rows
    // the view gives (keyless: compared by aggregates, none differing).
    let view = ok(&run(root, &["diff", "x.totals", "--json"]));
    assert_eq!(
        view["rows"],
        serde_json::json!({"base": 3, "candidate": 3, "delta": 0}),
        "{view}"
    );
    let aggregates = view["aggregates"].as_array().unwrap();
    assert_eq!(aggregates.len(), 2, "{view}");
    assert!(
        aggregates
            .iter()
            .all(|a| a["differs"] == serde_json::json!([])),
        "{view}"
    );
    assert_eq!(aggregates[1]["base"]["sum"], 7.5, "{view}");
    // A warehouse has no environments: --ref is refused, not ignored.
    let out = run(root, &["diff", "x.results", "--ref", "dev", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.json()["diagnostics"][0]["code"], "Y015");
    // Versions and references are not sides of a warehouse: D001 with the sides it has.
    for side in ["delta:0", "ref:main", "iceberg:1"] {
        let out = run(root, &["diff", "x.results", "--from", side, "--json"]);
        crate::common::assert_refused(&out, "D001", "`workspace`");
    }
    report
}

/// Rows of the large diff scenario's source: above `diff`'s large-table threshold (1M).
const LARGE_ROWS: u64 = 1_100_000;

/// The large scenario's `x.big` over `raw.big`: `v` and `tag` as given, `flag` and `maybe`
/// (NULL on every 3,000th row) always the same, `rest` after the FROM clause.
fn big_model(v: &str, tag: &str, rest: &str) -> String {
    format!(
        "-- @table\n-- @key id\nselect id, {v} as v, {tag} as tag, id % 2 = 0 as flag, case when id % 3000 = 0 then null else id end as maybe from raw.big{rest}\n"
    )
}

/// `diff <model>` on a table above the large-table threshold: compared in the warehouse by
/// one join-diff query (the sides are not fetched), with the exact counts the full
/// comparison gives. The edit: `v` and `tag` change where `id % 1000 = 0` (1,100 rows), rows
/// with `id % 5000 = 1` go (220), ten new ids come; `flag` (boolean) and `maybe` (NULL on
/// every 3,000th row) stay the same.
pub fn large_diff_runs_in_the_warehouse(root: &Path, warehouse: &dyn Warehouse) {
    warehouse.execute("CREATE SCHEMA raw");
    warehouse.execute(&format!(
        "CREATE TABLE raw.big AS SELECT CAST(g AS BIGINT) AS id FROM generate_series(1, {LARGE_ROWS}) AS s(g)"
    ));
    write_file(root, "phlo.toml", &warehouse.adapter_toml());
    write_file(
        root,
        "transforms/x/big.sql",
        &big_model("id % 7", "'s' || cast(id % 3 as varchar)", ""),
    );
    ok(&run(root, &["run", "--json"]));
    write_file(
        root,
        "transforms/x/big.sql",
        &big_model(
            "case when id % 1000 = 0 then id % 7 + 1 else id % 7 end",
            "case when id % 1000 = 0 then 'changed' else 's' || cast(id % 3 as varchar) end",
            " where id % 5000 <> 1\nunion all select id + 2000000 as id, 0 as v, 'new' as tag, true as flag, id as maybe from raw.big where id <= 10",
        ),
    );
    let report = ok(&run(root, &["diff", "x.big", "--json"]));
    assert_eq!(report["strategy"], "full", "{report}");
    let reason = report["strategy_reason"].as_str().unwrap();
    assert!(reason.contains("join-diff query"), "{reason}");
    assert_eq!(
        report["rows"],
        serde_json::json!({"base": LARGE_ROWS, "candidate": LARGE_ROWS - 220 + 10, "delta": -210}),
        "{report}"
    );
    assert_eq!(
        report["records"],
        serde_json::json!({"added": 10, "removed": 220, "modified": 1100, "unchanged": LARGE_ROWS - 220 - 1100}),
        "{report}"
    );
    assert_eq!(
        report["changed_values"],
        serde_json::json!({"v": 1100, "tag": 1100, "flag": 0, "maybe": 0}),
        "{report}"
    );
    assert_eq!(report["duplicates"]["base"]["keys"], 0, "{report}");
    // Samples, from a second query over the differing keys: the ten smallest of each kind,
    // as the in-memory comparison shows them.
    let samples = &report["samples"];
    for (kind, first) in [("added", 2_000_001), ("removed", 1), ("modified", 1000)] {
        assert_eq!(
            samples[kind].as_array().unwrap().len(),
            10,
            "{kind}: {report}"
        );
        assert_eq!(samples[kind][0]["key"]["id"], first, "{kind}: {report}");
    }
    assert_eq!(
        samples["modified"][0]["changes"],
        serde_json::json!({"v": {"base": 6, "candidate": 7}, "tag": {"base": "s1", "candidate": "changed"}}),
        "{report}"
    );
    assert_eq!(samples["added"][0]["values"]["tag"], "new", "{report}");
    let no_samples = ok(&run(root, &["diff", "x.big", "--samples", "0", "--json"]));
    assert_eq!(no_samples["records"], report["records"]);
    assert_eq!(no_samples["samples"]["modified"], serde_json::json!([]));
    // The sides swapped: the model's SQL is the base, the table the candidate.
    let swapped = ok(&run(
        root,
        &[
            "diff",
            "x.big",
            "--from",
            "workspace",
            "--to",
            "materialized",
            "--json",
        ],
    ));
    assert_eq!(
        swapped["records"],
        serde_json::json!({"added": 220, "removed": 10, "modified": 1100, "unchanged": LARGE_ROWS - 220 - 1100}),
        "{swapped}"
    );
    // A column retyped from an integer to text is compared as text, as in memory (the
    // warehouse stacks both sides' values as text).
    write_file(
        root,
        "transforms/x/big.sql",
        &big_model(
            "cast(id % 7 as varchar)",
            "'s' || cast(id % 3 as varchar)",
            "",
        ),
    );
    let retyped = ok(&run(root, &["diff", "x.big", "--json"]));
    assert_eq!(retyped["schema"]["retyped"][0]["name"], "v", "{retyped}");
    assert_eq!(
        retyped["records"],
        serde_json::json!({"added": 0, "removed": 0, "modified": 0, "unchanged": LARGE_ROWS}),
        "{retyped}"
    );
    // A duplicated key is counted, as the full comparison counts it, and its rows are not.
    write_file(
        root,
        "transforms/x/big.sql",
        "-- @table\n-- @key id\nselect id, id % 7 as v from raw.big\nunion all select id, 9 as v from raw.big where id <= 3\n",
    );
    let dup = run(root, &["diff", "x.big", "--json"]);
    assert!(dup.code <= 1, "{}\n{}", dup.stdout, dup.stderr);
    let dup = dup.json();
    assert_eq!(
        dup["duplicates"]["candidate"],
        serde_json::json!({"keys": 3, "rows": 6}),
        "{dup}"
    );
    assert_eq!(
        dup["duplicates"]["samples"].as_array().map(Vec::len),
        Some(3),
        "{dup}"
    );
    assert_eq!(
        dup["records"],
        serde_json::json!({"added": 0, "removed": 0, "modified": 0, "unchanged": LARGE_ROWS - 3}),
        "{dup}"
    );
}
