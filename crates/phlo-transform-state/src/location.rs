//! Where the state lives (`--state` / `PHLO_STATE_URL`) and opening the backend there: the
//! one module that knows both backends, so that neither backend imports the crate root that
//! chooses between them.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use std::path::PathBuf;
use std::sync::Arc;

use crate::{redact_url, PostgresStateStore, Result, SqliteStateStore, StateStore};

/// Where the state lives, as given by `--state` / `PHLO_STATE_URL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateLocation {
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl StateLocation {
    /// A `postgres://` / `postgresql://` URL selects PostgreSQL, `sqlite://<path>` or a plain
    /// path SQLite. Any other `scheme://` is an error (a mistyped `postgress://user:pw@…` must
    /// not become a SQLite file named after the password); the message shows it redacted.
    /// The URL's credentials are registered as secrets, so no output shows them.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            phlo_transform_core::secrets::register_url(s);
            return Ok(StateLocation::Postgres(s.to_string()));
        }
        if let Some(path) = s.strip_prefix("sqlite://") {
            return Ok(StateLocation::Sqlite(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = s.split_once("://") {
            let looks_like_scheme = !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if looks_like_scheme {
                phlo_transform_core::secrets::register_url(s);
                return Err(format!(
                    "unknown state URL scheme `{scheme}://` in `{}`",
                    redact_url(s)
                ));
            }
        }
        Ok(StateLocation::Sqlite(PathBuf::from(s)))
    }

    /// Y001 for a store at this location that cannot be opened, with where to look.
    pub fn unavailable(&self, e: crate::StateError) -> Diagnostic {
        let help = match self {
            StateLocation::Sqlite(_) => {
                "check that the state path is writable, or pass another with --state"
            }
            StateLocation::Postgres(_) => {
                "check that PostgreSQL is running, reachable at that address and that the database exists; or pass a SQLite file path with --state / PHLO_STATE_URL"
            }
        };
        Diagnostic::error(codes::STATE_UNAVAILABLE, e.message).with_help(help)
    }

    /// How to show the location to people: a path, or the URL without its password.
    pub fn display(&self) -> String {
        match self {
            StateLocation::Sqlite(p) => p.display().to_string(),
            StateLocation::Postgres(url) => redact_url(url),
        }
    }
}

/// Opens the state store at `location` for reading only: a SQLite file that does not exist
/// yet is read as an empty store (nothing recorded) and is not created: commands that only
/// look never leave a database behind.
pub async fn open_existing(location: &StateLocation) -> Result<Arc<dyn StateStore>> {
    match location {
        StateLocation::Sqlite(path) if !path.exists() => {
            Ok(Arc::new(SqliteStateStore::in_memory().await?))
        }
        _ => open(location).await,
    }
}

/// Opens (creating or migrating as needed) the state store at `location`.
pub async fn open(location: &StateLocation) -> Result<Arc<dyn StateStore>> {
    Ok(match location {
        StateLocation::Sqlite(path) => Arc::new(SqliteStateStore::open(path).await?),
        StateLocation::Postgres(url) => Arc::new(PostgresStateStore::open(url).await?),
    })
}
