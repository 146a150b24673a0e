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

/// `python3 tests/python/duckdb_compare.py <workspace>`: each table model on DuckDB itself
/// and as the local engine wrote it.
fn compare_with_duckdb(root: &std::path::Path) -> Vec<serde_json::Value> {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/duckdb_compare.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(root)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "duckdb_compare.py failed (needs: python3 -m pip install duckdb==2.0.1 deltalake==1.6.6): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Under `dialect = "duckdb"` the local engine computes what DuckDB computes for integer and
/// decimal division, NULL ordering (in windows), `extract`, `grouping()`, and the types of
/// `sum` and `avg` over integers and decimals (in windows and UNION branches too): equal
/// column types and equal rows, and
/// `check` reports DuckDB's types. Without the dialect the same models differ, so the
/// comparison can fail.
#[test]
fn under_the_duckdb_dialect_the_local_engine_matches_duckdb() {
    let ws = common::workspace("dialects/duckdb");
    let root = ws.path();
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report = compare_with_duckdb(root);
    assert_eq!(report.len(), 6);
    for m in &report {
        assert_eq!(m["local_types"], m["duckdb_types"], "{}", m["model"]);
        assert_eq!(m["local_rows"], m["duckdb_rows"], "{}", m["model"]);
    }
    let ratios = run(root, &["inspect", "shop.ratios", "--json"]).json()["schema"].clone();
    assert_eq!(
        common::column_types(&ratios),
        [
            "id:Int64",
            "half:Float64",
            "per_qty:Float64",
            "half_amount:Float64"
        ]
    );
    let dated = run(root, &["inspect", "shop.dated", "--json"]).json()["schema"].clone();
    assert_eq!(
        common::column_types(&dated),
        ["id:Int64", "y:Int64", "m:Int64", "d:Int64"]
    );
    let totals = run(root, &["inspect", "shop.totals", "--json"]).json()["schema"].clone();
    assert_eq!(
        common::column_types(&totals),
        [
            "customer:Utf8",
            "units:Decimal128(38, 0)",
            "revenue:Decimal128(38, 2)",
            "mean_amount:Float64",
            "per_order:Float64",
            "quarter_largest:Float64"
        ]
    );

    // DataFusion's own semantics: the same models differ from DuckDB, and `id / qty` with
    // qty = 0 is an integer division by zero (DuckDB: inf).
    std::fs::write(root.join("phlo.toml"), "").unwrap();
    let _ = std::fs::remove_dir_all(root.join(".phlo"));
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(model(&out.json(), "shop.ratios")["error"]["code"], "E006");
    let differing: Vec<String> = compare_with_duckdb(root)
        .iter()
        .filter(|m| m["local_types"] != m["duckdb_types"] || m["local_rows"] != m["duckdb_rows"])
        .map(|m| m["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        differing,
        [
            "shop.dated",
            "shop.ranked",
            "shop.ratios",
            "shop.rollup",
            "shop.totals"
        ]
    );
}

/// Where the local engine cannot compute what the target does, the model gets a T012 warning
/// naming the construct, at the construct: PostgreSQL's unbounded numeric results of `avg`
/// and `sum` over decimals (its `sum` of an integer is not warned about).
#[test]
fn constructs_the_local_engine_computes_differently_are_warned_about() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(root, "phlo.toml", "[transform]\ndialect = \"postgres\"\n");
    write_file(
        root,
        "transforms/x/a.sql",
        "-- @table\nselect cast(2.5 as decimal(10, 2)) as price, 3 as qty\n",
    );
    write_file(
        root,
        "transforms/x/b.sql",
        "select count(*) as n,\n       avg(price) as mean,\n       sum(price) as total,\n       sum(qty) as units\nfrom x.a\n",
    );
    let out = run(root, &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let diags = out.json()["diagnostics"].as_array().unwrap().clone();
    let got: Vec<(&str, &str, &str, u64, u64)> = diags
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap(),
                d["severity"].as_str().unwrap(),
                d["file"].as_str().unwrap(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("T012", "warning", "transforms/x/b.sql", 2, 8),
            ("T012", "warning", "transforms/x/b.sql", 3, 8)
        ],
        "{diags:?}"
    );
    assert!(diags[0]["message"]
        .as_str()
        .unwrap()
        .contains("avg(decimal)"));
    assert!(diags[0]["help"].as_str().unwrap().contains("numeric"));
    assert!(diags[1]["message"]
        .as_str()
        .unwrap()
        .contains("sum(decimal)"));
}

/// `name:nullable|not null` of each column of `model` as `inspect --json` reports them.
fn nullability(root: &std::path::Path, model: &str) -> Vec<String> {
    let out = run(root, &["inspect", model, "--json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out.json()["schema"]["columns"]
        .as_array()
        .unwrap_or_else(|| panic!("{model}: {}", out.stdout))
        .iter()
        .map(|c| {
            let null = if c["nullable"].as_bool().unwrap() {
                "nullable"
            } else {
                "not null"
            };
            format!("{}:{null}", c["name"].as_str().unwrap())
        })
        .collect()
}

/// The same for the table the local engine wrote: the schema of its Delta log's newest
/// `metaData` (the guarantees the table itself enforces).
fn table_nullability(root: &std::path::Path, model: &str) -> Vec<String> {
    let log = root.join(".phlo/warehouse").join(model).join("_delta_log");
    let mut files: Vec<_> = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let schema = files
        .iter()
        .rev()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .collect::<Vec<_>>()
        })
        .find_map(|action| {
            action["metaData"]["schemaString"]
                .as_str()
                .map(String::from)
        })
        .unwrap_or_else(|| panic!("{model}: no metaData"));
    let schema: serde_json::Value = serde_json::from_str(&schema).unwrap();
    schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let null = if f["nullable"].as_bool().unwrap() {
                "nullable"
            } else {
                "not null"
            };
            format!("{}:{null}", f["name"].as_str().unwrap())
        })
        .collect()
}

