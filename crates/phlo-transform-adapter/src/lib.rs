//! Engines behind one trait. The executor reaches a warehouse only through `Adapter`.

pub mod local;

use async_trait::async_trait;
use datafusion::sql::sqlparser::ast::Query;
use phlo_transform_core::Code;
use phlo_transform_project::Materialization;

pub use local::LocalEngine;

/// One model to materialise.
#[derive(Clone, Debug)]
pub struct MaterializeJob {
    pub model_id: String,
    pub model_name: String,
    /// Physical relation name (as `Adapter::relation_name` gave it).
    pub relation: String,
    pub materialization: Materialization,
    pub version: String,
    pub run_id: String,
    /// Run generation: the application-transaction version of the write.
    pub generation: i64,
    /// The executable query: physical names, ephemeral models inlined.
    pub query: Query,
}

#[derive(Clone, Debug, Default)]
pub struct MaterializeOutcome {
    /// Rows in the written table (views: none).
    pub rows: Option<u64>,
    /// The write for this (model, generation) was already committed: nothing was written.
    pub already_committed: bool,
}

#[derive(Clone, Debug)]
pub struct AdapterError {
    pub code: Code,
    pub message: String,
    /// True only for failures a retry may cure (I/O, contention), never for SQL errors.
    pub retryable: bool,
}

impl std::fmt::Display for AdapterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

#[async_trait]
pub trait Adapter: Send + Sync {
    fn name(&self) -> &'static str;
    /// The physical name a model is written to.
    fn relation_name(&self, model_name: &str) -> String;
    /// Does the model's relation exist physically?
    async fn relation_exists(&self, model_name: &str, materialization: Materialization) -> bool;
    async fn materialize(&self, job: &MaterializeJob) -> Result<MaterializeOutcome, AdapterError>;
    /// Number of rows `query` returns (tests: violating rows).
    async fn count_rows(&self, query: &Query) -> Result<u64, AdapterError>;
}
