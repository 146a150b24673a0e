//! Sources that are tables of an Iceberg REST catalog (`[source."x"] catalog = …`): their
//! schema and state come from the metadata the catalog answers with, read by the same code as
//! a metadata.json file. A catalog that cannot answer never stops compiling: the source's schema
//! is `unknown` with the reason (or its declared `columns`) and an A004 error says why.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_lakehouse::{
    load_tables, FailureKind, LoadedTable, RestError, TableRequest, REQUEST_TIMEOUT,
};
use phlo_transform_project::{RestTable, SourceDecl};
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::schemas::{iceberg_metadata_schema, or_declared};
use crate::source_state::{iceberg_as_of, iceberg_state, SourceState};

/// The state of every REST catalog source, by name, with the (unlocated) diagnostic of those
/// the catalog could not load. Tables are loaded concurrently; other sources are left out.
pub(crate) fn load(sources: &[SourceDecl]) -> BTreeMap<String, (SourceState, Option<Diagnostic>)> {
    let mut out = BTreeMap::new();
    let mut pending = Vec::new();
    let mut requests = Vec::new();
    for source in sources {
        let Some(rest) = &source.rest else {
            continue;
        };
        match token(rest) {
            Ok(token) => {
                requests.push(TableRequest {
                    catalog: rest.catalog.clone(),
                    namespace: rest.namespace.clone(),
                    table: rest.table.clone(),
                    warehouse: rest.warehouse.clone(),
                    token,
                });
                pending.push((source, rest));
            }
            Err(e) => {
                out.insert(source.name.clone(), failed(source, rest, e));
            }
        }
    }
    let results = load_tables(&requests, REQUEST_TIMEOUT);
    for ((source, rest), result) in pending.into_iter().zip(results) {
        let entry = match result {
            Ok(table) => (loaded(source, &table), None),
            Err(e) => failed(source, rest, e),
        };
        out.insert(source.name.clone(), entry);
    }
    out
}

/// The bearer token from the environment variable `token_env` names, if it names one.
fn token(rest: &RestTable) -> Result<Option<String>, RestError> {
    let Some(var) = &rest.token_env else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(token) if !token.is_empty() => {
            phlo_transform_core::secrets::register(&token);
            Ok(Some(token))
        }
        _ => Err(RestError {
            kind: FailureKind::Unauthorized,
            message: format!("the environment variable `{var}` (its `token_env`) is not set"),
        }),
    }
}

fn loaded(source: &SourceDecl, table: &LoadedTable) -> SourceState {
    let metadata = table.local_metadata();
    let unreadable_data = metadata.is_none().then(|| {
        format!(
            "its Iceberg REST catalog puts the table's metadata at `{}`; the local engine reads \
             Iceberg tables from local files only (a path or a file:// URI)",
            table
                .metadata_location
                .as_deref()
                .unwrap_or("(none: a staged table)")
        )
    });
    SourceState {
        name: source.name.clone(),
        format: source.format,
        state: iceberg_state(&table.metadata),
        as_of: iceberg_as_of(&table.metadata),
        read_path: metadata.unwrap_or_default(),
        schema: or_declared(iceberg_metadata_schema(&table.metadata), &source.columns),
        unreadable_data,
    }
}

/// A source whose catalog did not load it. It stays in the snapshot so that its readers are
/// typed against its declared columns or reported `unknown` with the reason; the error keeps
/// anything from running, so its placeholder state is never recorded.
fn failed(
    source: &SourceDecl,
    rest: &RestTable,
    e: RestError,
) -> (SourceState, Option<Diagnostic>) {
    let reason = format!(
        "the Iceberg REST catalog cannot load table `{}`: {}",
        rest.qualified(),
        e.message
    );
    let help = match (e.kind, &rest.token_env) {
        (FailureKind::Unreachable | FailureKind::Timeout, _) => {
            "check that the catalog is running and that `catalog` is its base URL (the part before /v1)"
                .to_string()
        }
        (FailureKind::Unauthorized, Some(var)) => {
            format!("set the environment variable `{var}` to a token the catalog accepts")
        }
        (FailureKind::Unauthorized, None) => "the catalog wants a bearer token: put it in an \
             environment variable and name that variable with `token_env`"
            .to_string(),
        (FailureKind::NotFound, _) => {
            "check `table` (namespace.table) and `warehouse` against the catalog".to_string()
        }
        (FailureKind::BadResponse, _) => {
            "check that `catalog` is the base URL of an Iceberg REST catalog (the part before /v1)"
                .to_string()
        }
    };
    let readers = if source.columns.is_empty() {
        "models reading it are typed `unknown` until the catalog answers"
    } else {
        "models reading it are checked against its declared `columns` meanwhile"
    };
    let diagnostic = Diagnostic::error(
        codes::CATALOG_UNAVAILABLE,
        format!("source `{}`: {reason}", source.name),
    )
    .in_file("phlo.toml")
    .with_note(readers)
    .with_help(help);
    let state = SourceState {
        name: source.name.clone(),
        format: source.format,
        state: "iceberg:unavailable".to_string(),
        as_of: None,
        read_path: PathBuf::new(),
        schema: or_declared(Err(reason.clone()), &source.columns),
        unreadable_data: Some(reason),
    };
    (state, Some(diagnostic))
}
