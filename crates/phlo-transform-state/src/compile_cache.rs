//! The compile cache's packs in PostgreSQL (issue 42): a team's or CI's shared cache, in the
//! state database or any other (`[cache] url = "postgres://…"`). One table, created on first
//! use; it is a cache, not state, so it is not part of the state schema's migrations and a
//! store that cannot be reached only costs speed.
//!
//! The compiler calls a [`PackStore`] synchronously, often from inside the CLI's async
//! runtime, where blocking on another future would panic. So the store runs its own thread
//! with a single-threaded runtime and one connection, opened on the first request; callers
//! send requests and wait on a plain channel.

use phlo_transform_core::pack_store::{Pack, PackStore};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Row};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use crate::redact_url;

/// A cache is worth only a short wait: an unreachable server is a warning after this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long packs of other builds are kept (a team upgrading one machine at a time).
const KEEP_OTHER_BUILDS: &str = "30 days";

const CREATE: &str = "CREATE TABLE IF NOT EXISTS phlo_compile_cache_packs (
    build TEXT NOT NULL,
    stage TEXT NOT NULL,
    id TEXT NOT NULL,
    bytes BYTEA NOT NULL,
    written_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (build, stage, id)
)";

/// Compile-cache packs in the PostgreSQL database at a URL.
pub struct PostgresPackStore {
    url: String,
    worker: Mutex<Option<tokio::sync::mpsc::UnboundedSender<Request>>>,
}

impl std::fmt::Debug for PostgresPackStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresPackStore")
            .field("url", &redact_url(&self.url))
            .finish()
    }
}

impl PostgresPackStore {
    /// A store at `url` (`postgres://` or `postgresql://`); nothing connects until the first
    /// request. The URL's credentials are registered as secrets.
    pub fn new(url: &str) -> Self {
        phlo_transform_core::secrets::register_url(url);
        PostgresPackStore {
            url: url.to_string(),
            worker: Mutex::new(None),
        }
    }

    fn ask<T>(
        &self,
        make: impl FnOnce(mpsc::Sender<Result<T, String>>) -> Request,
    ) -> Result<T, String> {
        let (reply, answer) = mpsc::channel();
        let sent = {
            let mut worker = self.worker.lock().unwrap_or_else(|e| e.into_inner());
            let tx = worker.get_or_insert_with(|| spawn(self.url.clone()));
            tx.send(make(reply)).is_ok()
        };
        let gone = || {
            format!(
                "the compile cache connection to {} stopped",
                redact_url(&self.url)
            )
        };
        if !sent {
            return Err(gone());
        }
        answer.recv().unwrap_or_else(|_| Err(gone()))
    }
}

impl PackStore for PostgresPackStore {
    fn packs(&self, build: &str, stage: &str) -> Result<Vec<Pack>, String> {
        let (build, stage) = (build.to_string(), stage.to_string());
        self.ask(|reply| Request::Packs {
            build,
            stage,
            reply,
        })
    }

    fn add(&self, build: &str, stage: &str, bytes: &[u8]) -> Result<(), String> {
        let (build, stage, bytes) = (build.to_string(), stage.to_string(), bytes.to_vec());
        self.ask(|reply| Request::Add {
            build,
            stage,
            bytes,
            reply,
        })
    }

    fn remove(&self, build: &str, stage: &str, ids: &[String]) -> Result<(), String> {
        let (build, stage, ids) = (build.to_string(), stage.to_string(), ids.to_vec());
        self.ask(|reply| Request::Remove {
            build,
            stage,
            ids,
            reply,
        })
    }

    fn prune(&self, build: &str) -> Result<(), String> {
        let build = build.to_string();
        self.ask(|reply| Request::Prune { build, reply })
    }

    fn describe(&self) -> String {
        redact_url(&self.url)
    }
}

type Reply<T> = mpsc::Sender<Result<T, String>>;

enum Request {
    Packs {
        build: String,
        stage: String,
        reply: Reply<Vec<Pack>>,
    },
    Add {
        build: String,
        stage: String,
        bytes: Vec<u8>,
        reply: Reply<()>,
    },
    Remove {
        build: String,
        stage: String,
        ids: Vec<String>,
        reply: Reply<()>,
    },
    Prune {
        build: String,
        reply: Reply<()>,
    },
}

impl Request {
    fn fail(self, e: String) {
        // A caller that stopped waiting needs no answer.
        match self {
            Request::Packs { reply, .. } => drop(reply.send(Err(e))),
            Request::Add { reply, .. }
            | Request::Remove { reply, .. }
            | Request::Prune { reply, .. } => drop(reply.send(Err(e))),
        }
    }

