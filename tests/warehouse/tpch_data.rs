//! A small, deterministic TPC-H database (TPC-H 3.0.1 §4.2 value domains, scaled down to a
//! few thousand line items) for running the 22 queries on real engines: the same rows as
//! CSV files for the local engine and as SQL statements for a warehouse.

#![allow(dead_code)]

use chrono::{Duration, NaiveDate};
use std::fmt::Write as _;
use std::path::Path;

/// One table: name, `(column, warehouse type)`, rows of SQL literals / CSV fields.
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<(&'static str, &'static str)>,
    pub rows: Vec<Vec<Value>>,
}

#[derive(Clone, Debug)]
pub enum Value {
    Int(i64),
    /// Hundredths (money, quantities, rates).
    Cents(i64),
    Text(String),
    Date(NaiveDate),
}

impl Value {
    fn sql(&self) -> String {
        match self {
            Value::Int(n) => n.to_string(),
            Value::Cents(c) => cents(*c),
            Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
            Value::Date(d) => format!("DATE '{d}'"),
        }
    }

    fn csv(&self) -> String {
        match self {
            Value::Int(n) => n.to_string(),
            Value::Cents(c) => cents(*c),
            Value::Text(s) => format!("\"{}\"", s.replace('"', "\"\"")),
            Value::Date(d) => d.to_string(),
        }
    }
}

fn cents(c: i64) -> String {
    let sign = if c < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", c.abs() / 100, c.abs() % 100)
}

/// A linear congruential generator: the same database on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() as usize % items.len()]
    }
}

