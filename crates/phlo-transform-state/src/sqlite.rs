//! SQLite backend (sqlx, embedded migrations, WAL journal).

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use crate::{Result, StateError};

pub struct SqliteStateStore {
    pool: SqlitePool,
}

impl SqliteStateStore {
    /// Opens (creating if needed) the database file and applies pending migrations.
    pub async fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| StateError {
                message: format!("cannot create {}: {e}", parent.display()),
            })?;
        }
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .map_err(|e| StateError::from_sqlx("invalid state path", e))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // In WAL mode NORMAL syncs at checkpoints, not at every commit: a commit that
            // returned survives the process being killed (the run's records must, SPEC §65a);
            // only an OS crash or power loss can lose the last few, and the database stays
            // consistent. FULL cost an fsync per node transition (~1.5 ms each).
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10));
        // Two processes opening a fresh database race twice: switching it to WAL needs an
        // exclusive lock that SQLite may refuse at once (SQLITE_BUSY, no busy wait), and sqlx
        // does not lock its migrations (both would apply them and one would fail). An exclusive
        // lock on a file beside the database, held from the first connection to the last
        // migration, makes them take turns (the second finds WAL set and nothing to apply).
        let lock = open_lock(path).await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|e| {
                StateError::from_sqlx(&format!("cannot open state database {}", path.display()), e)
            })?;
        let migrated = sqlx::migrate!("./migrations").run(&pool).await;
        drop(lock);
        migrated.map_err(|e| StateError {
            message: format!("state database migration failed: {e}"),
        })?;
        Ok(SqliteStateStore { pool })
    }

    /// An empty store in memory, migrated like a file: one connection, kept for the store's
    /// life (an in-memory database ends with its connection).
    pub async fn in_memory() -> Result<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(|e| StateError::from_sqlx("invalid in-memory state", e))?;
        let pool = SqlitePoolOptions::new()
            .min_connections(1)
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(|e| StateError::from_sqlx("cannot open an in-memory state database", e))?;
        sqlx::migrate!("./migrations")
            .run(&pool)
            .await
            .map_err(|e| StateError {
                message: format!("state database migration failed: {e}"),
            })?;
        Ok(SqliteStateStore { pool })
    }
}

/// An exclusive lock on `<database>.lock`, held until dropped; waits for another process's.
async fn open_lock(path: &Path) -> Result<std::fs::File> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = std::path::PathBuf::from(lock_path);
    let shown = lock_path.display().to_string();
    tokio::task::spawn_blocking(move || {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)?;
        file.lock()?;
        Ok::<_, std::io::Error>(file)
    })
    .await
    .map_err(|e| StateError {
        message: format!("cannot lock {shown}: {e}"),
    })?
    .map_err(|e| StateError {
        message: format!("cannot lock {shown}: {e}"),
    })
}

crate::store::impl_state_store!(
    SqliteStateStore,
    sqlx::sqlite::SqliteRow,
    crate::store::as_is
);