    async fn serve(self, pool: &PgPool, shown: &str) {
        let failed = |e: sqlx::Error| format!("the compile cache in {shown}: {e}");
        // A caller that stopped waiting needs no answer.
        match self {
            Request::Packs {
                build,
                stage,
                reply,
            } => drop(
                reply.send(
                    sqlx::query(
                        "SELECT id, bytes FROM phlo_compile_cache_packs
                     WHERE build = $1 AND stage = $2 ORDER BY id",
                    )
                    .bind(&build)
                    .bind(&stage)
                    .fetch_all(pool)
                    .await
                    .map_err(failed)
                    .map(|rows| {
                        rows.into_iter()
                            .map(|r| Pack {
                                id: r.get("id"),
                                bytes: r.get("bytes"),
                            })
                            .collect()
                    }),
                ),
            ),
            Request::Add {
                build,
                stage,
                bytes,
                reply,
            } => drop(
                reply.send(
                    sqlx::query(
                        "INSERT INTO phlo_compile_cache_packs (build, stage, id, bytes)
                     VALUES ($1, $2, $3, $4)",
                    )
                    .bind(&build)
                    .bind(&stage)
                    .bind(new_id())
                    .bind(&bytes)
                    .execute(pool)
                    .await
                    .map(drop)
                    .map_err(failed),
                ),
            ),
            Request::Remove {
                build,
                stage,
                ids,
                reply,
            } => drop(
                reply.send(
                    sqlx::query(
                        "DELETE FROM phlo_compile_cache_packs
                     WHERE build = $1 AND stage = $2 AND id = ANY($3)",
                    )
                    .bind(&build)
                    .bind(&stage)
                    .bind(&ids)
                    .execute(pool)
                    .await
                    .map(drop)
                    .map_err(failed),
                ),
            ),
            Request::Prune { build, reply } => drop(
                reply.send(
                    sqlx::query(&format!(
                        "DELETE FROM phlo_compile_cache_packs
                     WHERE build <> $1 AND written_at < now() - interval '{KEEP_OTHER_BUILDS}'"
                    ))
                    .bind(&build)
                    .execute(pool)
                    .await
                    .map(drop)
                    .map_err(failed),
                ),
            ),
        }
    }
}

/// A pack id no other writer uses, in the order packs were written.
fn new_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{nanos:032x}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The store's thread: connects on start and serves requests until the store is dropped.
fn spawn(url: String) -> tokio::sync::mpsc::UnboundedSender<Request> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Request>();
    let started = std::thread::Builder::new()
        .name("phlo-compile-cache".into())
        .spawn(move || {
            let shown = redact_url(&url);
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    while let Some(request) = rx.blocking_recv() {
                        request.fail(format!("cannot start the compile cache's runtime: {e}"));
                    }
                    return;
                }
            };
            runtime.block_on(async move {
                let pool = connect(&url, &shown).await;
                while let Some(request) = rx.recv().await {
                    match &pool {
                        Ok(pool) => request.serve(pool, &shown).await,
                        Err(e) => request.fail(e.clone()),
                    }
                }
                if let Ok(pool) = pool {
                    pool.close().await;
                }
            });
        });
    if let Err(e) = started {
        // The channel's receiver is gone with the closure: every request answers "stopped".
        eprintln!("warning: cannot start the compile cache's thread: {e}");
    }
    tx
}

async fn connect(url: &str, shown: &str) -> Result<PgPool, String> {
    let clean = |e: &dyn std::fmt::Display| phlo_transform_core::secrets::scrub(&e.to_string());
    let options = PgConnectOptions::from_str(url)
        .map_err(|e| format!("invalid PostgreSQL URL {shown}: {}", clean(&e)))?
        .application_name("phlo-transform compile cache")
        .disable_statement_logging();
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_with(options);
    let pool = match tokio::time::timeout(CONNECT_TIMEOUT, pool).await {
        Ok(Ok(pool)) => pool,
        Ok(Err(e)) => return Err(format!("cannot connect to {shown}: {}", clean(&e))),
        Err(_) => {
            return Err(format!(
                "cannot connect to {shown}: no answer within {}s",
                CONNECT_TIMEOUT.as_secs()
            ))
        }
    };
    // Concurrent first compiles would race to create the table: one at a time.
    let mut tx = pool
        .begin()
        .await
        .map_err(|e| format!("{shown}: {}", clean(&e)))?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('phlo_compile_cache_packs'))")
        .execute(&mut *tx)
        .await
        .map_err(|e| format!("{shown}: {}", clean(&e)))?;
    sqlx::query(CREATE).execute(&mut *tx).await.map_err(|e| {
        format!(
            "cannot create the compile cache table in {shown}: {}",
            clean(&e)
        )
    })?;
    tx.commit()
        .await
        .map_err(|e| format!("{shown}: {}", clean(&e)))?;
    Ok(pool)
}
