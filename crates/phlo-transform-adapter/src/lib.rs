//! Engines behind one trait (SPEC §66). The scheduler, tests, freshness and planning reach a
//! warehouse only through [`Adapter`]; each engine is one implementation: the embedded local
//! engine ([`LocalEngine`], DataFusion + Delta) and the warehouse engines (PostgreSQL, DuckDB,
//! Trino). No macro dispatch: a `dyn Adapter` chosen from the configuration.
//!
//! # Contract every implementation keeps
//!
//! - **Names.** [`Adapter::model_relation`] and [`Adapter::source_relation`] say where a
//!   model is written and where a source is read, as identifier parts (`["assay",
//!   "results"]`); the compiler rewrites every relation of a model's AST to them before the
//!   adapter sees the query, so an adapter never resolves names itself.
//! - **SQL.** A job carries the model's own AST ([`MaterializeJob::query`]) with physical
//!   names; a warehouse adapter prints it in its dialect and wraps it in the DDL/DML it
//!   generates. [`Adapter::statements`] returns exactly what would be sent (`inspect --sql`).
//! - **Writes.** [`Adapter::create_table`] replaces a table atomically (readers never see a
//!   half-built table); [`Adapter::apply_incremental`] applies the job's strategy, and builds
//!   in full when the table is missing, when `job.table.full_rebuild` is set, or when the
//!   table records another strategy label (SPEC §29). Only a write that really happened may
//!   return `Ok`: the scheduler records the model version as materialised on `Ok` alone.
//! - **Cancellation** (SPEC §64). Each attempt gets an [`InFlight`]; an adapter registers the
//!   id of every warehouse query while it runs ([`InFlight::track`]). On `--model-timeout`,
//!   `--fail-fast` or Ctrl-C the scheduler calls [`Adapter::cancel`] for each registered id
//!   and then drops the attempt's future. An engine that cannot cancel a query returns `Ok`
//!   from `cancel` and relies on the dropped future.
//! - **Errors.** [`AdapterError::retryable`] only for failures a retry may cure (connection
//!   loss, serialization conflicts); SQL errors are never retryable. Error codes: A001 query
//!   failed, A002 write failed, A003 relation unavailable, A008 warehouse unreachable, A011
//!   query cancelled.

pub mod branching;
mod capabilities;
pub mod cause;
mod computed_view;
mod delta;
mod drivers;
#[cfg(feature = "duckdb")]
pub mod duck;
mod error;
pub mod external;
mod fetched;
pub mod field_marks;
mod freshness;
mod inflight;
mod job;
mod kept_rows;
pub mod local;
mod local_root_io;
pub mod naming;
pub mod pins;
mod position;
pub mod postgres;
mod relation;
mod relations;
mod reserved;
pub mod snapshot;
mod sqlgen;
mod targets;
pub mod trino;
pub mod warehouse;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::Query;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_project::{AdapterKind, Materialization, SourceDecl};

pub use capabilities::{
    DiffCapabilities, Driver, EnvironmentSupport, ModelStorage, Purpose, WarehouseCatalog,
};
pub use drivers::driver;
#[cfg(feature = "duckdb")]
pub use duck::DuckDbEngine;
/// The `duckdb` crate this adapter links, for callers that open the same database file.
#[cfg(feature = "duckdb")]
pub use duckdb;
pub use error::AdapterError;
pub use external::SchemaRead;
pub use inflight::{InFlight, QueryId, QueryStatistics};
pub use job::{MaterializeJob, MaterializeOutcome, TableSpec};
pub use local::LocalEngine;
pub use postgres::PostgresEngine;
pub use relation::{ColumnInfo, Relation, RelationInfo, RelationKind};
pub use reserved::RESERVED_SUFFIXES;
pub use targets::{open, open_diagnosed, open_help, unreadable_relations};

/// What the adapter knows about a source when asked (SPEC §12 step 6, §34).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceState {
    /// The latest value of the requested timestamp column, as microseconds since the epoch
    /// (UTC); `None` when it has no non-null value or none was asked for.
    pub latest_timestamp: Option<i64>,
    /// An engine-level version of the source's contents (an Iceberg snapshot id); `None` when
    /// the engine has no such notion.
    pub version: Option<String>,
}

#[async_trait]
pub trait Adapter: Send + Sync {
    /// The engine this adapter runs on; its capabilities beyond building are its
    /// [`driver`]'s.
    fn kind(&self) -> AdapterKind;

    /// The adapter's type (`local`, `postgres`, `duckdb`, `trino`): recorded with every
    /// materialisation, so that a model built by another adapter is rebuilt
    /// (`adapter_change`, SPEC §39).
    fn name(&self) -> &str {
        self.kind().as_str()
    }

    /// The dialect models are type-checked against and printed in (`dialects/<name>.toml`):
    /// by default the adapter's name (`postgres`, `duckdb`, `trino`); `datafusion` for the
    /// local engine.
    fn dialect(&self) -> &str {
        self.name()
    }

