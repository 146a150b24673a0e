//! PostgreSQL failures classified from their SQLSTATE (Appendix A of the PostgreSQL manual):
//! what a retry may cure, what was cancelled, what is the SQL's own fault.

use phlo_transform_core::diagnostic::codes;
use sqlx::postgres::PgDatabaseError;
use sqlx::postgres::PgErrorPosition;

use crate::error::help;
use crate::AdapterError;

/// Where a failing statement came from, to map the engine's error position back.
pub struct Statement<'a> {
    pub sql: &'a str,
    /// The model's path and text, when the statement carries the model's query.
    pub model: Option<(&'a str, &'a str)>,
}

/// [`classify`] for a statement that carries no model's query.
pub fn plain(e: sqlx::Error, sql: &str) -> AdapterError {
    classify(e, &Statement { sql, model: None })
}

/// `e` from running `statement`, classified.
pub fn classify(e: sqlx::Error, statement: &Statement<'_>) -> AdapterError {
    match e {
        sqlx::Error::Database(db) => {
            let Some(pg) = db.try_downcast_ref::<PgDatabaseError>() else {
                return AdapterError::new(codes::QUERY_FAILED, db.to_string()).with_help(help::SQL);
            };
            let state = pg.code();
            let mut message = format!("{} (SQLSTATE {state})", pg.message());
            if let Some(detail) = pg.detail() {
                message.push_str(&format!("; {detail}"));
            }
            if let (Some(PgErrorPosition::Original(at)), Some((path, text))) =
                (pg.position(), statement.model)
            {
                if let Some((line, column)) = crate::position::map_back(statement.sql, at, text) {
                    message.push_str(&format!(" at {path}:{line}:{column}"));
                }
            }
            by_state(state, message)
        }
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => AdapterError::retryable(
            codes::ADAPTER_UNAVAILABLE,
            format!("lost the connection to PostgreSQL: {e}"),
        )
        .with_help(help::CONNECTION_LOST),
        other => AdapterError::new(codes::QUERY_FAILED, other.to_string()).with_help(help::SQL),
    }
}

fn by_state(state: &str, message: String) -> AdapterError {
    match state {
        // query_canceled: pg_cancel_backend (timeout, fail-fast, Ctrl-C) or an operator.
        "57014" => AdapterError::new(codes::QUERY_CANCELLED, message).with_help(help::CANCELLED),
        // serialization_failure, deadlock_detected: another transaction won; try again.
        "40001" | "40P01" => {
            AdapterError::retryable(codes::WRITE_FAILED, message).with_help(help::CONFLICT)
        }
        // admin_shutdown, crash_shutdown, cannot_connect_now, connection exceptions,
        // insufficient resources: the server, not the SQL.
        s if s.starts_with("08") || s.starts_with("53") || s.starts_with("57P") => {
            AdapterError::retryable(codes::ADAPTER_UNAVAILABLE, message)
                .with_help(help::CONNECTION_LOST)
        }
        // undefined_table: a relation dropped behind our back, or never built.
        "42P01" => AdapterError::new(codes::RELATION_UNAVAILABLE, message)
            .with_help(help::RELATION_MISSING),
        _ => AdapterError::new(codes::QUERY_FAILED, message).with_help(help::SQL),
    }
}

/// A connection that could not be made: server down, wrong password, missing database —
/// each with the help line of what to check.
pub fn connect_failed(e: sqlx::Error, shown_url: &str) -> AdapterError {
    const UNREACHABLE: &str = "check that the server is running and reachable at that \
        address (`pg_isready -h <host> -p <port>`), and the host and port in the URL";
    let (why, help) = match &e {
        sqlx::Error::Database(db) => match db.code().as_deref() {
            Some("28P01") | Some("28000") => (
                format!("authentication failed: {}", db.message()),
                "check the user in the URL and the password in the variable password_env \
                 names (never in phlo.toml)",
            ),
            Some("3D000") => (
                format!("the database does not exist: {}", db.message()),
                "check that the database exists on that server (`createdb <name>` creates \
                 it) and its name in the URL",
            ),
            Some(s) if s.starts_with("57P") || s.starts_with("53") => {
                (db.message().to_string(), UNREACHABLE)
            }
            _ => (
                db.message().to_string(),
                "check the URL and the server's settings for this user and database",
            ),
        },
        sqlx::Error::Io(io) => (format!("cannot reach the server: {io}"), UNREACHABLE),
        sqlx::Error::PoolTimedOut => (
            "timed out connecting to the server".to_string(),
            UNREACHABLE,
        ),
        other => (other.to_string(), UNREACHABLE),
    };
    AdapterError::new(
        codes::ADAPTER_UNAVAILABLE,
        format!("PostgreSQL at {shown_url}: {why}"),
    )
    .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::by_state;
    use phlo_transform_core::diagnostic::codes;

    /// Every failure the SQLSTATE classifies carries a help line (issue 13, item 7).
    #[test]
    fn every_classified_failure_has_help() {
        for state in [
            "57014", "40001", "40P01", "08006", "53100", "57P01", "42P01", "22012",
        ] {
            assert!(by_state(state, String::new()).help.is_some(), "{state}");
        }
        assert!(by_state("42P01", String::new())
            .help
            .unwrap()
            .contains("dropped"));
    }

    #[test]
    fn sqlstates_decide_retry_and_code() {
        let e = by_state("40001", String::new());
        assert!(e.retryable && e.code == codes::WRITE_FAILED);
        let e = by_state("57014", String::new());
        assert!(!e.retryable && e.code == codes::QUERY_CANCELLED);
        let e = by_state("22012", String::new()); // division_by_zero
        assert!(!e.retryable && e.code == codes::QUERY_FAILED);
        let e = by_state("08006", String::new());
        assert!(e.retryable && e.code == codes::ADAPTER_UNAVAILABLE);
    }
}
