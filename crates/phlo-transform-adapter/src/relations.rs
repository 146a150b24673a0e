//! The local engine's relations, each opened the first time a query reads it.
//!
//! Opening a Delta table reads its log and registering a stored view plans its SQL. Doing
//! that for every model relation when the engine opened made a run that builds nothing cost
//! half a minute at 10,000 models, and a run after a one-model edit open every table (issue
//! 17). The engine's default schema therefore holds what was registered explicitly (sources,
//! what a run writes) and opens a model's relation from the warehouse when a query first
//! names it. A relation that cannot be opened stays missing, as it did when all of them were
//! opened up front: the reader fails with "table not found" and planning rebuilds it. A
//! virtual environment's pinned relations (see `pins`) open where their pins point.

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::view::ViewTable;
use datafusion::error::Result as DfResult;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::LogicalPlan;
use phlo_transform_compiler::semantics::Semantics;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_project::Materialization;
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use crate::error::err;
use crate::pins::{Pin, Pins};
use crate::warehouse::Warehouse;
use crate::AdapterError;

/// What a stored view is (`<warehouse>/<model>.view.json`).
#[derive(Serialize, Deserialize)]
pub(crate) struct ViewDefinition {
    pub model: String,
    pub version: String,
    pub run_id: String,
    pub sql: String,
}

/// A snapshot of the engine's session, to plan a view's SQL and open a Delta table in. The
/// schema lives inside that session, so it holds a weak reference to it (no cycle).
pub(crate) type SessionSource = Box<dyn Fn() -> Option<SessionState> + Send + Sync>;

/// The default schema of the local engine's session (see the module documentation).
pub(crate) struct Relations {
    registered: RwLock<HashMap<String, Arc<dyn TableProvider>>>,
    /// The workspace's model relations that may exist in the warehouse, by name: how to open
    /// them (ephemeral models have none).
    models: HashMap<String, Materialization>,
    pins: Pins,
    warehouse: Warehouse,
    semantics: Semantics,
    session: SessionSource,
}

impl std::fmt::Debug for Relations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relations")
            .field("registered", &self.read().len())
            .field("models", &self.models.len())
            .field("warehouse", &self.warehouse)
            .finish()
    }
}

