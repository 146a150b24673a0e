//! Data tests (SPEC §30–33): `@key` implies not-null and unique, `@not-null` implies not-null,
//! and every `tests/*.sql` is a query whose rows are violations (zero rows = pass).

use phlo_transform_sql::sqlparser::ast::Query;
use serde::Serialize;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TestKind {
    NotNull { column: String },
    Unique { columns: Vec<String> },
    Custom { path: String },
}

#[derive(Clone, Debug)]
pub struct CompiledTest {
    pub name: String,
    pub kind: TestKind,
    /// Models the test reads (indices into the compilation's models).
    pub targets: Vec<usize>,
    /// The query returning violating rows, relations as written; shared, so that a
    /// compilation is copied cheaply (an edit compiled from the previous compilation).
    pub query: Arc<Query>,
    /// Resolution of every relation in `query`.
    pub relations: Vec<crate::model::ResolvedRelation>,
}

/// SQL for the generated tests, over the model's logical name.
pub(crate) fn generated_sql(kind: &TestKind, model: &str) -> String {
    match kind {
        TestKind::NotNull { column } => format!("select * from {model} where {column} is null"),
        TestKind::Unique { columns } => {
            let cols = columns.join(", ");
            format!("select {cols}, count(*) as n from {model} group by {cols} having count(*) > 1")
        }
        TestKind::Custom { .. } => unreachable!("custom tests come from files"),
    }
}
