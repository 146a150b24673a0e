//! The embedded default engine (decision 7): a DataFusion session with the workspace's sources
//! registered, `@table` and `@incremental` models written as Delta tables under
//! `.phlo/warehouse/<model>/` exactly once per state (see `delta`: the application
//! transaction is checked before writing, since delta-rs does not enforce it), and `@view`
//! models stored as their SQL in
//! `.phlo/warehouse/<model>.view.json`. A session opens a model's relation when a query first
//! reads it (see `relations`). With `default_schema` a model's relation is `<schema>.<table>`
//! as a SQL warehouse would place it (`crate::naming::local_model`), in the warehouse and in
//! the session alike.

use async_trait::async_trait;
use datafusion::catalog::TableProvider;
use datafusion::execution::context::SessionContext;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Query, Statement};
use datafusion::sql::TableReference;
use deltalake::delta_datafusion::planner::DeltaPlanner;
use phlo_transform_compiler::semantics::Semantics;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_project::{Materialization, SourceFormat};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::computed_view::ComputedView;
use crate::error::{err, io_err};
use crate::kept_rows::{Budget, KeptTable};
use crate::pins::{Pin, Pins};
use crate::relations::{delta_provider, open_delta_provider, Relations, ViewDefinition};
use crate::warehouse::{Warehouse, WarehousePath};
use crate::{
    Adapter, AdapterError, InFlight, MaterializeJob, MaterializeOutcome, QueryId, Relation,
    RelationInfo, RelationKind, SourceState,
};

pub use crate::delta::APP_ID_PREFIX;

pub struct LocalEngine {
    ctx: SessionContext,
    warehouse: Warehouse,
    /// `default_schema` of the target: every model's relation is in it (see `naming`).
    default_schema: Option<String>,
    /// The target dialect's semantics the engine follows where it can exactly (NULL ordering,
    /// integer division, `extract` types).
    semantics: Semantics,
    /// Models this engine's environment reads from outside its own root (a virtual
    /// environment's base tables), by model name. A model written here loses its pin.
    /// Shared with the session's [`Relations`], which open pinned relations where they point.
    pins: Pins,
    /// Memory left for the rows kept for the readers of the views written in this session
    /// ([`ComputedView`]).
    view_rows: Budget,
    /// The same for the tables created in this session ([`KeptTable`]).
    table_rows: Budget,
}

impl LocalEngine {
    /// A session over `warehouse` with every readable source of `c` registered and every
    /// model relation of `c` (placed in `default_schema` when set) opened when a query first
    /// reads it (see `relations`). Sources that cannot be registered are reported, not fatal:
    /// the models that read them fail when they run.
    pub async fn open(
        warehouse: &Path,
        c: &Compilation,
        default_schema: Option<&str>,
    ) -> (LocalEngine, Vec<AdapterError>) {
        Self::open_pinned(warehouse, default_schema, Default::default(), c).await
    }

    /// [`LocalEngine::open`] for a virtual environment: `warehouse` is the environment's own
    /// root (where it writes) and `pins` the models it reads from elsewhere.
    pub async fn open_pinned(
        warehouse: &Path,
        default_schema: Option<&str>,
        pins: HashMap<String, Pin>,
        c: &Compilation,
    ) -> (LocalEngine, Vec<AdapterError>) {
        let models = c
            .models
            .iter()
            .filter(|m| m.materialization != Materialization::Ephemeral)
            .map(|m| {
                let name = crate::naming::local_model(m.name.as_str(), default_schema);
                (name, m.materialization)
            })
            .collect();
        let engine = Self::with_relations(
            warehouse,
            default_schema,
            c.dialect.semantics.clone(),
            models,
            pins,
        );
        let mut problems = Vec::new();
        for source in &c.workspace.sources {
            let Some(state) = c.catalog.sources.get(&source.name) else {
                continue;
            };
            if let Some(reason) = &state.unreadable_data {
                problems.push(err(
                    codes::RELATION_UNAVAILABLE,
                    format!("source `{}`: {reason}", source.name),
                ));
                continue;
            }
            if let Err(e) = engine
                .register_source(&source.name, source.format, &state.read_path)
                .await
            {
                problems.push(e);
            }
        }
        (engine, problems)
    }

