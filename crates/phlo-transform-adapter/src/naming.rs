//! Physical names in SQL warehouses (docs/adapters.md, "Physical naming"): a model's first
//! name segment is its schema and the rest, joined with `__`, its table (`assay.results` →
//! `"assay"."results"`, `shared.dims.date` → `"shared"."dims__date"`). With `default_schema`
//! every model goes to that schema and the whole name, joined with `__`, is the table. A
//! source is addressed by its own segments (`raw.orders` → `"raw"."orders"`). A one-segment
//! name lives in the engine's default schema.
//!
//! The local engine has no schemas: a relation is one name, a directory of the warehouse.
//! Without `default_schema` that is the model's name; with it, the same schema and table as
//! a SQL warehouse's, joined with `.` (`analytics.shared__dims__date`), so `default_schema`
//! places a model alike on every engine.

use crate::Relation;

/// The naming of an engine whose relations are `schema.table` (PostgreSQL, DuckDB): the
/// configured `default_schema` and the engine's own default schema, held once so that each
/// adapter's `model_relation` and `source_relation` are a call each.
pub struct SchemaNaming {
    default_schema: Option<String>,
    engine_default: &'static str,
}

impl SchemaNaming {
    /// `default_schema` as configured; `engine_default` is the schema a one-segment name
    /// lives in (`public`, `main`).
    pub fn new(default_schema: Option<&str>, engine_default: &'static str) -> SchemaNaming {
        SchemaNaming {
            default_schema: default_schema.map(str::to_string),
            engine_default,
        }
    }

    /// Where model `name` is written ([`model`]).
    pub fn model(&self, name: &str) -> Relation {
        model(name, self.default_schema.as_deref(), self.engine_default)
    }

    /// Where source `name` is read ([`source`]).
    pub fn source(&self, name: &str) -> Relation {
        source(name, self.engine_default)
    }
}

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

/// The local engine's one-part name for model `name`: `schema.table` as [`model`] places it
/// under `default_schema`, else the model's own name.
pub fn local_model(name: &str, default_schema: Option<&str>) -> String {
    match default_schema {
        Some(_) => model(name, default_schema, "").to_string(),
        None => name.to_string(),
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
        let naming = SchemaNaming::new(Some("analytics"), "main");
        assert_eq!(naming.model("a.b").parts, ["analytics", "a__b"]);
        assert_eq!(naming.source("orders").parts, ["main", "orders"]);
    }

    #[test]
    fn local_names_place_models_as_the_warehouses_do() {
        assert_eq!(local_model("shared.dims.date", None), "shared.dims.date");
        assert_eq!(
            local_model("shared.dims.date", Some("analytics")),
            "analytics.shared__dims__date"
        );
        assert_eq!(local_model("top", Some("a")), "a.top");
    }
}
