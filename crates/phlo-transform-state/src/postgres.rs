//! PostgreSQL backend (sqlx, embedded migrations mirroring SQLite's): the shared state store of
//! a team or a deployment, selected by a `postgres://` / `postgresql://` state URL.

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};
use std::str::FromStr;
use std::time::Duration;

use crate::{redact_url, Result, StateError};

/// How long the first connection may take before the server counts as unreachable (a closed
/// port fails at once; a host that drops packets would otherwise hang for the TCP timeout).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct PostgresStateStore {
    pool: PgPool,
}

impl PostgresStateStore {
    /// Connects to the database at `url` and applies pending migrations. Errors name the URL
    /// with its password redacted, never the password.
    pub async fn open(url: &str) -> Result<Self> {
        let shown = redact_url(url);
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StateError {
                message: format!("invalid PostgreSQL state URL {shown}: {}", clean(e, url)),
            })?
            .application_name("phlo-transform")
            .disable_statement_logging();
        // One direct attempt first: the pool retries refused connections until its acquire
        // timeout, which would turn "nothing listens there" into a 30-second wait.
        let probe = tokio::time::timeout(CONNECT_TIMEOUT, options.connect()).await;
        match probe {
            Ok(Ok(conn)) => {
                let _ = conn.close().await;
            }
            Ok(Err(e)) => {
                return Err(StateError {
                    message: format!(
                        "cannot connect to the PostgreSQL state database {shown}: {}",
                        clean(e, url)
                    ),
                })
            }
            Err(_) => {
                return Err(StateError {
                    message: format!(
                    "cannot connect to the PostgreSQL state database {shown}: no answer within {}s",
                    CONNECT_TIMEOUT.as_secs()
                ),
                })
            }
        }
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(|e| StateError {
                message: format!(
                    "cannot connect to the PostgreSQL state database {shown}: {}",
                    clean(e, url)
                ),
            })?;
        // Concurrent first runs are safe: sqlx holds an advisory lock while migrating.
        sqlx::migrate!("./migrations_postgres")
            .run(&pool)
            .await
            .map_err(|e| StateError {
                message: format!("state database migration failed on {shown}: {e}"),
            })?;
        Ok(PostgresStateStore { pool })
    }

    /// Closes the pool's connections (dropping the store does so too, without waiting).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// An error's text, with the URL's password removed should a driver ever quote it.
fn clean(e: impl std::fmt::Display, url: &str) -> String {
    let text = e.to_string();
    match url::Url::parse(url)
        .ok()
        .and_then(|u| u.password().map(str::to_string))
    {
        Some(p) if !p.is_empty() => text.replace(&p, "***"),
        _ => text,
    }
}

crate::store::impl_state_store!(
    PostgresStateStore,
    sqlx::postgres::PgRow,
    crate::store::numbered_placeholders
);
