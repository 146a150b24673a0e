//! State is a database, artifacts are exports (decision 8). `StateStore` is what the planner
//! and the executor see; `SqliteStateStore` is the default backend at
//! `.phlo/transform/state.db`, `PostgresStateStore` the shared one selected by a
//! `postgres://` URL. Both have the same schema, migrations and queries.

mod compile_cache;
mod location;
mod postgres;
mod records;
mod refs;
mod sqlite;
mod store;
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;

pub use compile_cache::PostgresPackStore;
pub use location::{open, open_existing, StateLocation};
pub use postgres::PostgresStateStore;
pub use records::{
    as_of_text, AsOf, AttemptRecord, MaterializedVersion, ModelRunRecord, NodeRecord, QueryRecord,
    RecordedColumn, RunRecord, RunSummary,
};
pub use refs::{
    pointer_hash, CreatedFrom, EvidenceRecord, Pointer, RefEvent, RefRecord, RefSwap, RefWrite,
    RunBinding, VersionSwap,
};
pub use sqlite::SqliteStateStore;

use async_trait::async_trait;
use std::collections::HashMap;

/// Never show credentials: `postgres://user:secret@host/db?password=x` →
/// `postgres://user:***@host/db?password=***` (the one redaction, in core).
pub use phlo_transform_core::secrets::redact_url;

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StateError {
    pub message: String,
}

impl StateError {
    pub(crate) fn from_sqlx(context: &str, e: sqlx::Error) -> Self {
        StateError {
            message: format!("{context}: {e}"),
        }
    }
}

pub type Result<T> = std::result::Result<T, StateError>;

#[async_trait]
pub trait StateStore: Send + Sync {
    /// Stores a plan under its id (idempotent: the same id stores the same plan).
    async fn store_plan(&self, plan_id: &str, body: &serde_json::Value) -> Result<()>;
    async fn load_plan(&self, plan_id: &str) -> Result<Option<serde_json::Value>>;
    /// Written before any node is scheduled.
    async fn begin_run(&self, run: &RunRecord) -> Result<()>;
    /// Upserts the records of nodes as they transition, all of them or none.
    async fn record_nodes(&self, run_id: &str, nodes: &[NodeRecord]) -> Result<()>;
    async fn finish_run(&self, run_id: &str, status: &str, finished_at: &str) -> Result<()>;
    /// Marks a run `running` again under its own id (`run --resume`), now executing `plan_id`.
    async fn reopen_run(&self, run_id: &str, plan_id: &str) -> Result<()>;
    /// Records one attempt of a node (upsert by run, kind, node and attempt number).
    async fn record_attempt(&self, run_id: &str, attempt: &AttemptRecord) -> Result<()>;
    /// Every attempt of a run, by kind, node and attempt number.
    async fn run_attempts(&self, run_id: &str) -> Result<Vec<AttemptRecord>>;
    /// Records a passed materialisation. Ordered: a record from an older run generation never
    /// overwrites a newer one.
    async fn record_materialization(&self, m: &MaterializedVersion) -> Result<()>;
    /// Materialised versions of an environment, by model id.
    async fn materializations(
        &self,
        environment: &str,
    ) -> Result<HashMap<String, MaterializedVersion>>;
    /// Most recent runs first.
    async fn runs(&self, limit: i64) -> Result<Vec<RunRecord>>;
    async fn run_nodes(&self, run_id: &str) -> Result<Vec<NodeRecord>>;
    /// Most recent runs first, each with its node counts by kind and status.
    async fn run_summaries(&self, limit: i64) -> Result<Vec<RunSummary>>;
    /// Runs whose id starts with `prefix`, most recent first (at most `limit`).
    async fn runs_with_prefix(&self, prefix: &str, limit: i64) -> Result<Vec<RunRecord>>;
    /// The materialised versions of one model (by name or id), one per environment.
    async fn model_materializations(&self, model: &str) -> Result<Vec<MaterializedVersion>>;
    /// One model's results in the most recent runs that planned it, most recent first.
    async fn model_history(&self, model: &str, limit: i64) -> Result<Vec<ModelRunRecord>>;
    /// Every model name the state has a record of, sorted.
    async fn model_names(&self) -> Result<Vec<String>>;
    /// Takes the writer lease of `request.scope` when it is free, expired, already the
    /// requester's, or held by `take_over_from`; `None` when taken, else who holds it.
    async fn acquire_lease(&self, request: &LeaseRequest<'_>) -> Result<Option<LeaseHolder>>;
    /// Extends the lease `holder` holds; false when it no longer holds it.
    async fn renew_lease(&self, scope: &str, holder: &str, expires_ms: i64) -> Result<bool>;
    /// Gives the lease up (nothing happens when `holder` does not hold it).
    async fn release_lease(&self, scope: &str, holder: &str) -> Result<()>;
    /// Every recorded reference of the embedded engine's environments, by name.
    async fn refs(&self) -> Result<Vec<RefRecord>>;
    /// Every promotion and rollback record, most recent first.
    async fn ref_events(&self) -> Result<Vec<RefEvent>>;
    /// Records `evidence` once: a record with its id already there is kept as it is.
    async fn record_evidence(&self, evidence: &EvidenceRecord) -> Result<()>;
    /// The evidence of `kind` about `reference`, most recent first.
    async fn evidence(&self, kind: &str, reference: &str) -> Result<Vec<EvidenceRecord>>;
    /// Applies `swap` in one transaction; `false` (and nothing written) when a reference it
    /// expects at a hash has moved.
    async fn swap_refs(&self, swap: &RefSwap) -> Result<bool>;
    /// Marks every run of `environment` still `running` as `interrupted` and returns their
    /// ids. Only called by the holder of the environment's writer lease: no live process is
    /// writing those runs any more.
    async fn interrupt_stale_runs(
        &self,
        environment: &str,
        finished_at: &str,
    ) -> Result<Vec<String>>;
}

/// A request for the writer lease of one scope (see `StateStore::acquire_lease`).
#[derive(Clone, Debug)]
pub struct LeaseRequest<'a> {
    pub scope: &'a str,
    pub holder: &'a str,
    pub acquired_at: &'a str,
    /// Milliseconds since the Unix epoch, by the requester's clock.
    pub now_ms: i64,
    pub ttl_ms: i64,
    /// A holder found dead: its lease is taken over even before it expires.
    pub take_over_from: Option<&'a str>,
}

/// Who holds a writer lease, and until when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseHolder {
    pub holder: String,
    pub acquired_at: String,
    pub expires_ms: i64,
}
