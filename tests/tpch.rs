//! The 22 TPC-H queries (testdata/tpch) as models over schema-only TPC-H sources: every query
//! type-checks with no diagnostic, and each model's inferred output columns are exactly the
//! names and Arrow types DataFusion 53 gives them.
//!
//! How the expected types follow from DataFusion's rules (sources: decimal(15,2) money and
//! quantities, bigint keys, integer sizes and priorities, char/varchar text, date dates):
//! - `sum` of Decimal128(p, s) is Decimal128(min(38, p + 10), s); `avg` is
//!   Decimal128(min(38, p + 4), min(38, s + 4)); `count` is a non-nullable Int64.
//! - An integer literal meets a decimal as Decimal128(20, 0), so `1 - l_discount` is
//!   Decimal128(23, 2); `a + b` / `a - b` is Decimal128(max(s) + max(p - s) + 1, max(s)),
//!   `a * b` is Decimal128(p1 + p2 + 1, s1 + s2), both capped at precision 38. Hence every
//!   `sum(l_extendedprice * (1 - l_discount))` is Decimal128(38, 4).
//! - `a / b` on decimals follows arrow: scale s1 + 4, precision p1 - s1 + s2 + (s1 + 4), capped.
//! - `extract(year from …)` (date_part) is Int32 in DataFusion 53 (Float64 only for epoch).
//! - Decimal literals with a fraction (`100.00`, `7.0`) are Float64, since DataFusion's default
//!   `sql_parser.parse_float_as_decimal` is false: Q14 and Q17 therefore yield Float64.
//! - `substring` always returns Utf8View in DataFusion 53 (SubstrFunc::return_type), whatever
//!   its input string type: Q22's `cntrycode` is Utf8View although the sources are Utf8.
//! - An unaliased aggregate is named by DataFusion from its expression, with the relation's
//!   alias: `tpch.lineitem` read without an alias is aliased `lineitem` (its last segment), so
//!   Q18's spec-unaliased `sum(l_quantity)` is named `sum(lineitem.l_quantity)`.

mod common;

use common::{run, workspace};