/// Nullability follows the plan (issue 18 item 2): outer joins make the other side's columns
/// nullable, `lag`/`lead` are nullable and `row_number`/`rank` are not, a UNION is nullable
/// where any branch is. `check` and `inspect` report it, the tables build with their rows, and
/// each table declares NOT NULL exactly where the plan proves it.
#[test]
fn nullability_of_outer_joins_windows_and_unions_follows_the_plan() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    // Two inputs whose `id` and `tag` the plan proves NOT NULL (VALUES columns are
    // nullable; `coalesce` with a literal is not).
    for (name, rows) in [("a", "(1, 'p'), (2, 'q')"), ("b", "(2, 'r'), (3, 's')")] {
        write_file(
            root,
            &format!("transforms/x/{name}.sql"),
            &format!("-- @table\nselect coalesce(id, 0) as id, coalesce(tag, '-') as tag\nfrom (values {rows}) as t(id, tag)\n"),
        );
    }
    let join = |kind: &str| {
        format!("-- @table\nselect a.id as a_id, a.tag as a_tag, b.id as b_id, b.tag as b_tag\nfrom x.a as a {kind} join x.b as b on a.id = b.id\n")
    };
    write_file(root, "transforms/x/inner_join.sql", &join("inner"));
    write_file(root, "transforms/x/left_join.sql", &join("left"));
    write_file(root, "transforms/x/right_join.sql", &join("right"));
    write_file(root, "transforms/x/full_join.sql", &join("full"));
    write_file(
        root,
        "transforms/x/windowed.sql",
        "-- @table\nselect id,\n       lag(id) over (order by id) as previous_id,\n       lead(tag) over (order by id) as next_tag,\n       row_number() over (order by id) as n,\n       rank() over (order by tag) as r,\n       count(*) over () as total\nfrom x.a\n",
    );
    write_file(
        root,
        "transforms/x/unioned.sql",
        "-- @table\nselect id, tag from x.a\nunion all\nselect id, cast(null as varchar) as tag from x.b\n",
    );
    write_file(
        root,
        "transforms/x/both_keyed.sql",
        "-- @table\nselect id, tag from x.a\nunion all\nselect id, tag from x.b\n",
    );
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report = out.json();
    let rows = |m: &str| model(&report, m)["rows"].as_u64().unwrap();
    let expected: [(&str, u64, &[&str]); 8] = [
        ("x.a", 2, &["id:not null", "tag:not null"]),
        (
            "x.inner_join",
            1,
            &[
                "a_id:not null",
                "a_tag:not null",
                "b_id:not null",
                "b_tag:not null",
            ],
        ),
        (
            "x.left_join",
            2,
            &[
                "a_id:not null",
                "a_tag:not null",
                "b_id:nullable",
                "b_tag:nullable",
            ],
        ),
        (
            "x.right_join",
            2,
            &[
                "a_id:nullable",
                "a_tag:nullable",
                "b_id:not null",
                "b_tag:not null",
            ],
        ),
        (
            "x.full_join",
            3,
            &[
                "a_id:nullable",
                "a_tag:nullable",
                "b_id:nullable",
                "b_tag:nullable",
            ],
        ),
        (
            "x.windowed",
            2,
            &[
                "id:not null",
                "previous_id:nullable",
                "next_tag:nullable",
                "n:not null",
                "r:not null",
                "total:not null",
            ],
        ),
        ("x.unioned", 4, &["id:not null", "tag:nullable"]),
        ("x.both_keyed", 4, &["id:not null", "tag:not null"]),
    ];
    for (name, count, columns) in expected {
        assert_eq!(rows(name), count, "{name}");
        assert_eq!(nullability(root, name), columns, "{name} (inspect)");
        assert_eq!(table_nullability(root, name), columns, "{name} (table)");
    }
}