    /// An engine with nothing registered: enough to name relations and see whether they exist
    /// (what planning needs), without opening any table.
    pub fn unregistered(warehouse: &Path, default_schema: Option<&str>) -> LocalEngine {
        Self::with_relations(
            warehouse,
            default_schema,
            Semantics::default(),
            HashMap::new(),
            HashMap::new(),
        )
    }

    /// [`LocalEngine::unregistered`] for a virtual environment (see [`LocalEngine::open_pinned`]).
    pub fn unregistered_pinned(
        warehouse: &Path,
        default_schema: Option<&str>,
        pins: HashMap<String, Pin>,
    ) -> LocalEngine {
        Self::with_relations(
            warehouse,
            default_schema,
            Semantics::default(),
            HashMap::new(),
            pins,
        )
    }

    /// Where relation `name` is read: its pin (folder and version), else this engine's own
    /// table folder at its latest version.
    pub(crate) fn read_location(
        &self,
        name: &str,
    ) -> Result<(std::path::PathBuf, Option<i64>), AdapterError> {
        match self.pin(name).filter(|p| !p.view) {
            Some(pin) => Ok((pin.path, pin.delta_version)),
            None => Ok((self.table_path(name)?.as_path().to_path_buf(), None)),
        }
    }

    fn pin(&self, model: &str) -> Option<Pin> {
        crate::pins::read(&self.pins).get(model).cloned()
    }

    fn unpin(&self, model: &str) -> Option<Pin> {
        crate::pins::write(&self.pins).remove(model)
    }

    /// A session whose default schema opens `models`' relations on first read, the pinned
    /// ones from where their pins point.
    fn with_relations(
        warehouse: &Path,
        default_schema: Option<&str>,
        semantics: Semantics,
        models: HashMap<String, Materialization>,
        pins: HashMap<String, Pin>,
    ) -> LocalEngine {
        let pins: Pins = Arc::new(std::sync::RwLock::new(pins));
        let config = semantics.session_config();
        // Delta's planner turns delta-rs's write nodes into execution plans.
        let state = SessionStateBuilder::new()
            .with_default_features()
            .with_config(config)
            .with_query_planner(DeltaPlanner::new())
            .with_optimizer_rules(phlo_transform_compiler::output::type_preserving_rules())
            .build();
        let ctx = SessionContext::new_with_state(state);
        let session = ctx.state_weak_ref();
        let relations = Relations::new(
            models,
            pins.clone(),
            Warehouse::new(warehouse),
            semantics.clone(),
            Box::new(move || session.upgrade().map(|s| s.read().clone())),
        );
        let catalog = ctx.state().config().options().catalog.clone();
        ctx.catalog(&catalog.default_catalog)
            .expect("a session has its default catalog")
            .register_schema(&catalog.default_schema, Arc::new(relations))
            .expect("the default catalog accepts schemas");
        LocalEngine {
            ctx,
            warehouse: Warehouse::new(warehouse),
            default_schema: default_schema.map(str::to_string),
            semantics,
            pins,
            view_rows: crate::kept_rows::budget(),
            table_rows: crate::kept_rows::budget(),
        }
    }

    /// The one-part name model `model` has in the session and the warehouse.
    pub fn relation_name(&self, model: &str) -> String {
        crate::naming::local_model(model, self.default_schema.as_deref())
    }

    /// The session: sources registered, model relations opened on first read.
    pub fn session(&self) -> &SessionContext {
        &self.ctx
    }

    pub(crate) fn table_path(&self, model: &str) -> Result<WarehousePath, AdapterError> {
        self.warehouse.table(model)
    }

    fn view_path(&self, model: &str) -> Result<WarehousePath, AdapterError> {
        self.warehouse.view(model)
    }

    fn register(&self, name: &str, provider: Arc<dyn TableProvider>) -> Result<(), AdapterError> {
        // Re-registering replaces what an earlier write or another session registered.
        let table = TableReference::bare(name);
        let _ = self.ctx.deregister_table(table.clone());
        self.ctx
            .register_table(table, provider)
            .map(|_| ())
            .map_err(|e| {
                err(
                    codes::RELATION_UNAVAILABLE,
                    format!("cannot register `{name}`: {e}"),
                )
            })
    }

