//! The DuckDB adapter: the `duckdb` crate linked to a prebuilt libduckdb (scripts/duckdb.sh;
//! never DuckDB's bundled C++ build), over one database file. Same shape as PostgreSQL: a
//! schema per model namespace, every write one transaction, tables built into
//! `<table>__phlo_new` and renamed into place, incremental strategies applied from a
//! temporary batch table (`sqlgen`), the build strategy as the table's comment. DuckDB binds
//! a view to names, not to a table's identity, so a table swap keeps the views over it.
//! Each operation runs on its own connection in a blocking thread; its interrupt handle is
//! what `cancel` calls.

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::Query;
use duckdb::{Connection, InterruptHandle};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_project::{IncrementalStrategy, Materialization, SourceDecl};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

mod catalog;
mod error;

use catalog::{schema_and_table, table_columns, Catalog, MAIN};
use error::{failed, located};

use crate::naming::SchemaNaming;
use crate::sqlgen::{self, ident, BATCH};
use crate::{
    Adapter, AdapterError, InFlight, MaterializeJob, MaterializeOutcome, QueryId, Relation,
    RelationInfo, RelationKind, SourceState,
};

pub struct DuckDbEngine {
    root: Mutex<Connection>,
    catalog: Arc<Catalog>,
    naming: SchemaNaming,
    running: Arc<Mutex<HashMap<String, Arc<InterruptHandle>>>>,
    next: AtomicU64,
}

impl DuckDbEngine {
    /// Opens (creating it if needed) the database file at `path`.
    pub fn open(path: &Path, default_schema: Option<&str>) -> Result<DuckDbEngine, AdapterError> {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let conn = Connection::open(path).map_err(|e| {
            AdapterError::new(
                codes::ADAPTER_UNAVAILABLE,
                format!("DuckDB database {}: {e}", path.display()),
            )
            .with_help(
                "check that `path` names a database file (not a directory) whose directory \
                 is writable, and that no other process (another run, the duckdb CLI) has \
                 the file open",
            )
        })?;
        Ok(DuckDbEngine::on(conn, default_schema))
    }

    /// An empty in-memory database: what planning sees where the database file does not
    /// exist yet, without creating it.
    pub fn empty(default_schema: Option<&str>) -> Result<DuckDbEngine, AdapterError> {
        let conn = Connection::open_in_memory().map_err(|e| {
            AdapterError::new(codes::ADAPTER_UNAVAILABLE, e.to_string()).with_help(
                "DuckDB could not open even an in-memory database: check that libduckdb \
                     loads (LD_LIBRARY_PATH) and that memory is available",
            )
        })?;
        Ok(DuckDbEngine::on(conn, default_schema))
    }

    fn on(conn: Connection, default_schema: Option<&str>) -> DuckDbEngine {
        DuckDbEngine {
            root: Mutex::new(conn),
            catalog: Arc::default(),
            naming: SchemaNaming::new(default_schema, MAIN),
            running: Arc::default(),
            next: AtomicU64::new(1),
        }
    }

    /// Runs `work` on a connection of its own in a blocking thread, its interrupt handle
    /// registered in `inflight` while it runs.
    async fn on_connection<T: Send + 'static>(
        &self,
        inflight: &InFlight,
        work: impl FnOnce(&Connection) -> Result<T, AdapterError> + Send + 'static,
    ) -> Result<T, AdapterError> {
        let conn = self
            .root
            .lock()
            .expect("not poisoned")
            .try_clone()
            .map_err(|e| {
                AdapterError::new(codes::ADAPTER_UNAVAILABLE, e.to_string())
                    .with_help(crate::error::help::CONNECTION_LOST)
            })?;
        let id = self.next.fetch_add(1, Ordering::Relaxed).to_string();
        self.running
            .lock()
            .expect("not poisoned")
            .insert(id.clone(), conn.interrupt_handle());
        let _tracked = inflight.track(QueryId(id.clone()));
        let running = self.running.clone();
        let result = tokio::task::spawn_blocking(move || {
            let out = work(&conn);
            running.lock().expect("not poisoned").remove(&id);
            out
        })
        .await
        .map_err(|e| {
            AdapterError::new(codes::QUERY_FAILED, format!("DuckDB task: {e}"))
                .with_help("the task running the statement ended abnormally: run again")
        })?;
        result
    }

    /// Runs `work` on `job` (a copy of it, on a connection of its own, see `on_connection`)
    /// with the engine's catalog: a model's write.
    async fn on_job(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
        work: impl FnOnce(
                &Connection,
                &MaterializeJob,
                &Catalog,
            ) -> Result<MaterializeOutcome, AdapterError>
            + Send
            + 'static,
    ) -> Result<MaterializeOutcome, AdapterError> {
        let job = job.clone();
        let catalog = self.catalog.clone();
        self.on_connection(inflight, move |conn| work(conn, &job, &catalog))
            .await
    }
}

