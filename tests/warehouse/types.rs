//! One type vocabulary for comparing column types across engines: the Arrow types the
//! compiler reports (`check`'s manifest, `inspect --json`) and the names DuckDB, PostgreSQL
//! (`format_type`) and Trino print in their catalogs all map to `bigint`, `integer`,
//! `smallint`, `tinyint`, `double`, `real`, `decimal(p,s)`, `numeric` (PostgreSQL's unbounded
//! numeric), `varchar`, `date`, `timestamp`, `timestamptz`, `boolean`. A name outside it is
//! kept as written (lower case), so it shows up as a difference instead of being hidden.

#![allow(dead_code)]

use std::path::Path;

/// `ty` (any engine's spelling) in the canonical vocabulary.
pub fn canonical(ty: &str) -> String {
    let t = ty.trim().to_ascii_lowercase();
    let decimal = |args: &str| {
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        match args.as_slice() {
            [p, s] => format!("decimal({p},{s})"),
            [p] => format!("decimal({p},0)"),
            _ => t.clone(),
        }
    };
    if let Some(rest) = t
        .strip_prefix("decimal128(")
        .or_else(|| t.strip_prefix("decimal("))
        .or_else(|| t.strip_prefix("numeric("))
    {
        return decimal(rest.trim_end_matches(')'));
    }
    if t.starts_with("timestamp") {
        let zoned = t.contains("with time zone")
            || t.contains("utc")
            || t.contains("+00:00")
            || t.ends_with("tz")
            || t.contains("some(");
        return if zoned { "timestamptz" } else { "timestamp" }.into();
    }
    match t.as_str() {
        "int64" | "bigint" => "bigint",
        "int32" | "integer" | "int" | "int4" => "integer",
        "int16" | "smallint" | "int2" => "smallint",
        // Arrow's Int8 (PostgreSQL's int8 is printed `bigint` by format_type).
        "int8" | "tinyint" => "tinyint",
        "float64" | "double" | "double precision" | "float8" => "double",
        "float32" | "real" | "float4" | "float" => "real",
        "hugeint" => "decimal(38,0)",
        "numeric" => "numeric",
        "utf8" | "largeutf8" | "utf8view" | "varchar" | "text" | "character varying" | "string" => {
            "varchar"
        }
        "date32" | "date" => "date",
        "boolean" | "bool" => "boolean",
        other if other.starts_with("varchar(") || other.starts_with("character varying(") => {
            "varchar"
        }
        other => other,
    }
    .to_string()
}

/// `name:type` of each column of `model` as `check` reports them (its `manifest.json`), the
/// types canonical.
pub fn checked_types(root: &Path, models: &[String]) -> Vec<Vec<String>> {
    let out = crate::common::run(root, &["check"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(root.join(".phlo/transform/manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    models
        .iter()
        .map(|m| {
            let entry = manifest["models"]
                .as_array()
                .and_then(|a| a.iter().find(|e| e["name"] == m.as_str()))
                .or_else(|| manifest["models"].get(m.as_str()))
                .unwrap_or_else(|| panic!("{m} not in the manifest"));
            entry["schema"]["columns"]
                .as_array()
                .unwrap_or_else(|| panic!("{m}: no known schema: {entry}"))
                .iter()
                .map(|c| {
                    format!(
                        "{}:{}",
                        c["name"].as_str().unwrap(),
                        canonical(c["type"].as_str().unwrap())
                    )
                })
                .collect()
        })
        .collect()
}

/// Every column whose type differs between `local` and `engine` (each `name:type`, per
/// model): `model.column: local <type>, engine <type>`; a model whose columns differ in name
/// or number is one entry.
pub fn differences(
    models: &[String],
    local: &[Vec<String>],
    engine: &[Vec<String>],
) -> Vec<String> {
    let mut out = Vec::new();
    for ((m, l), e) in models.iter().zip(local).zip(engine) {
        let names = |cols: &[String]| -> Vec<String> {
            cols.iter()
                .map(|c| c.split_once(':').unwrap().0.to_string())
                .collect()
        };
        if names(l) != names(e) {
            out.push(format!("{m}: columns {l:?} vs {e:?}"));
            continue;
        }
        for (a, b) in l.iter().zip(e) {
            if a != b {
                let (column, lt) = a.split_once(':').unwrap();
                let et = b.split_once(':').unwrap().1;
                out.push(format!("{m}.{column}: local {lt}, engine {et}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn every_engine_spelling_maps_to_one_name() {
        let same = |names: &[&str], want: &str| {
            for n in names {
                assert_eq!(canonical(n), want, "{n}");
            }
        };
        same(&["Int64", "BIGINT", "bigint"], "bigint");
        same(
            &["Decimal128(15, 2)", "DECIMAL(15,2)", "numeric(15,2)"],
            "decimal(15,2)",
        );
        same(&["HUGEINT", "Decimal128(38, 0)"], "decimal(38,0)");
        same(&["Utf8", "VARCHAR", "text", "character varying"], "varchar");
        same(&["Float64", "DOUBLE", "double precision"], "double");
        same(
            &[
                "Timestamp(Microsecond, None)",
                "Timestamp(µs)",
                "TIMESTAMP",
                "timestamp(6)",
                "timestamp without time zone",
            ],
            "timestamp",
        );
        same(&["Date32", "DATE", "date"], "date");
        assert_eq!(canonical("numeric"), "numeric");
    }
}