    async fn register_source(
        &self,
        name: &str,
        format: SourceFormat,
        path: &Path,
    ) -> Result<(), AdapterError> {
        let location = path.to_string_lossy().to_string();
        let unavailable = |e: String| {
            err(
                codes::RELATION_UNAVAILABLE,
                format!("source `{name}` ({location}): {e}"),
            )
        };
        let table = TableReference::bare(name);
        match format {
            SourceFormat::Parquet => self
                .ctx
                .register_parquet(table, &location, ParquetReadOptions::default())
                .await
                .map_err(|e| unavailable(e.to_string())),
            SourceFormat::Csv => self
                .ctx
                .register_csv(table, &location, CsvReadOptions::new().has_header(true))
                .await
                .map_err(|e| unavailable(e.to_string())),
            SourceFormat::Delta => {
                let provider = open_delta_provider(path, &self.ctx.state())
                    .await
                    .map_err(unavailable)?;
                self.register(name, provider)
            }
            SourceFormat::Iceberg => {
                let provider = open_iceberg_provider(path, name, None, None)
                    .await
                    .map_err(|e| unavailable(e.to_string()))?;
                self.register(name, provider)
            }
            // Schema-only: there is no data; models over it fail with "table not found".
            SourceFormat::Declared => Ok(()),
        }
    }

    async fn plan_query(&self, query: &Query) -> Result<LogicalPlan, AdapterError> {
        let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query.clone()))));
        let plan = self
            .ctx
            .state()
            .statement_to_plan(statement)
            .await
            .map_err(|e| err(codes::QUERY_FAILED, e.strip_backtrace()))?;
        let rewritten = self
            .semantics
            .rewrite(plan)
            .map_err(|e| err(codes::QUERY_FAILED, e.strip_backtrace()))?;
        // The plan whose schema `check` reported: the table is declared with it.
        phlo_transform_compiler::output::executable(&self.ctx.state(), rewritten)
            .map_err(|e| err(codes::QUERY_FAILED, e.strip_backtrace()))
    }

    async fn write_table(&self, job: &MaterializeJob) -> Result<MaterializeOutcome, AdapterError> {
        let name = job.relation.table();
        let table = self.table_path(name)?;
        let old_view = self.view_path(name)?;
        let plan = self.plan_query(&job.query).await?;
        // A model pinned to another table (another environment's, or an earlier version of
        // its own) is rebuilt in full: an incremental step would continue this root's latest
        // table, not the one the environment reads.
        let pinned_elsewhere = self.unpin(name).is_some_and(|pin| {
            pin.path != table.as_path() || pin.delta_version != crate::pins::latest_version(&table)
        });
        let written = match pinned_elsewhere {
            true => {
                let mut full = job.clone();
                full.table.full_rebuild = true;
                crate::delta::write(&self.ctx, &table, &full, plan).await?
            }
            false => crate::delta::write(&self.ctx, &table, job, plan).await?,
        };
        let provider = delta_provider(&written.table, &self.ctx.state())
            .await
            .map_err(|e| err(codes::RELATION_UNAVAILABLE, format!("table `{name}`: {e}")))?;
        let provider = match written.rows {
            Some(rows) => KeptTable::or_stored(provider, rows, &self.table_rows),
            None => provider,
        };
        self.register(name, provider)?;
        // A model that was a view before is a table now: its old definition goes.
        let _ = std::fs::remove_file(old_view.as_path());
        let rows = match crate::delta::row_count(&written.table) {
            Some(rows) => rows,
            None => self.count_table(name).await?,
        };
        Ok(MaterializeOutcome {
            rows: Some(rows),
            already_committed: written.already_committed,
            write: Some(written.description),
            ..MaterializeOutcome::default()
        })
    }

    async fn write_view(&self, job: &MaterializeJob) -> Result<MaterializeOutcome, AdapterError> {
        let sql = job.query.to_string();
        // Validates before anything is stored: planned and analysed (type coercion), as a
        // table's query is when it runs, although a view's runs only when read.
        let plan = self.plan_query(&job.query).await?;
        let state = self.ctx.state();
        state
            .analyzer()
            .execute_and_check(plan.clone(), state.config_options(), |_, _| {})
            .map_err(|e| err(codes::QUERY_FAILED, e.strip_backtrace()))?;
        let def = ViewDefinition {
            model: job.model_name.clone(),
            version: job.version.clone(),
            run_id: job.run_id.clone(),
            sql: sql.clone(),
        };
        let name = job.relation.table();
        self.unpin(name);
        let path = self.view_path(name)?;
        let old_table = self.table_path(name)?;
        std::fs::create_dir_all(self.warehouse.root()).map_err(|e| io_err(e.to_string()))?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&def).expect("serialisable"))
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| io_err(format!("cannot store view {}: {e}", path.display())))?;
        let view = ComputedView::new(plan, sql, self.view_rows.clone());
        self.register(name, Arc::new(view))?;
        // A model that was a table before is a view now: its old Delta table goes.
        if phlo_transform_lakehouse::delta_log::log_dir(&old_table).is_dir() {
            let _ = std::fs::remove_dir_all(old_table.as_path());
        }
        Ok(MaterializeOutcome::default())
    }

    /// `e` in the user's names: DataFusion calls a relation `datafusion.public.<name>` (its
    /// default catalog and schema, which the user never sees), and its object store writes
    /// paths without their leading `/`.
    fn in_user_names(&self, mut e: AdapterError) -> AdapterError {
        e.message = e.message.replace("datafusion.public.", "");
        let Some(root) = self.warehouse.root().parent().and_then(Path::parent) else {
            return e;
        };
        let root = root.to_string_lossy();
        if let Some(bare) = root.strip_prefix('/').filter(|b| !b.is_empty()) {
            let mut fixed = String::with_capacity(e.message.len());
            let mut rest = e.message.as_str();
            while let Some(at) = rest.find(bare) {
                fixed.push_str(&rest[..at]);
                if !fixed.ends_with('/') {
                    fixed.push('/');
                }
                fixed.push_str(bare);
                rest = &rest[at + bare.len()..];
            }
            fixed.push_str(rest);
            e.message = fixed;
        }
        e
    }

    async fn count_table(&self, relation: &str) -> Result<u64, AdapterError> {
        count_rows_of(self.ctx.table(TableReference::bare(relation)).await).await
    }
}