/// `(model, ["name:type", …])` for every query, in output order.
const EXPECTED: &[(&str, &[&str])] = &[
    (
        "tpch.q01",
        &[
            "l_returnflag:Utf8",
            "l_linestatus:Utf8",
            "sum_qty:Decimal128(25, 2)",
            "sum_base_price:Decimal128(25, 2)",
            // (15,2) * (23,2) → (38,4) capped; sum keeps it.
            "sum_disc_price:Decimal128(38, 4)",
            // (38,4) * (23,2) → (38,6).
            "sum_charge:Decimal128(38, 6)",
            "avg_qty:Decimal128(19, 6)",
            "avg_price:Decimal128(19, 6)",
            "avg_disc:Decimal128(19, 6)",
            "count_order:Int64",
        ],
    ),
    (
        "tpch.q02",
        &[
            "s_acctbal:Decimal128(15, 2)",
            "s_name:Utf8",
            "n_name:Utf8",
            "p_partkey:Int64",
            "p_mfgr:Utf8",
            "s_address:Utf8",
            "s_phone:Utf8",
            "s_comment:Utf8",
        ],
    ),
    (
        "tpch.q03",
        &[
            "l_orderkey:Int64",
            "revenue:Decimal128(38, 4)",
            "o_orderdate:Date32",
            "o_shippriority:Int32",
        ],
    ),
    ("tpch.q04", &["o_orderpriority:Utf8", "order_count:Int64"]),
    ("tpch.q05", &["n_name:Utf8", "revenue:Decimal128(38, 4)"]),
    // (15,2) * (15,2) → (31,2+2); sum → (38,4).
    ("tpch.q06", &["revenue:Decimal128(38, 4)"]),
    (
        "tpch.q07",
        &[
            "supp_nation:Utf8",
            "cust_nation:Utf8",
            "l_year:Int32",
            "revenue:Decimal128(38, 4)",
        ],
    ),
    // sum(case … volume else 0) is (38,4); (38,4) / (38,4) → scale 4 + 4, precision capped.
    ("tpch.q08", &["o_year:Int32", "mkt_share:Decimal128(38, 8)"]),
    (
        "tpch.q09",
        &[
            "nation:Utf8",
            "o_year:Int32",
            "sum_profit:Decimal128(38, 4)",
        ],
    ),
    (
        "tpch.q10",
        &[
            "c_custkey:Int64",
            "c_name:Utf8",
            "revenue:Decimal128(38, 4)",
            "c_acctbal:Decimal128(15, 2)",
            "n_name:Utf8",
            "c_address:Utf8",
            "c_phone:Utf8",
            "c_comment:Utf8",
        ],
    ),
    // ps_availqty (Int32) meets a decimal as Decimal128(10, 0): (15,2) * (10,0) → (26,2);
    // sum → (36,2).
    ("tpch.q11", &["ps_partkey:Int64", "value:Decimal128(36, 2)"]),
    // sum of the Int64 literals 1 / 0.
    (
        "tpch.q12",
        &[
            "l_shipmode:Utf8",
            "high_line_count:Int64",
            "low_line_count:Int64",
        ],
    ),
    // c_count is named by the derived table's column list `c_orders (c_custkey, c_count)`.
    ("tpch.q13", &["c_count:Int64", "custdist:Int64"]),
    // 100.00 is a Float64 literal, so the whole ratio is Float64.
    ("tpch.q14", &["promo_revenue:Float64"]),
    (
        "tpch.q15",
        &[
            "s_suppkey:Int64",
            "s_name:Utf8",
            "s_address:Utf8",
            "s_phone:Utf8",
            "total_revenue:Decimal128(38, 4)",
        ],
    ),
    (
        "tpch.q16",
        &[
            "p_brand:Utf8",
            "p_type:Utf8",
            "p_size:Int32",
            "supplier_cnt:Int64",
        ],
    ),
    // sum(decimal) / 7.0 (a Float64 literal) is Float64.
    ("tpch.q17", &["avg_yearly:Float64"]),
    (
        "tpch.q18",
        &[
            "c_name:Utf8",
            "c_custkey:Int64",
            "o_orderkey:Int64",
            "o_orderdate:Date32",
            "o_totalprice:Decimal128(15, 2)",
            // Unaliased in the spec: DataFusion's display name, with the implicit alias.
            "sum(lineitem.l_quantity):Decimal128(25, 2)",
        ],
    ),
    ("tpch.q19", &["revenue:Decimal128(38, 4)"]),
    ("tpch.q20", &["s_name:Utf8", "s_address:Utf8"]),
    ("tpch.q21", &["s_name:Utf8", "numwait:Int64"]),
    (
        "tpch.q22",
        &[
            // substring always returns Utf8View in DataFusion 53.
            "cntrycode:Utf8View",
            "numcust:Int64",
            "totacctbal:Decimal128(25, 2)",
        ],
    ),
];

#[test]
fn all_22_queries_type_check_without_diagnostics() {
    let ws = workspace("tpch");
    let out = run(ws.path(), &["check", "--json"]);
    let report = out.json();
    assert_eq!(
        report["diagnostics"].as_array().unwrap().len(),
        0,
        "{:#}",
        report["diagnostics"]
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut names: Vec<&str> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    names.sort();
    let expected: Vec<String> = (1..=22).map(|i| format!("tpch.q{i:02}")).collect();
    assert_eq!(names, expected);
}

#[test]
fn every_query_has_the_expected_output_columns() {
    assert_eq!(EXPECTED.len(), 22);
    let ws = workspace("tpch");
    let mut mismatches = Vec::new();
    for (model, expected) in EXPECTED {
        let out = run(ws.path(), &["inspect", model, "--json"]);
        assert_eq!(out.code, 0, "inspect {model}: {}", out.stderr);
        let schema = &out.json()["schema"];
        assert_eq!(schema["status"], "known", "{model}: {schema:#}");
        let actual: Vec<String> = common::column_types(schema);
        if actual != *expected {
            mismatches.push(format!(
                "{model}\n  expected {expected:?}\n  actual   {actual:?}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