impl Relations {
    pub(crate) fn new(
        models: HashMap<String, Materialization>,
        pins: Pins,
        warehouse: Warehouse,
        semantics: Semantics,
        session: SessionSource,
    ) -> Relations {
        Relations {
            registered: RwLock::default(),
            models,
            pins,
            warehouse,
            semantics,
            session,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<dyn TableProvider>>> {
        self.registered
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<dyn TableProvider>>> {
        self.registered
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn pin(&self, name: &str) -> Option<Pin> {
        crate::pins::read(&self.pins).get(name).cloned()
    }

    /// Whether model `name`'s relation is in the warehouse, from the file system alone.
    fn stored(&self, name: &str) -> bool {
        if let Some(pin) = self.pin(name) {
            return match (pin.view, pin.delta_version) {
                (true, _) => pin.path.is_file(),
                (false, Some(v)) => crate::pins::commit_identity(&pin.path, v).is_some(),
                (false, None) => crate::delta::has_commit(&pin.path),
            };
        }
        match self.models.get(name) {
            Some(Materialization::View) => self.warehouse.view(name).is_ok_and(|p| p.is_file()),
            Some(_) => self
                .warehouse
                .table(name)
                .is_ok_and(|p| crate::delta::has_commit(&p)),
            None => false,
        }
    }

    /// Opens model `name`'s relation and keeps it; `None` when it is not a model relation or
    /// cannot be opened.
    async fn open(&self, name: &str) -> Option<Arc<dyn TableProvider>> {
        let materialization = *self.models.get(name)?;
        let state = (self.session)()?;
        let pin = self.pin(name);
        let opened = match materialization {
            Materialization::Ephemeral => return None,
            Materialization::View => {
                let path = match pin.filter(|p| p.view) {
                    Some(pin) => pin.path,
                    None => self.warehouse.view(name).ok()?.as_path().to_path_buf(),
                };
                open_view(&path, &state, &self.semantics, name).await
            }
            Materialization::Table | Materialization::Incremental => {
                match pin.filter(|p| !p.view) {
                    Some(pin) => open_delta_provider_at(&pin.path, pin.delta_version, &state)
                        .await
                        .map_err(|e| {
                            err(codes::RELATION_UNAVAILABLE, format!("table `{name}`: {e}"))
                        }),
                    None => open_delta(&self.warehouse, &state, name).await,
                }
            }
        };
        let provider = opened.ok()?;
        // A concurrent reader may have opened it, or a run registered it, meanwhile: the one
        // registered first stays.
        Some(
            self.write()
                .entry(name.to_string())
                .or_insert(provider)
                .clone(),
        )
    }
}

#[async_trait]
impl SchemaProvider for Relations {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn table_names(&self) -> Vec<String> {
        let mut names: BTreeSet<String> = self.read().keys().cloned().collect();
        names.extend(self.models.keys().filter(|n| self.stored(n)).cloned());
        names.into_iter().collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        if let Some(provider) = self.read().get(name) {
            return Ok(Some(provider.clone()));
        }
        Ok(self.open(name).await)
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let mut registered = self.write();
        if registered.contains_key(&name) {
            return datafusion::common::exec_err!("The table {name} already exists");
        }
        registered.insert(name, table);
        Ok(None)
    }

    fn deregister_table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        Ok(self.write().remove(name))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.read().contains_key(name) || self.stored(name)
    }
}

/// Model `model`'s Delta table at its latest version.
pub(crate) async fn open_delta(
    warehouse: &Warehouse,
    state: &SessionState,
    model: &str,
) -> Result<Arc<dyn TableProvider>, AdapterError> {
    let path = warehouse.table(model)?;
    if !crate::delta::has_commit(&path) {
        return Err(err(
            codes::RELATION_UNAVAILABLE,
            format!("table `{model}` does not exist"),
        ));
    }
    open_delta_provider(&path, state)
        .await
        .map_err(|e| err(codes::RELATION_UNAVAILABLE, format!("table `{model}`: {e}")))
}

/// Model `model`'s view stored at `path`, planned against the relations of `state`.
async fn open_view(
    path: &Path,
    state: &SessionState,
    semantics: &Semantics,
    model: &str,
) -> Result<Arc<dyn TableProvider>, AdapterError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(codes::RELATION_UNAVAILABLE, format!("view `{model}`: {e}")))?;
    let def: ViewDefinition = serde_json::from_str(&text).map_err(|e| {
        err(
            codes::RELATION_UNAVAILABLE,
            format!("view `{model}` definition is corrupt: {e}"),
        )
    })?;
    let plan = plan_sql(state, semantics, &def.sql).await?;
    Ok(Arc::new(ViewTable::new(plan, Some(def.sql))))
}

/// `sql` planned in `state`, with the target dialect's exact rewrites.
async fn plan_sql(
    state: &SessionState,
    semantics: &Semantics,
    sql: &str,
) -> Result<LogicalPlan, AdapterError> {
    let statement = state
        .sql_to_statement(sql, &datafusion::config::Dialect::Generic)
        .map_err(|e| err(codes::QUERY_FAILED, e.to_string()))?;
    let plan = state
        .statement_to_plan(statement)
        .await
        .map_err(|e| err(codes::QUERY_FAILED, e.to_string()))?;
    semantics
        .rewrite(plan)
        .map_err(|e| err(codes::QUERY_FAILED, e.strip_backtrace()))
}

/// The Delta table at `path`, its object store registered in `state`'s runtime.
pub(crate) async fn open_delta_provider(
    path: &Path,
    state: &SessionState,
) -> Result<Arc<dyn TableProvider>, String> {
    open_delta_provider_at(path, None, state).await
}

/// The Delta table at `path` at `version` (the latest when `None`).
async fn open_delta_provider_at(
    path: &Path,
    version: Option<i64>,
    state: &SessionState,
) -> Result<Arc<dyn TableProvider>, String> {
    let url = deltalake::ensure_table_uri(path.to_string_lossy()).map_err(|e| e.to_string())?;
    let table = match version {
        Some(v) => deltalake::open_table_with_version(url, v.max(0) as u64).await,
        None => deltalake::open_table(url).await,
    }
    .map_err(|e| e.to_string())?;
    delta_provider(&table, state).await
}

/// `table` read in `state` (whose object stores learn the table's).
pub(crate) async fn delta_provider(
    table: &deltalake::DeltaTable,
    state: &SessionState,
) -> Result<Arc<dyn TableProvider>, String> {
    table
        .update_datafusion_session(state)
        .map_err(|e| e.to_string())?;
    table.table_provider().await.map_err(|e| e.to_string())
}
