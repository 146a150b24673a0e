//! Physical names in SQL warehouses (docs/adapters.md, "Physical naming"): a model's first
//! name segment is its schema and the rest, joined with `__`, its table (`assay.results` →
//! `"assay"."results"`, `shared.dims.date` → `"shared"."dims__date"`). With `default_schema`
//! every model goes to that schema and the whole name, joined with `__`, is the table. A
//! source is addressed by its own segments (`raw.orders` → `"raw"."orders"`). A one-segment
//! name lives in the engine's default schema.

use crate::Relation;

/// Where model `name` is written.
pub fn model(name: &str, default_schema: Option<&str>, engine_default: &str) -> Relation {
    let segments: Vec<&str> = name.split('.').collect();
    match (default_schema, segments.as_slice()) {
        (Some(schema), _) => Relation::new([schema.to_string(), segments.join("__")]),
        (None, [only]) => Relation::new([engine_default, only]),
        (None, [schema, rest @ ..]) => Relation::new([schema.to_string(), rest.join("__")]),
        (None, []) => Relation::new([engine_default, name]),
    }
}

/// Where source `name` is read.
pub fn source(name: &str, engine_default: &str) -> Relation {
    let segments: Vec<&str> = name.split('.').collect();
    match segments.as_slice() {
        [only] => Relation::new([engine_default, only]),
        _ => Relation::new(segments),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_map_to_schema_and_table() {
        assert_eq!(
            model("assay.results", None, "public").parts,
            ["assay", "results"]
        );
        assert_eq!(
            model("shared.dims.date", None, "public").parts,
            ["shared", "dims__date"]
        );
        assert_eq!(
            model("shared.dims.date", Some("analytics"), "public").parts,
            ["analytics", "shared__dims__date"]
        );
        assert_eq!(model("top", None, "main").parts, ["main", "top"]);
        assert_eq!(source("raw.orders", "public").parts, ["raw", "orders"]);
    }
}
