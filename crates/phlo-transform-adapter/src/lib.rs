//! Engines behind one trait. The executor reaches a warehouse only through `Adapter`.

pub mod cause;
mod delta;
mod freshness;
pub mod local;
pub mod snapshot;
pub mod trino;
pub mod warehouse;

use async_trait::async_trait;
use datafusion::sql::sqlparser::ast::Query;
use phlo_transform_core::Code;
use phlo_transform_project::{
    strategy_label, IncrementalStrategy, MaintenanceSection, Materialization,
};

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
    /// How a table or incremental model is written (views ignore it).
    pub table: TableSpec,
}

/// How a table model is written: full or incremental, and what the table guarantees.
#[derive(Clone, Debug, Default)]
pub struct TableSpec {
    /// `@incremental` strategy; `None` for `@table`.
    pub incremental: Option<IncrementalStrategy>,
    /// Rebuild in full although the table exists (`--full-refresh`, `--force`, a strategy
    /// change). A missing table is always built in full.
    pub full_rebuild: bool,
    /// `@key` columns: NOT NULL in the table, and the merge key of `window=` models.
    pub key: Vec<String>,
    /// Further columns the model guarantees non-null (`@not-null`, enforced contracts).
    pub not_null: Vec<String>,
    pub maintenance: MaintenanceSection,
}

impl TableSpec {
    /// What the table records as its build strategy (Delta property `phlo.strategy`); a
    /// different label on an existing table means a full rebuild (SPEC §29).
    pub fn label(&self) -> String {
        strategy_label(self.incremental.as_ref(), &self.key)
    }
}

#[derive(Clone, Debug, Default)]
pub struct MaterializeOutcome {
    /// Rows in the written table (views: none).
    pub rows: Option<u64>,
    /// The write for this (model, generation) was already committed: nothing was written.
    pub already_committed: bool,
    /// What the write did: `full`, `append`, `merge`, `replace partitions`, `no change`
    /// (tables only).
    pub write: Option<String>,
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
    /// The strategy label (`TableSpec::label`) the model's existing table was built with;
    /// `None` when there is no table or it records none.
    async fn built_strategy(&self, model_name: &str) -> Option<String>;
    async fn materialize(&self, job: &MaterializeJob) -> Result<MaterializeOutcome, AdapterError>;
    /// Number of rows `query` returns (tests: violating rows).
    async fn count_rows(&self, query: &Query) -> Result<u64, AdapterError>;
    /// The latest value of `column` in `source`, as microseconds since the epoch (UTC);
    /// `None` when it has no non-null value. Measures source freshness (SPEC §34).
    async fn latest_timestamp(
        &self,
        source: &phlo_transform_project::SourceDecl,
        column: &str,
    ) -> Result<Option<i64>, AdapterError>;
}
