//! One model to materialise, and what materialising it did.

use datafusion::sql::sqlparser::ast::Query;
use phlo_transform_project::{
    strategy_label, IncrementalStrategy, MaintenanceSection, Materialization,
};

use crate::Relation;

/// One model to materialise.
#[derive(Clone, Debug)]
pub struct MaterializeJob {
    pub model_id: String,
    pub model_name: String,
    /// Physical relation (as `Adapter::model_relation` gave it).
    pub relation: Relation,
    pub materialization: Materialization,
    pub version: String,
    pub run_id: String,
    /// Run generation: the application-transaction version of the write.
    pub generation: i64,
    /// The executable query: the model's own AST with physical names, ephemeral models
    /// inlined.
    pub query: Query,
    /// How a table or incremental model is written (views ignore it).
    pub table: TableSpec,
    /// The model's output column names as compiled (empty when unknown); the engine's own
    /// catalog is authoritative when they differ.
    pub columns: Vec<String>,
    /// Workspace-relative path of the model file, and its text, so that an engine's error
    /// position can be shown at the model's own line and column.
    pub path: String,
    pub text: std::sync::Arc<str>,
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
    /// What the table records as its build strategy (Delta property `phlo.strategy`, a
    /// table comment in SQL warehouses); a different label on an existing table means a full
    /// rebuild (SPEC §29).
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
    /// The adapter's proof of the written contents (`Adapter::output_identity`), when it has
    /// one.
    pub output_identity: Option<String>,
    /// What the adapter read of the written relation (Iceberg snapshot, schema, partition
    /// spec, properties), recorded with the materialisation for `inspect` (SPEC §69).
    pub physical_state: Option<serde_json::Value>,
}