/// A `@table` over a UNION ALL of literal rows whose branches differ in nullability (a NULL
/// in one branch only) builds on the local engine: the batches of the NOT NULL branch are
/// written with the union's (nullable) schema.
#[test]
fn a_table_over_a_union_of_literals_builds() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(
        root,
        "transforms/x/literals.sql",
        "-- @table\nselect 1 as id, 'a' as tag\nunion all\nselect 2, null\nunion all\nselect 3, 'c'\n",
    );
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(model(&out.json(), "x.literals")["rows"], 3);
    assert_eq!(
        table_nullability(root, "x.literals"),
        ["id:not null", "tag:nullable"]
    );
}

/// A table's CHECK constraint derived from an earlier version of its model (`where amount >
/// 0`) no longer holds once the WHERE clause is gone: a full write rebuilds the table with
/// the guarantees the model proves now (no constraint), instead of refusing with A005.
#[test]
fn a_check_constraint_the_model_no_longer_proves_goes_with_a_full_write() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let values = "from (values (1, 5), (2, -3)) as t(id, amount)";
    write_file(
        root,
        "transforms/x/paid.sql",
        &format!("-- @table\nselect id, amount\n{values}\nwhere amount > 0\n"),
    );
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let log = std::fs::read_to_string(
        root.join(".phlo/warehouse/x.paid/_delta_log/00000000000000000000.json"),
    )
    .unwrap();
    assert!(log.contains("delta.constraints.phlo_check_1"), "{log}");
    write_file(
        root,
        "transforms/x/paid.sql",
        &format!("-- @table\nselect id, amount\n{values}\n"),
    );
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(model(&out.json(), "x.paid")["rows"], 2);
}

/// A table whose definition changes (here a column is added) is recreated with its new rows
/// in one commit; when the rows break the new definition, nothing is committed and
/// the table keeps its old definition and rows (before, it was recreated empty first).
#[test]
fn a_recreated_table_whose_rows_break_a_constraint_keeps_its_old_rows() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(
        root,
        "transforms/x/t.sql",
        "-- @table\nselect 1 as id union all select 2\n",
    );
    let first = run(root, &["run", "--json"]).json();
    assert_eq!(model(&first, "x.t")["status"], "passed", "{first}");
    write_file(
        root,
        "transforms/x/t.sql",
        "-- @table\n-- @key id\nselect 1 as id, 'a' as label union all select cast(null as int), 'b'\n",
    );
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let report = out.json();
    let error = &model(&report, "x.t")["error"];
    assert_eq!(error["code"], "E007", "{report}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("1 row breaks NOT NULL column `id`"),
        "{message}"
    );
    // An independent read of the Delta log: still one commit, the first run's, with its file.
    let log = root.join(".phlo/warehouse/x.t/_delta_log");
    let commits: Vec<String> = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(commits, ["00000000000000000000.json"]);
    let actions: Vec<serde_json::Value> =
        std::fs::read_to_string(log.join("00000000000000000000.json"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let info = actions.iter().find_map(|a| a.get("commitInfo")).unwrap();
    assert_eq!(info["phlo.model_version"], model(&first, "x.t")["version"]);
    let add = actions.iter().find_map(|a| a.get("add")).unwrap();
    let stats: serde_json::Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
    assert_eq!(stats["numRecords"], 2);
    assert!(root
        .join(".phlo/warehouse/x.t")
        .join(add["path"].as_str().unwrap())
        .is_file());
}