fn run(conn: &Connection, sql: &str) -> Result<(), AdapterError> {
    execute(conn, sql, None)
}

/// Runs `sql`, which carries `job`'s query when given (for the error position).
fn execute(conn: &Connection, sql: &str, job: Option<&MaterializeJob>) -> Result<(), AdapterError> {
    conn.execute_batch(sql).map_err(|e| located(e, sql, job))
}

/// Runs `statements` in one transaction; `job` when they carry its query.
fn transaction(
    conn: &Connection,
    statements: &[String],
    job: Option<&MaterializeJob>,
) -> Result<(), AdapterError> {
    run(conn, "BEGIN TRANSACTION")?;
    for sql in statements {
        if let Err(e) = execute(conn, sql, job) {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
    }
    run(conn, "COMMIT")
}

fn count(conn: &Connection, relation: &Relation) -> Result<u64, AdapterError> {
    let sql = format!("SELECT count(*) FROM {}", relation.quoted());
    conn.query_row(&sql, [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .map_err(|e| failed(e, &sql))
}

/// DuckDB binds views by name, so dropping a table keeps the views over it (no CASCADE).
fn drop_existing(target: &Relation, existing: Option<RelationKind>) -> Option<String> {
    sqlgen::drop_existing(target, existing, false)
}

fn full_build(job: &MaterializeJob, existing: Option<RelationKind>) -> Vec<String> {
    sqlgen::full_build(job, MAIN, drop_existing(&job.relation, existing))
}

fn schema_statement(relation: &Relation) -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS {}",
        ident(schema_and_table(relation).0)
    )
}

/// Creates `relation`'s schema on its own, before the model's transaction: two models of one
/// namespace built at once would both create it inside their transactions, and DuckDB
/// refuses the second commit ("Catalog write-write conflict on create"). The catalog
/// serialises the creation between the engine's connections (`Catalog::ensure_schema`); no
/// other process can write the file while the engine holds it.
fn ensure_schema(
    conn: &Connection,
    relation: &Relation,
    catalog: &Catalog,
) -> Result<(), AdapterError> {
    let schema = schema_and_table(relation).0;
    catalog.ensure_schema(conn, schema, || run(conn, &schema_statement(relation)))
}

/// Runs `statements` (writing `relation`) in one transaction and records in `catalog` what it
/// left there: `now` when it committed; when it failed, the catalog is read again next time.
fn write(
    conn: &Connection,
    statements: &[String],
    job: Option<&MaterializeJob>,
    catalog: &Catalog,
    relation: &Relation,
    now: Option<RelationInfo>,
) -> Result<(), AdapterError> {
    match transaction(conn, statements, job) {
        Ok(()) => {
            catalog.wrote(relation, now);
            Ok(())
        }
        Err(e) => {
            catalog.forget();
            Err(e)
        }
    }
}

fn view_statements(job: &MaterializeJob, existing: Option<RelationKind>) -> Vec<String> {
    let mut out = Vec::new();
    if existing == Some(RelationKind::Table) {
        out.extend(drop_existing(&job.relation, existing));
    }
    out.push(format!(
        "CREATE OR REPLACE VIEW {} AS {}",
        job.relation.quoted(),
        job.query
    ));
    out
}

fn batch_statement(job: &MaterializeJob, strategy: &IncrementalStrategy) -> String {
    format!(
        "CREATE OR REPLACE TEMP TABLE {BATCH} AS {}",
        sqlgen::batch_query(job, strategy)
    )
}

/// Puts `job`'s relation in place: its schema first (see `ensure_schema`), then, in one
/// transaction, the statements `statements` makes from what is at the relation now. The
/// catalog records `now` as what is there after the commit. A table build and a view share
/// these steps; only their statements and what they leave differ.
fn replace(
    conn: &Connection,
    job: &MaterializeJob,
    catalog: &Catalog,
    statements: impl FnOnce(Option<RelationKind>) -> Vec<String>,
    now: Option<RelationInfo>,
) -> Result<(), AdapterError> {
    ensure_schema(conn, &job.relation, catalog)?;
    let existing = catalog
        .lookup(conn, std::slice::from_ref(&job.relation))?
        .remove(0)
        .map(|i| i.kind);
    write(
        conn,
        &statements(existing),
        Some(job),
        catalog,
        &job.relation,
        now,
    )
}

fn build_full(
    conn: &Connection,
    job: &MaterializeJob,
    catalog: &Catalog,
) -> Result<MaterializeOutcome, AdapterError> {
    let built = catalog::table(job.table.label());
    replace(
        conn,
        job,
        catalog,
        |existing| full_build(job, existing),
        built,
    )?;
    Ok(MaterializeOutcome {
        rows: Some(count(conn, &job.relation)?),
        write: Some("full".into()),
        ..MaterializeOutcome::default()
    })
}

fn create_view(
    conn: &Connection,
    job: &MaterializeJob,
    catalog: &Catalog,
) -> Result<MaterializeOutcome, AdapterError> {
    let view = catalog::view();
    replace(
        conn,
        job,
        catalog,
        |existing| view_statements(job, existing),
        view,
    )?;
    Ok(MaterializeOutcome::default())
}

fn incremental(
    conn: &Connection,
    job: &MaterializeJob,
    strategy: &IncrementalStrategy,
    catalog: &Catalog,
) -> Result<MaterializeOutcome, AdapterError> {
    let existing = catalog
        .lookup(conn, std::slice::from_ref(&job.relation))?
        .remove(0);
    let columns = match existing {
        Some(RelationInfo {
            kind: RelationKind::Table,
            strategy: Some(label),
            ..
        }) if label == job.table.label() => table_columns(conn, &job.relation.quoted())?,
        _ => return build_full(conn, job, catalog),
    };
    execute(conn, &batch_statement(job, strategy), Some(job))?;
    let batch = table_columns(conn, "temp.main.phlo_batch")?;
    if batch != columns {
        let _ = run(conn, &format!("DROP TABLE {BATCH}"));
        return build_full(conn, job, catalog);
    }
    let before = count(conn, &job.relation)?;
    let statements = sqlgen::incremental(strategy, &job.table.key, &job.relation, BATCH, &columns);
    let kept = catalog::table(job.table.label());
    let applied = write(conn, &statements, None, catalog, &job.relation, kept);
    let _ = run(conn, &format!("DROP TABLE {BATCH}"));
    applied?;
    let rows = count(conn, &job.relation)?;
    let write = sqlgen::write_kind(strategy, !job.table.key.is_empty(), before, rows);
    Ok(MaterializeOutcome {
        rows: Some(rows),
        write: Some(write.into()),
        ..MaterializeOutcome::default()
    })
}

#[async_trait]
impl Adapter for DuckDbEngine {
    fn kind(&self) -> phlo_transform_project::AdapterKind {
        phlo_transform_project::AdapterKind::DuckDb
    }

    fn model_relation(&self, model_name: &str) -> Relation {
        self.naming.model(model_name)
    }

    fn source_relation(&self, source_name: &str) -> Relation {
        self.naming.source(source_name)
    }

    async fn introspect_relations(
        &self,
        relations: &[Relation],
    ) -> Result<Vec<Option<RelationInfo>>, AdapterError> {
        let relations = relations.to_vec();
        let catalog = self.catalog.clone();
        self.on_connection(&InFlight::default(), move |conn| {
            catalog.lookup(conn, &relations)
        })
        .await
    }

    async fn execute(&self, query: &Query, inflight: &InFlight) -> Result<u64, AdapterError> {
        let sql = sqlgen::count_rows(query);
        self.on_connection(inflight, move |conn| {
            conn.query_row(&sql, [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(|e| failed(e, &sql))
        })
        .await
    }

    async fn fetch(
        &self,
        query: &Query,
        inflight: &InFlight,
    ) -> Result<(SchemaRef, Vec<RecordBatch>), AdapterError> {
        let sql = query.to_string();
        self.on_connection(inflight, move |conn| {
            let mut statement = conn.prepare(&sql).map_err(|e| failed(e, &sql))?;
            let rows = statement.query_arrow([]).map_err(|e| failed(e, &sql))?;
            let schema = rows.get_schema();
            Ok((schema, rows.collect()))
        })
        .await
    }

    async fn create_table(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.on_job(job, inflight, build_full).await
    }

    async fn create_view(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.on_job(job, inflight, create_view).await
    }

    async fn apply_incremental(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.on_job(job, inflight, |conn, job, catalog| {
            match &job.table.incremental {
                Some(s) if *s != IncrementalStrategy::Full && !job.table.full_rebuild => {
                    incremental(conn, job, s, catalog)
                }
                _ => build_full(conn, job, catalog),
            }
        })
        .await
    }

    async fn drop_relation(&self, relation: &Relation) -> Result<(), AdapterError> {
        let relation = relation.clone();
        let catalog = self.catalog.clone();
        self.on_connection(&InFlight::default(), move |conn| {
            let existing = catalog
                .lookup(conn, std::slice::from_ref(&relation))?
                .remove(0)
                .map(|i| i.kind);
            match drop_existing(&relation, existing) {
                Some(sql) => write(conn, &[sql], None, &catalog, &relation, None),
                None => Ok(()),
            }
        })
        .await
    }

    async fn source_state(
        &self,
        source: &SourceDecl,
        timestamp_column: Option<&str>,
    ) -> Result<SourceState, AdapterError> {
        let Some(column) = timestamp_column else {
            return Ok(SourceState::default());
        };
        let sql = format!(
            "SELECT epoch_us(max({})::TIMESTAMP) FROM {}",
            ident(column),
            self.source_relation(&source.name).quoted()
        );
        let latest = self
            .on_connection(&InFlight::default(), move |conn| {
                conn.query_row(&sql, [], |r| r.get::<_, Option<i64>>(0))
                    .map_err(|e| failed(e, &sql))
            })
            .await?;
        Ok(SourceState {
            latest_timestamp: latest,
            version: None,
        })
    }

    async fn cancel(&self, query: &QueryId) -> Result<(), AdapterError> {
        if let Some(handle) = self.running.lock().expect("not poisoned").get(&query.0) {
            handle.interrupt();
        }
        Ok(())
    }

    /// A DuckDB table has no content identity another environment could verify.
    async fn output_identity(&self, _: &Relation) -> Result<Option<String>, AdapterError> {
        Ok(None)
    }

    /// The schema first (on its own, see `ensure_schema`), then the model's transaction.
    fn statements(&self, job: &MaterializeJob) -> Result<Vec<String>, AdapterError> {
        let mut out = vec![schema_statement(&job.relation)];
        out.extend(match (&job.materialization, &job.table.incremental) {
            (Materialization::View, _) => view_statements(job, None),
            (Materialization::Incremental, Some(s)) if *s != IncrementalStrategy::Full => {
                sqlgen::incremental_preview(job, s, batch_statement(job, s))
            }
            _ => full_build(job, None),
        });
        Ok(out)
    }
}
