//! DuckDB's errors as adapter errors: classified by message (DuckDB has no error codes), with
//! the position in the model file. A leaf of `duck`, used by the engine and its catalog.

use phlo_transform_core::diagnostic::codes;

use crate::error::help;
use crate::{AdapterError, MaterializeJob};

pub(super) fn failed(e: duckdb::Error, sql: &str) -> AdapterError {
    located(e, sql, None)
}

/// `e` from running `sql`, classified by DuckDB's message (it has no error codes). When `sql`
/// carries `job`'s query, the position DuckDB shows (`LINE n:` and a caret) is mapped into the
/// model file, as PostgreSQL's is.
pub(super) fn located(e: duckdb::Error, sql: &str, job: Option<&MaterializeJob>) -> AdapterError {
    let mut message = e.to_string();
    if let Some(job) = job {
        let at = crate::position::duckdb_position(&message, sql)
            .and_then(|at| crate::position::map_back(sql, at, &job.text));
        if let Some((line, column)) = at {
            message.push_str(&format!(" at {}:{line}:{column}", job.path));
        }
    }
    let (code, help) = if message.contains("Interrupted") {
        (codes::QUERY_CANCELLED, help::CANCELLED)
    } else if message.contains("Catalog Error") && message.contains("does not exist") {
        (codes::RELATION_UNAVAILABLE, help::RELATION_MISSING)
    } else if message.contains("Conflict") || message.contains("conflict") {
        return AdapterError::retryable(codes::WRITE_FAILED, message).with_help(help::CONFLICT);
    } else {
        (codes::QUERY_FAILED, help::SQL)
    };
    let shown: String = sql.chars().take(200).collect();
    AdapterError::new(code, format!("{message} (in: {shown})")).with_help(help)
}