async fn count_rows_of(
    df: datafusion::common::Result<datafusion::dataframe::DataFrame>,
) -> Result<u64, AdapterError> {
    let df = df.map_err(|e| err(codes::QUERY_FAILED, e.to_string()))?;
    df.count()
        .await
        .map(|n| n as u64)
        .map_err(|e| crate::cause::datafusion_error(&e))
}

/// Why an Iceberg table could not be opened.
pub(crate) enum IcebergOpenError {
    Unreadable(String),
    /// The snapshot asked for is not in the table's metadata; its snapshots, newest first,
    /// as (id, commit time in ms).
    NoSnapshot {
        id: i64,
        snapshots: Vec<(i64, i64)>,
    },
}

impl std::fmt::Display for IcebergOpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IcebergOpenError::Unreadable(e) => f.write_str(e),
            IcebergOpenError::NoSnapshot { id, .. } => write!(f, "it has no snapshot {id}"),
        }
    }
}

/// An Iceberg table read at `snapshot` with that snapshot's schema, or (`None`) at its
/// current snapshot with the table's current schema; with `local_root`, its `local://`
/// files (Trino's native local file system) are read there.
///
/// iceberg 0.10 reads data files with the schema of the snapshot that wrote them while the
/// provider declares the current schema, so a column added without new data breaks every
/// scan (apache/iceberg-rust#2905, fix pending upstream). The current snapshot is therefore
/// pointed at the current schema in memory: data files written before the column was added
/// read it as null, as Iceberg's schema evolution specifies.
pub(crate) async fn open_iceberg_provider(
    metadata: &Path,
    name: &str,
    local_root: Option<&Path>,
    snapshot: Option<i64>,
) -> Result<Arc<dyn TableProvider>, IcebergOpenError> {
    use iceberg::io::FileIO;
    use iceberg::spec::TableMetadata;
    use iceberg::table::Table;
    use iceberg::{Runtime, TableIdent};
    use iceberg_datafusion::IcebergStaticTableProvider;
    let unreadable = |e: String| IcebergOpenError::Unreadable(e);
    let absolute = metadata
        .canonicalize()
        .map_err(|e| unreadable(e.to_string()))?;
    let text = std::fs::read_to_string(&absolute).map_err(|e| unreadable(e.to_string()))?;
    let mut doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| unreadable(format!("invalid metadata.json: {e}")))?;
    let current_schema = doc.get("current-schema-id").cloned();
    let current_snapshot = doc.get("current-snapshot-id").cloned();
    if let (Some(schema), Some(snapshot), Some(snapshots)) = (
        current_schema,
        current_snapshot,
        doc.get_mut("snapshots").and_then(|s| s.as_array_mut()),
    ) {
        for s in snapshots
            .iter_mut()
            .filter(|s| s.get("snapshot-id") == Some(&snapshot))
        {
            s["schema-id"] = schema.clone();
        }
    }
    let md: TableMetadata = serde_json::from_value(doc)
        .map_err(|e| unreadable(format!("invalid metadata.json: {e}")))?;
    if let Some(id) = snapshot.filter(|id| md.snapshot_by_id(*id).is_none()) {
        let mut snapshots: Vec<(i64, i64)> = md
            .snapshots()
            .map(|s| (s.snapshot_id(), s.timestamp_ms()))
            .collect();
        snapshots.sort_by_key(|(_, at)| std::cmp::Reverse(*at));
        return Err(IcebergOpenError::NoSnapshot { id, snapshots });
    }
    let table = Table::builder()
        .metadata(md)
        .metadata_location(format!("file://{}", absolute.display()))
        .identifier(TableIdent::from_strs(name.split('.')).map_err(|e| unreadable(e.to_string()))?)
        .file_io(match local_root {
            Some(root) => crate::local_root_io::file_io(root),
            None => FileIO::new_with_fs(),
        })
        .runtime(Runtime::try_current().map_err(|e| unreadable(e.to_string()))?)
        .readonly(true)
        .build()
        .map_err(|e| unreadable(e.to_string()))?;
    let provider = match snapshot {
        None => IcebergStaticTableProvider::try_new_from_table(table).await,
        Some(id) => IcebergStaticTableProvider::try_new_from_table_snapshot(table, id).await,
    }
    .map_err(|e| unreadable(e.to_string()))?;
    Ok(Arc::new(provider))
}

