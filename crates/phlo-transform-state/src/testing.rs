//! Test support: a fresh PostgreSQL database per test, dropped afterwards. Used by this crate's
//! suite and by the command line's end-to-end tests; not part of the product.
//!
//! The server is `postgres://postgres@127.0.0.1:5432/postgres` (trust authentication), or
//! `PHLO_TEST_POSTGRES_URL`. A test that cannot reach it panics: it never passes silently.

use sqlx::{ConnectOptions, Connection, Executor};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The maintenance database URL tests create their databases through.
pub fn admin_url() -> String {
    std::env::var("PHLO_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_string())
}

/// A database created for one test; dropped (with its connections) when this value is.
pub struct PgTestDb {
    name: String,
    url: String,
    admin: String,
}

impl PgTestDb {
    /// Creates `phlo_test_<unique>`. Panics, naming the server, when it cannot.
    pub async fn create() -> PgTestDb {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let name = format!(
            "phlo_test_{}_{}_{}",
            std::process::id(),
            nanos % 1_000_000_000_000,
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let admin = admin_url();
        let mut conn = connect(&admin).await;
        conn.execute(format!("CREATE DATABASE \"{name}\"").as_str())
            .await
            .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
        let _ = conn.close().await;
        let mut url = url::Url::parse(&admin).expect("PHLO_TEST_POSTGRES_URL is a URL");
        url.set_path(&name);
        PgTestDb {
            name,
            url: url.to_string(),
            admin,
        }
    }

    /// Creates a database from synchronous code (it runs its own runtime on a new thread).
    pub fn create_blocking() -> PgTestDb {
        block_on_thread(PgTestDb::create())
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for PgTestDb {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        // Drop may run inside a runtime (async tests) or outside one: a new thread with its own
        // runtime works in both.
        // Never panics (this may run while a failed test unwinds).
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async move {
                let options = sqlx::postgres::PgConnectOptions::from_str(&admin).ok()?;
                let mut conn = options.connect().await.ok()?;
                conn.execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                    .await
                    .ok()?;
                let _ = conn.close().await;
                Some(())
            })
        });
        let _ = dropped.join();
    }
}

async fn connect(admin: &str) -> sqlx::PgConnection {
    let options = sqlx::postgres::PgConnectOptions::from_str(admin)
        .unwrap_or_else(|e| panic!("invalid PHLO_TEST_POSTGRES_URL: {e}"));
    options.connect().await.unwrap_or_else(|e| {
        panic!(
            "PostgreSQL for the state-store tests is unreachable at {} ({e}); start it \
             (`pg_ctlcluster <version> main start`) or point PHLO_TEST_POSTGRES_URL at a server",
            crate::redact_url(admin)
        )
    })
}

fn block_on_thread<T: Send + 'static>(
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    let thread = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    });
    match thread.join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The first column of the first row of `sql` on the database at `url`, as text (`''` for
/// NULL), from synchronous code.
pub fn scalar_blocking(url: &str, sql: &str) -> String {
    let (url, sql) = (url.to_string(), sql.to_string());
    block_on_thread(async move {
        let mut conn = connect(&url).await;
        let value: Option<String> = sqlx::query_scalar(sql.as_str())
            .fetch_one(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}: {sql}"));
        let _ = conn.close().await;
        value.unwrap_or_default()
    })
}

/// Runs `sql` on the database at `url`, from synchronous code.
pub fn execute_blocking(url: &str, sql: &str) {
    let (url, sql) = (url.to_string(), sql.to_string());
    block_on_thread(async move {
        let mut conn = connect(&url).await;
        conn.execute(sql.as_str())
            .await
            .unwrap_or_else(|e| panic!("{e}: {sql}"));
        let _ = conn.close().await;
    })
}