    /// The physical relation model `model_name` (`assay.results`) is written to.
    fn model_relation(&self, model_name: &str) -> Relation;

    /// The physical relation source `source_name` (`raw.orders`) is read from.
    fn source_relation(&self, source_name: &str) -> Relation;

    /// What exists at `relation` now: its kind, and its columns and recorded build strategy
    /// where the engine has them at hand; `Ok(None)` when nothing exists there.
    ///
    /// Implement one of `introspect_relation` and [`Adapter::introspect_relations`]: each
    /// one's default calls the other (this one asks for a list of one relation), so an
    /// engine that implements neither recurses forever.
    async fn introspect_relation(
        &self,
        relation: &Relation,
    ) -> Result<Option<RelationInfo>, AdapterError> {
        let mut infos = self
            .introspect_relations(std::slice::from_ref(relation))
            .await?;
        Ok(infos.pop().flatten())
    }

    /// [`Adapter::introspect_relation`] for many relations, in order. Catalog engines answer
    /// it with one catalog query; the default asks one by one.
    async fn introspect_relations(
        &self,
        relations: &[Relation],
    ) -> Result<Vec<Option<RelationInfo>>, AdapterError> {
        let mut out = Vec::with_capacity(relations.len());
        for r in relations {
            out.push(self.introspect_relation(r).await?);
        }
        Ok(out)
    }

    /// The strategy label the table at `relation` records (`TableSpec::label`); `None` when
    /// there is no table or it records none. Default: what introspection reports.
    async fn built_strategy(&self, relation: &Relation) -> Result<Option<String>, AdapterError> {
        Ok(self
            .introspect_relation(relation)
            .await?
            .and_then(|info| info.strategy))
    }

    /// Runs `query` (physical names) and returns the number of rows it produced: data tests
    /// count their violating rows with it.
    async fn execute(&self, query: &Query, inflight: &InFlight) -> Result<u64, AdapterError>;

    /// Runs `query` (physical names) and returns its rows as Arrow batches with their schema:
    /// how `diff` reads a warehouse side (DuckDB, PostgreSQL, and the model's SQL on Trino,
    /// whose tables it reads as Iceberg files). Held in memory whole (a side is read once per
    /// comparison strategy that needs it). The embedded engine says it does not (A006):
    /// `diff` reads its tables as DataFusion frames.
    async fn fetch(
        &self,
        query: &Query,
        inflight: &InFlight,
    ) -> Result<(SchemaRef, Vec<RecordBatch>), AdapterError> {
        let _ = (query, inflight);
        Err(AdapterError::new(
            codes::ENGINE_FAILED,
            format!(
                "the {} adapter does not return rows to phlo-transform yet",
                self.name()
            ),
        ))
    }

    /// Builds a table from `job.query` in full, replacing any relation at `job.relation`
    /// atomically.
    async fn create_table(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError>;

    /// Creates or replaces a view over `job.query` at `job.relation`.
    async fn create_view(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError>;

    /// Writes `job.query` into the existing table with the job's incremental strategy
    /// (append, key merge, partition replace, time window), or builds it in full when the
    /// contract above says so.
    async fn apply_incremental(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError>;

    /// Drops whatever is at `relation` (table or view); dropping nothing is not an error.
    async fn drop_relation(&self, relation: &Relation) -> Result<(), AdapterError>;

    /// The state of `source`, with the latest value of `timestamp_column` when one is given
    /// (source freshness, SPEC §34).
    async fn source_state(
        &self,
        source: &SourceDecl,
        timestamp_column: Option<&str>,
    ) -> Result<SourceState, AdapterError>;

    /// Cancels the running warehouse query `query` (registered in an [`InFlight`]).
    async fn cancel(&self, query: &QueryId) -> Result<(), AdapterError>;

    /// A proof of the physical contents of `relation` after a write (an Iceberg snapshot
    /// id); `None` for engines that cannot prove identity, which then never authorise cache
    /// reuse across environments (SPEC §39).
    async fn output_identity(&self, relation: &Relation) -> Result<Option<String>, AdapterError>;

    /// The SQL statements materialising `job` sends, in order, as sent (`inspect --sql`).
    /// Incremental jobs show the incremental statements against an existing table.
    fn statements(&self, job: &MaterializeJob) -> Result<Vec<String>, AdapterError>;

    /// Materialises `job` by its materialisation: views through `create_view`, tables
    /// through `create_table`, incremental models through `apply_incremental`.
    async fn materialize(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        match job.materialization {
            Materialization::View => self.create_view(job, inflight).await,
            Materialization::Table => self.create_table(job, inflight).await,
            Materialization::Incremental => self.apply_incremental(job, inflight).await,
            Materialization::Ephemeral => Err(AdapterError::new(
                codes::QUERY_FAILED,
                "ephemeral models are inlined, never materialised",
            )),
        }
    }
}