/// The local engine's relations are one part, a dotted name registered as one DataFusion
/// table: the source's name, the model's name or its `default_schema` placement.
#[async_trait]
impl Adapter for LocalEngine {
    fn kind(&self) -> phlo_transform_project::AdapterKind {
        phlo_transform_project::AdapterKind::Local
    }

    fn dialect(&self) -> &str {
        "datafusion"
    }

    fn model_relation(&self, model_name: &str) -> Relation {
        Relation::new([self.relation_name(model_name)])
    }

    fn source_relation(&self, source_name: &str) -> Relation {
        Relation::new([source_name])
    }

    /// From the file system alone: a Delta log is a table, a stored definition a view.
    async fn introspect_relation(
        &self,
        relation: &Relation,
    ) -> Result<Option<RelationInfo>, AdapterError> {
        let name = relation.table();
        if let Some(pin) = self.pin(name) {
            let exists = match (pin.view, pin.delta_version) {
                (true, _) => pin.path.is_file(),
                (false, Some(v)) => crate::pins::commit_identity(&pin.path, v).is_some(),
                (false, None) => crate::delta::has_commit(&pin.path),
            };
            return Ok(exists.then_some(RelationInfo {
                kind: if pin.view {
                    RelationKind::View
                } else {
                    RelationKind::Table
                },
                columns: None,
                strategy: None,
            }));
        }
        let kind = if crate::delta::has_commit(&self.table_path(name)?) {
            RelationKind::Table
        } else if self.view_path(name)?.is_file() {
            RelationKind::View
        } else {
            return Ok(None);
        };
        Ok(Some(RelationInfo {
            kind,
            columns: None,
            strategy: None,
        }))
    }