const REGIONS: &[&str] = &["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];
const NATIONS: &[(&str, i64)] = &[
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];
const COLORS: &[&str] = &[
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blue",
    "brown",
    "burlywood",
    "chartreuse",
    "chocolate",
    "coral",
    "cornsilk",
    "cream",
    "forest",
    "green",
    "honeydew",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lemon",
    "linen",
    "magenta",
    "maroon",
];
const TYPE1: &[&str] = &["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
const TYPE2: &[&str] = &["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
const TYPE3: &[&str] = &["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
const CONTAINER1: &[&str] = &["SM", "LG", "MED", "JUMBO", "WRAP"];
const CONTAINER2: &[&str] = &["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
const SEGMENTS: &[&str] = &[
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];
const PRIORITIES: &[&str] = &["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"];
const INSTRUCTIONS: &[&str] = &[
    "DELIVER IN PERSON",
    "COLLECT COD",
    "NONE",
    "TAKE BACK RETURN",
];
const MODES: &[&str] = &["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
const WORDS: &[&str] = &[
    "furiously",
    "quickly",
    "carefully",
    "blithely",
    "slyly",
    "final",
    "regular",
    "ironic",
    "express",
    "pending",
    "deposits",
    "accounts",
    "packages",
    "requests",
    "theodolites",
];

fn comment(rng: &mut Rng) -> String {
    (0..4)
        .map(|_| rng.pick(WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The eight tables: `parts` parts, `parts / 10` suppliers, `orders / 10` customers.
pub fn generate(parts: i64, orders: i64) -> Vec<Table> {
    let mut rng = Rng(0x7c9_2024);
    let suppliers = (parts / 10).max(10);
    let customers = (orders / 10).max(10);
    let text = |s: &str| Value::Text(s.to_string());
    let region = Table {
        name: "region",
        columns: vec![
            ("r_regionkey", "bigint"),
            ("r_name", "text"),
            ("r_comment", "text"),
        ],
        rows: REGIONS
            .iter()
            .enumerate()
            .map(|(i, r)| {
                vec![
                    Value::Int(i as i64),
                    text(r),
                    Value::Text(comment(&mut rng)),
                ]
            })
            .collect(),
    };
    let nation = Table {
        name: "nation",
        columns: vec![
            ("n_nationkey", "bigint"),
            ("n_name", "text"),
            ("n_regionkey", "bigint"),
            ("n_comment", "text"),
        ],
        rows: NATIONS
            .iter()
            .enumerate()
            .map(|(i, (n, r))| {
                vec![
                    Value::Int(i as i64),
                    text(n),
                    Value::Int(*r),
                    Value::Text(comment(&mut rng)),
                ]
            })
            .collect(),
    };
    let mut retail = Vec::new();
    let part = Table {
        name: "part",
        columns: vec![
            ("p_partkey", "bigint"),
            ("p_name", "text"),
            ("p_mfgr", "text"),
            ("p_brand", "text"),
            ("p_type", "text"),
            ("p_size", "integer"),
            ("p_container", "text"),
            ("p_retailprice", "numeric(15,2)"),
            ("p_comment", "text"),
        ],
        rows: (1..=parts)
            .map(|k| {
                let m = rng.range(1, 5);
                let price = 90_000 + (k / 10) % 20_001 + 100 * (k % 1000);
                retail.push(price);
                vec![
                    Value::Int(k),
                    Value::Text(
                        (0..5)
                            .map(|_| rng.pick(COLORS))
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    Value::Text(format!("Manufacturer#{m}")),
                    Value::Text(format!("Brand#{m}{}", rng.range(1, 5))),
                    Value::Text(format!(
                        "{} {} {}",
                        rng.pick(TYPE1),
                        rng.pick(TYPE2),
                        rng.pick(TYPE3)
                    )),
                    Value::Int(rng.range(1, 50)),
                    Value::Text(format!("{} {}", rng.pick(CONTAINER1), rng.pick(CONTAINER2))),
                    Value::Cents(price),
                    Value::Text(comment(&mut rng)),
                ]
            })
            .collect(),
    };
    let supplier = Table {
        name: "supplier",
        columns: vec![
            ("s_suppkey", "bigint"),
            ("s_name", "text"),
            ("s_address", "text"),
            ("s_nationkey", "bigint"),
            ("s_phone", "text"),
            ("s_acctbal", "numeric(15,2)"),
            ("s_comment", "text"),
        ],
        rows: (1..=suppliers)
            .map(|k| {
                let nation = rng.range(0, 24);
                let remark = if k % 7 == 0 {
                    "Customer slyly Complaints".to_string()
                } else {
                    comment(&mut rng)
                };
                vec![
                    Value::Int(k),
                    Value::Text(format!("Supplier#{k:09}")),
                    Value::Text(format!("addr {}", rng.range(1, 99_999))),
                    Value::Int(nation),
                    Value::Text(phone(&mut rng, nation)),
                    Value::Cents(rng.range(-99_999, 999_999)),
                    Value::Text(remark),
                ]
            })
            .collect(),
    };
    let partsupp = Table {
        name: "partsupp",
        columns: vec![
            ("ps_partkey", "bigint"),
            ("ps_suppkey", "bigint"),
            ("ps_availqty", "integer"),
            ("ps_supplycost", "numeric(15,2)"),
            ("ps_comment", "text"),
        ],
        rows: (1..=parts)
            .flat_map(|k| (0..4).map(move |i| (k, (k + i * (suppliers / 4 + 1)) % suppliers + 1)))
            .map(|(k, s)| {
                vec![
                    Value::Int(k),
                    Value::Int(s),
                    Value::Int(rng.range(1, 9_999)),
                    Value::Cents(rng.range(100, 100_000)),
                    Value::Text(comment(&mut rng)),
                ]
            })
            .collect(),
    };
    let customer = Table {
        name: "customer",
        columns: vec![
            ("c_custkey", "bigint"),
            ("c_name", "text"),
            ("c_address", "text"),
            ("c_nationkey", "bigint"),
            ("c_phone", "text"),
            ("c_acctbal", "numeric(15,2)"),
            ("c_mktsegment", "text"),
            ("c_comment", "text"),
        ],
        rows: (1..=customers)
            .map(|k| {
                let nation = rng.range(0, 24);
                vec![
                    Value::Int(k),
                    Value::Text(format!("Customer#{k:09}")),
                    Value::Text(format!("addr {}", rng.range(1, 99_999))),
                    Value::Int(nation),
                    Value::Text(phone(&mut rng, nation)),
                    Value::Cents(rng.range(-99_999, 999_999)),
                    Value::Text(rng.pick(SEGMENTS).to_string()),
                    Value::Text(comment(&mut rng)),
                ]
            })
            .collect(),
    };
    let start = NaiveDate::from_ymd_opt(1992, 1, 1).unwrap();
    let end = NaiveDate::from_ymd_opt(1998, 8, 2).unwrap();
    let today = NaiveDate::from_ymd_opt(1995, 6, 17).unwrap();
    let span = (end - start).num_days() - 151;
    let mut order_rows = Vec::new();
    let mut line_rows = Vec::new();
    for k in 1..=orders {
        // Every third customer places no orders (TPC-H §4.2.3).
        let mut cust = rng.range(1, customers);
        if cust % 3 == 0 {
            cust = cust % customers + 1;
        }
        let date = start + Duration::days(rng.range(0, span));
        let lines = rng.range(1, 7);
        let mut total = 0i64;
        let mut all_f = true;
        let mut all_o = true;
        for n in 1..=lines {
            let p = rng.range(1, parts);
            let s = (p + rng.range(0, 3) * (suppliers / 4 + 1)) % suppliers + 1;
            let qty = rng.range(1, 50);
            let price = qty * retail[(p - 1) as usize];
            let discount = rng.range(0, 10);
            let tax = rng.range(0, 8);
            let ship = date + Duration::days(rng.range(1, 121));
            let commit = date + Duration::days(rng.range(30, 90));
            let receipt = ship + Duration::days(rng.range(1, 30));
            let flag = if receipt <= today {
                if rng.range(0, 1) == 0 {
                    "R"
                } else {
                    "A"
                }
            } else {
                "N"
            };
            let status = if ship > today { "O" } else { "F" };
            all_f &= status == "F";
            all_o &= status == "O";
            total += price * (100 + tax) * (100 - discount) / 10_000;
            line_rows.push(vec![
                Value::Int(k),
                Value::Int(p),
                Value::Int(s),
                Value::Int(n),
                Value::Cents(qty * 100),
                Value::Cents(price),
                Value::Cents(discount),
                Value::Cents(tax),
                Value::Text(flag.into()),
                Value::Text(status.into()),
                Value::Date(ship),
                Value::Date(commit),
                Value::Date(receipt),
                Value::Text(rng.pick(INSTRUCTIONS).into()),
                Value::Text(rng.pick(MODES).into()),
                Value::Text(comment(&mut rng)),
            ]);
        }
        let status = if all_f {
            "F"
        } else if all_o {
            "O"
        } else {
            "P"
        };
        let remark = if k % 11 == 0 {
            "pending special accounts requests".to_string()
        } else {
            comment(&mut rng)
        };
        order_rows.push(vec![
            Value::Int(k),
            Value::Int(cust),
            Value::Text(status.into()),
            Value::Cents(total),
            Value::Date(date),
            Value::Text(rng.pick(PRIORITIES).into()),
            Value::Text(format!("Clerk#{:09}", rng.range(1, 1000))),
            Value::Int(0),
            Value::Text(remark),
        ]);
    }
    let orders = Table {
        name: "orders",
        columns: vec![
            ("o_orderkey", "bigint"),
            ("o_custkey", "bigint"),
            ("o_orderstatus", "text"),
            ("o_totalprice", "numeric(15,2)"),
            ("o_orderdate", "date"),
            ("o_orderpriority", "text"),
            ("o_clerk", "text"),
            ("o_shippriority", "integer"),
            ("o_comment", "text"),
        ],
        rows: order_rows,
    };
    let lineitem = Table {
        name: "lineitem",
        columns: vec![
            ("l_orderkey", "bigint"),
            ("l_partkey", "bigint"),
            ("l_suppkey", "bigint"),
            ("l_linenumber", "integer"),
            ("l_quantity", "numeric(15,2)"),
            ("l_extendedprice", "numeric(15,2)"),
            ("l_discount", "numeric(15,2)"),
            ("l_tax", "numeric(15,2)"),
            ("l_returnflag", "text"),
            ("l_linestatus", "text"),
            ("l_shipdate", "date"),
            ("l_commitdate", "date"),
            ("l_receiptdate", "date"),
            ("l_shipinstruct", "text"),
            ("l_shipmode", "text"),
            ("l_comment", "text"),
        ],
        rows: line_rows,
    };
    vec![
        region, nation, part, supplier, partsupp, customer, orders, lineitem,
    ]
}

fn phone(rng: &mut Rng, nation: i64) -> String {
    format!(
        "{}-{}-{}-{}",
        nation + 10,
        rng.range(100, 999),
        rng.range(100, 999),
        rng.range(1000, 9999)
    )
}

/// Writes `<dir>/<table>.csv` (with a header) for every table.
pub fn write_csv(tables: &[Table], dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for t in tables {
        let mut out = t
            .columns
            .iter()
            .map(|(c, _)| *c)
            .collect::<Vec<_>>()
            .join(",");
        out.push('\n');
        for r in &t.rows {
            let line: Vec<String> = r.iter().map(Value::csv).collect();
            out.push_str(&line.join(","));
            out.push('\n');
        }
        std::fs::write(dir.join(format!("{}.csv", t.name)), out).unwrap();
    }
}

/// Writes `<dir>/<table>.parquet` for every table, with the tables' exact types (decimals
/// stay decimals), converted from the CSV files by pyarrow.
pub fn write_parquet(tables: &[Table], dir: &Path) {
    write_csv(tables, dir);
    let spec: serde_json::Map<String, serde_json::Value> = tables
        .iter()
        .map(|t| {
            let cols: Vec<serde_json::Value> = t
                .columns
                .iter()
                .map(|(c, ty)| serde_json::json!([c, ty.replace(' ', "")]))
                .collect();
            (t.name.to_string(), serde_json::Value::Array(cols))
        })
        .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/csv_to_parquet.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .arg(serde_json::Value::Object(spec).to_string())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// SQL creating schema `schema` with every table and its rows.
pub fn sql_statements(tables: &[Table], schema: &str) -> Vec<String> {
    sql_statements_typed(tables, schema, |ty| ty.to_string())
}

/// [`sql_statements`] with the column types renamed by `type_name` (`text` → `varchar`).
pub fn sql_statements_typed(
    tables: &[Table],
    schema: &str,
    type_name: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut out = vec![format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"")];
    for t in tables {
        let cols: Vec<String> = t
            .columns
            .iter()
            .map(|(c, ty)| format!("\"{c}\" {}", type_name(ty)))
            .collect();
        out.push(format!(
            "CREATE TABLE \"{schema}\".\"{}\" ({})",
            t.name,
            cols.join(", ")
        ));
        for chunk in t.rows.chunks(500) {
            let mut sql = format!("INSERT INTO \"{schema}\".\"{}\" VALUES ", t.name);
            for (i, r) in chunk.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                let values: Vec<String> = r.iter().map(Value::sql).collect();
                let _ = write!(sql, "({})", values.join(", "));
            }
            out.push(sql);
        }
    }
    out
}
