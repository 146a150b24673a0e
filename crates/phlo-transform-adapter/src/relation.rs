//! Physical relations and what introspection finds at them.

use serde::Serialize;

/// A relation as the adapter addresses it: identifier parts, outermost first
/// (`["analytics", "assay", "results"]` = catalog, schema, table). The local engine uses one
/// part, the model name itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Relation {
    pub parts: Vec<String>,
}

impl Relation {
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(parts: I) -> Self {
        Relation {
            parts: parts.into_iter().map(Into::into).collect(),
        }
    }

    /// The last part: the table's own name.
    pub fn table(&self) -> &str {
        self.parts.last().map(String::as_str).unwrap_or("")
    }

    /// Every part double-quoted (`"assay"."results"`), embedded quotes doubled: the form
    /// PostgreSQL, DuckDB and Trino all accept.
    pub fn quoted(&self) -> String {
        self.parts
            .iter()
            .map(|p| format!("\"{}\"", p.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(".")
    }
}

impl std::fmt::Display for Relation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.parts.join("."))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RelationKind {
    Table,
    View,
}

/// One column as the engine's catalog reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ColumnInfo {
    pub name: String,
    /// The engine's own type name (`numeric(15,2)`, `VARCHAR`).
    pub data_type: String,
    pub nullable: bool,
}

/// What exists at a relation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RelationInfo {
    pub kind: RelationKind,
    /// In order; `None` when the engine does not read them for introspection (the local
    /// engine answers existence from the file system alone).
    pub columns: Option<Vec<ColumnInfo>>,
    /// The strategy label (`TableSpec::label`) the table was built with, when recorded.
    pub strategy: Option<String>,
}
