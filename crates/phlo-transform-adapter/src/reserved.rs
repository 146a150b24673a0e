//! Table names the warehouse adapters keep for their own relations beside a model's table: a
//! table is built as `<table>__phlo_new` and renamed into place (PostgreSQL, DuckDB), and
//! Trino stages an incremental batch in `<table>__phlo_batch`. A model whose own table has
//! one of those names would be dropped or overwritten by another model's build, so `check`
//! refuses it (A012) before anything runs.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{AdapterTarget, Workspace};

use crate::sqlgen::NEW_SUFFIX;
use crate::trino::BATCH_SUFFIX;

/// The suffixes the warehouse engines keep (each driver says which it reserves).
pub const RESERVED_SUFFIXES: [&str; 2] = [NEW_SUFFIX, BATCH_SUFFIX];

/// A012 for every model of `ws` whose table on `target` ends with one of the `reserved`
/// suffixes of its engine, at the model's file.
pub(crate) fn reserved_names(
    ws: &Workspace,
    target: &AdapterTarget,
    reserved: &[&str],
) -> Vec<Diagnostic> {
    let default_schema = target.settings.default_schema.as_deref();
    ws.models
        .iter()
        .filter_map(|m| {
            let relation = crate::naming::model(m.name.as_str(), default_schema, "");
            let table = relation.parts.last()?;
            let suffix = reserved.iter().find(|s| table.ends_with(*s))?;
            Some(
                Diagnostic::error(
                    codes::RESERVED_RELATION_NAME,
                    format!(
                        "model `{}` would be the table `{table}`, whose suffix `{suffix}` the \
                         {} adapter keeps for its own temporary tables",
                        m.name.as_str(),
                        target.kind()
                    ),
                )
                .in_file(&m.path)
                .at(1, 1)
                .with_help(format!(
                    "rename the model's file so that its table does not end in `{suffix}`"
                )),
            )
        })
        .collect()
}
