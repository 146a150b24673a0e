//! State is a database, artifacts are exports (decision 8). `StateStore` is what the planner
//! and the executor see; `SqliteStateStore` is the default backend at
//! `.phlo/transform/state.db`.

mod records;
mod sqlite;

pub use records::{MaterializedVersion, NodeRecord, RunRecord};
pub use sqlite::SqliteStateStore;

use async_trait::async_trait;
use std::collections::HashMap;

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
    /// Upserts one node's record as it transitions.
    async fn record_node(&self, run_id: &str, node: &NodeRecord) -> Result<()>;
    async fn finish_run(&self, run_id: &str, status: &str, finished_at: &str) -> Result<()>;
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
}