    /// Read from the Delta table's `phlo.strategy` property.
    async fn built_strategy(&self, relation: &Relation) -> Result<Option<String>, AdapterError> {
        if let Some(pin) = self.pin(relation.table()) {
            return Ok(crate::delta::built_strategy(&pin.path).await);
        }
        Ok(crate::delta::built_strategy(&self.table_path(relation.table())?).await)
    }

    async fn execute(&self, query: &Query, _: &InFlight) -> Result<u64, AdapterError> {
        let plan = self.plan_query(query).await;
        let plan = plan.map_err(|e| self.in_user_names(e))?;
        count_rows_of(self.ctx.execute_logical_plan(plan).await)
            .await
            .map_err(|e| self.in_user_names(e))
    }

    async fn create_table(
        &self,
        job: &MaterializeJob,
        _: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.write_table(job)
            .await
            .map_err(|e| self.in_user_names(e))
    }

    async fn create_view(
        &self,
        job: &MaterializeJob,
        _: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.write_view(job)
            .await
            .map_err(|e| self.in_user_names(e))
    }

    /// The Delta sink decides between the strategy and a full rebuild (see `delta`).
    async fn apply_incremental(
        &self,
        job: &MaterializeJob,
        _: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.write_table(job)
            .await
            .map_err(|e| self.in_user_names(e))
    }

    async fn drop_relation(&self, relation: &Relation) -> Result<(), AdapterError> {
        let name = relation.table();
        self.unpin(name);
        let _ = self.ctx.deregister_table(TableReference::bare(name));
        let table = self.table_path(name)?;
        if table.is_dir() {
            std::fs::remove_dir_all(table.as_path())
                .map_err(|e| io_err(format!("cannot drop {}: {e}", table.display())))?;
        }
        let view = self.view_path(name)?;
        if view.is_file() {
            std::fs::remove_file(view.as_path())
                .map_err(|e| io_err(format!("cannot drop {}: {e}", view.display())))?;
        }
        Ok(())
    }

    async fn source_state(
        &self,
        source: &phlo_transform_project::SourceDecl,
        timestamp_column: Option<&str>,
    ) -> Result<SourceState, AdapterError> {
        let Some(column) = timestamp_column else {
            return Ok(SourceState::default());
        };
        let table = TableReference::bare(source.name.as_str());
        if !self.ctx.table_exist(table.clone()).unwrap_or(false) {
            if source.format == SourceFormat::Declared {
                return Err(err(
                    codes::RELATION_UNAVAILABLE,
                    format!(
                        "source `{}` is schema-only: it has no data to measure",
                        source.name
                    ),
                ));
            }
            self.register_source(&source.name, source.format, &source.path)
                .await?;
        }
        Ok(SourceState {
            latest_timestamp: crate::freshness::latest_timestamp(&self.ctx, table, column).await?,
            version: None,
        })
    }

    /// DataFusion runs in this process: dropping the attempt's future stops its stream.
    async fn cancel(&self, _: &QueryId) -> Result<(), AdapterError> {
        Ok(())
    }

    /// Delta versions describe commits, not contents another environment could verify.
    async fn output_identity(&self, _: &Relation) -> Result<Option<String>, AdapterError> {
        Ok(None)
    }

    /// The query as DataFusion SQL; the Delta write around it is not SQL.
    fn statements(&self, job: &MaterializeJob) -> Result<Vec<String>, AdapterError> {
        Ok(vec![job.query.to_string()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_messages_use_the_users_names_and_whole_paths() {
        let engine = LocalEngine::unregistered(Path::new("/ws/lab/.phlo/warehouse"), None);
        let e = engine.in_user_names(err(
            codes::QUERY_FAILED,
            "Object at location ws/lab/sources/a.csv not found; table \
             'datafusion.public.ref.specs' not found; /ws/lab/b.csv",
        ));
        assert_eq!(
            e.message,
            "Object at location /ws/lab/sources/a.csv not found; table 'ref.specs' not found; \
             /ws/lab/b.csv"
        );
    }
}
