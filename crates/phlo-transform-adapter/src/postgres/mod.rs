//! The PostgreSQL adapter (sqlx). A schema per model namespace (or `default_schema`); every
//! write is one transaction: a table is built into `<table>__phlo_new` and swapped in, so
//! readers see the old table or the new one, never a half-built one; views the swap would
//! drop (PostgreSQL binds views to the table, not its name) are re-created in the same
//! transaction from their own definitions. Incremental strategies run the model's query once
//! into a temporary batch table and apply it with `sqlgen` (MERGE for keys, DELETE + INSERT
//! for partitions). The strategy a table was built with is its comment (`phlo.strategy=…`).
//! Each statement runs on a connection whose backend pid is registered in the attempt's
//! `InFlight`, so `cancel` is `pg_cancel_backend(pid)`.

pub(crate) mod errors;
mod rows;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::Query;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_project::{IncrementalStrategy, SourceDecl};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, Row};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::time::Duration;

use crate::naming::SchemaNaming;
use crate::sqlgen::{self, ident, BATCH};
use crate::{
    Adapter, AdapterError, ColumnInfo, InFlight, MaterializeJob, MaterializeOutcome, QueryId,
    Relation, RelationInfo, RelationKind, SourceState,
};
use errors::{plain, Statement};

pub struct PostgresEngine {
    pool: PgPool,
    naming: SchemaNaming,
}

impl PostgresEngine {
    /// Connects to `url` (no password in it) with `password`, checking the connection once
    /// so that a down server, a wrong password or a missing database is reported now (A008,
    /// with the help line for the case).
    pub async fn connect(
        url: &str,
        password: Option<&str>,
        default_schema: Option<&str>,
        max_connections: u32,
    ) -> Result<PostgresEngine, AdapterError> {
        let mut options = PgConnectOptions::from_str(url).map_err(|e| {
            AdapterError::new(
                codes::UNKNOWN_ADAPTER,
                format!("invalid PostgreSQL url `{url}`: {e}"),
            )
        })?;
        if let Some(p) = password {
            options = options.password(p);
        }
        let pool = PgPoolOptions::new()
            // One per concurrent model, plus one for catalog reads and cancels.
            .max_connections(max_connections.max(1) + 1)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(|e| errors::connect_failed(e, url))?;
        Ok(PostgresEngine {
            pool,
            naming: SchemaNaming::new(default_schema, PUBLIC),
        })
    }

    async fn connection(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>, AdapterError> {
        self.pool.acquire().await.map_err(|e| {
            errors::classify(
                e,
                &Statement {
                    sql: "",
                    model: None,
                },
            )
        })
    }

    /// Runs `statements` in one transaction on one connection registered in `inflight`.
    /// `model` maps error positions of statements that carry the model's query.
    async fn transaction(
        &self,
        statements: &[String],
        inflight: &InFlight,
        job: Option<&MaterializeJob>,
    ) -> Result<(), AdapterError> {
        let mut conn = self.connection().await?;
        let _tracked = track(&mut conn, inflight).await?;
        let mut tx = conn.begin().await.map_err(|e| plain(e, "BEGIN"))?;
        for sql in statements {
            run(&mut tx, sql, job).await?;
        }
        tx.commit().await.map_err(|e| plain(e, "COMMIT"))
    }

    fn relation_info<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        relations: &'a [Relation],
    ) -> Fut<'a, Vec<Option<RelationInfo>>> {
        Box::pin(async move {
            let (schemas, tables): (Vec<String>, Vec<String>) = relations
                .iter()
                .map(schema_and_table)
                .map(|(s, t)| (s.to_string(), t.to_string()))
                .unzip();
            let sql = "SELECT n.nspname, c.relname, c.relkind::text AS kind,
                          obj_description(c.oid, 'pg_class') AS comment,
                          a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull
                   FROM pg_class c
                   JOIN pg_namespace n ON n.oid = c.relnamespace
                   JOIN unnest($1::text[], $2::text[]) AS w(s, t) ON w.s = n.nspname AND w.t = c.relname
                   LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                   WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
                   ORDER BY n.nspname, c.relname, a.attnum";
            let rows = sqlx::query(sql)
                .bind(&schemas)
                .bind(&tables)
                .fetch_all(&mut *conn)
                .await
                .map_err(|e| plain(e, sql))?;
            let mut found: HashMap<(String, String), RelationInfo> = HashMap::new();
            for r in rows {
                let key: (String, String) = (r.get(0), r.get(1));
                let info = found.entry(key).or_insert_with(|| {
                    let kind: String = r.get("kind");
                    let comment: Option<String> = r.get("comment");
                    RelationInfo {
                        kind: if kind == "v" || kind == "m" {
                            RelationKind::View
                        } else {
                            RelationKind::Table
                        },
                        columns: Some(Vec::new()),
                        strategy: sqlgen::recorded_strategy(comment),
                    }
                });
                if let (Some(name), Some(cols)) =
                    (r.get::<Option<String>, _>("attname"), info.columns.as_mut())
                {
                    cols.push(ColumnInfo {
                        name,
                        data_type: r.get::<Option<String>, _>("type").unwrap_or_default(),
                        nullable: !r.get::<Option<bool>, _>("attnotnull").unwrap_or(false),
                    });
                }
            }
            Ok(relations
                .iter()
                .map(|r| {
                    let (s, t) = schema_and_table(r);
                    found.get(&(s.to_string(), t.to_string())).cloned()
                })
                .collect())
        })
    }

    /// The statements of a full build of `job`'s table: into the new relation, then swapped
    /// in. `existing` is what is at the relation now; `dependents` the views on it.
    fn full_build(
        &self,
        job: &MaterializeJob,
        existing: Option<RelationKind>,
        dependents: &[(Relation, String)],
    ) -> Vec<String> {
        let mut out = sqlgen::full_build(job, PUBLIC, drop_existing(&job.relation, existing));
        out.extend(recreate(dependents));
        out
    }

    /// Views that depend on `relation`, directly or through other views, with their
    /// definitions, in the order they can be re-created.
    fn dependents<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        relation: &'a Relation,
    ) -> Fut<'a, Vec<(Relation, String)>> {
        Box::pin(async move {
            let sql = "WITH RECURSIVE deps(oid, depth) AS (
                       SELECT DISTINCT r.ev_class, 1
                       FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
                       WHERE d.refobjid = to_regclass($1) AND r.ev_class <> d.refobjid
                     UNION
                       SELECT DISTINCT r.ev_class, deps.depth + 1
                       FROM deps JOIN pg_depend d ON d.refobjid = deps.oid
                       JOIN pg_rewrite r ON r.oid = d.objid
                       WHERE r.ev_class <> deps.oid AND deps.depth < 100
                   )
                   SELECT n.nspname, c.relname, pg_get_viewdef(c.oid) AS def, max(deps.depth) AS depth
                   FROM deps JOIN pg_class c ON c.oid = deps.oid
                   JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE c.relkind = 'v'
                   GROUP BY n.nspname, c.relname, c.oid
                   ORDER BY depth, n.nspname, c.relname";
            let rows = sqlx::query(sql)
                .bind(relation.quoted())
                .fetch_all(&mut *conn)
                .await
                .map_err(|e| plain(e, sql))?;
            Ok(rows
                .iter()
                .map(|r| {
                    (
                        Relation::new([r.get::<String, _>(0), r.get::<String, _>(1)]),
                        r.get::<String, _>("def"),
                    )
                })
                .collect())
        })
    }

    fn count<'a>(&'a self, conn: &'a mut PgConnection, relation: &'a Relation) -> Fut<'a, u64> {
        self.number(conn, format!("SELECT count(*) FROM {}", relation.quoted()))
    }

    /// The number `sql` (a `SELECT count(*)`) returns.
    fn number<'a>(&'a self, conn: &'a mut PgConnection, sql: String) -> Fut<'a, u64> {
        Box::pin(async move {
            let n: i64 = sqlx::query_scalar(&sql)
                .fetch_one(&mut *conn)
                .await
                .map_err(|e| plain(e, &sql))?;
            Ok(n as u64)
        })
    }

    /// Builds `job`'s table in full (one transaction) and counts it.
    async fn build_full(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        let mut conn = self.connection().await?;
        let _tracked = track(&mut conn, inflight).await?;
        let existing = self
            .relation_info(&mut conn, std::slice::from_ref(&job.relation))
            .await?
            .remove(0)
            .map(|i| i.kind);
        let dependents = match existing {
            Some(_) => self.dependents(&mut conn, &job.relation).await?,
            None => Vec::new(),
        };
        let statements = self.full_build(job, existing, &dependents);
        ensure_schema(&mut conn, &job.relation).await?;
        let mut tx = conn.begin().await.map_err(|e| plain(e, "BEGIN"))?;
        for sql in &statements {
            run(&mut tx, sql, Some(job)).await?;
        }
        let rows = self.count(&mut tx, &job.relation).await?;
        tx.commit().await.map_err(|e| plain(e, "COMMIT"))?;
        Ok(MaterializeOutcome {
            rows: Some(rows),
            write: Some("full".into()),
            ..MaterializeOutcome::default()
        })
    }
}

/// A boxed, `Send` future: sqlx's executor bounds on `&mut PgConnection` do not survive
/// `async_trait`'s higher-ranked lifetimes when the helpers are plain `async fn`s.
type Fut<'a, T> = Pin<Box<dyn Future<Output = Result<T, AdapterError>> + Send + 'a>>;

/// Registers the connection's backend pid in `inflight` while the guard lives.
fn track<'a>(
    conn: &'a mut PgConnection,
    inflight: &'a InFlight,
) -> Fut<'a, crate::inflight::Tracked> {
    Box::pin(async move {
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| plain(e, "SELECT pg_backend_pid()"))?;
        Ok(inflight.track(QueryId(pid.to_string())))
    })
}

/// Runs one statement (simple protocol: DDL and generated SQL are not prepared).
fn run<'a>(
    conn: &'a mut PgConnection,
    sql: &'a str,
    job: Option<&'a MaterializeJob>,
) -> Fut<'a, ()> {
    Box::pin(async move {
        // A query without arguments goes over the simple protocol (nothing is prepared).
        conn.execute(sql).await.map(|_| ()).map_err(|e| {
            errors::classify(
                e,
                &Statement {
                    sql,
                    model: job.map(|j| (j.path.as_str(), &*j.text)),
                },
            )
        })
    })
}

/// `CREATE SCHEMA IF NOT EXISTS` for `relation`'s schema, outside any transaction: two
/// models of one namespace built at once may race to create it, and the loser's unique
/// violation only means it exists now.
fn ensure_schema<'a>(conn: &'a mut PgConnection, relation: &'a Relation) -> Fut<'a, ()> {
    Box::pin(async move {
        let sql = schema_statement(relation);
        match run(conn, &sql, None).await {
            Err(e)
                if e.message.contains("SQLSTATE 23505") || e.message.contains("SQLSTATE 42P06") =>
            {
                Ok(())
            }
            other => other,
        }
    })
}

fn schema_statement(relation: &Relation) -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS {}",
        ident(schema_and_table(relation).0)
    )
}

/// PostgreSQL's default schema.
const PUBLIC: &str = "public";

fn schema_and_table(r: &Relation) -> (&str, &str) {
    sqlgen::schema_and_table(r, PUBLIC)
}

/// Drops what is at `target` so that a new relation can take its name. `CASCADE` drops the
/// views on it; the caller re-creates them.
fn drop_existing(target: &Relation, existing: Option<RelationKind>) -> Option<String> {
    sqlgen::drop_existing(target, existing, true)
}

fn recreate(dependents: &[(Relation, String)]) -> Vec<String> {
    dependents
        .iter()
        .map(|(view, def)| format!("CREATE OR REPLACE VIEW {} AS {def}", view.quoted()))
        .collect()
}

fn view_statements(
    job: &MaterializeJob,
    existing: Option<RelationKind>,
    dependents: &[(Relation, String)],
) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(drop_existing(&job.relation, existing));
    out.push(format!(
        "CREATE VIEW {} AS {}",
        job.relation.quoted(),
        job.query
    ));
    out.extend(recreate(dependents));
    out
}

/// The batch of an incremental write, dropped with the transaction.
fn batch_statement(job: &MaterializeJob, strategy: &IncrementalStrategy) -> String {
    format!(
        "CREATE TEMP TABLE {BATCH} ON COMMIT DROP AS {}",
        sqlgen::batch_query(job, strategy)
    )
}

#[async_trait]
impl Adapter for PostgresEngine {
    fn kind(&self) -> phlo_transform_project::AdapterKind {
        phlo_transform_project::AdapterKind::Postgres
    }

    fn model_relation(&self, model_name: &str) -> Relation {
        self.naming.model(model_name)
    }

    fn source_relation(&self, source_name: &str) -> Relation {
        self.naming.source(source_name)
    }

    /// One catalog query for all of them.
    async fn introspect_relations(
        &self,
        relations: &[Relation],
    ) -> Result<Vec<Option<RelationInfo>>, AdapterError> {
        let mut conn = self.connection().await?;
        self.relation_info(&mut conn, relations).await
    }

    async fn execute(&self, query: &Query, inflight: &InFlight) -> Result<u64, AdapterError> {
        let mut conn = self.connection().await?;
        let _tracked = track(&mut conn, inflight).await?;
        self.number(&mut conn, sqlgen::count_rows(query)).await
    }

    async fn fetch(
        &self,
        query: &Query,
        inflight: &InFlight,
    ) -> Result<(SchemaRef, Vec<RecordBatch>), AdapterError> {
        let mut conn = self.connection().await?;
        let _tracked = track(&mut conn, inflight).await?;
        rows::fetch(&mut conn, &query.to_string()).await
    }

    async fn create_table(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        self.build_full(job, inflight).await
    }

    async fn create_view(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        let mut conn = self.connection().await?;
        let existing = self
            .relation_info(&mut conn, std::slice::from_ref(&job.relation))
            .await?
            .remove(0)
            .map(|i| i.kind);
        let dependents = match existing {
            Some(_) => self.dependents(&mut conn, &job.relation).await?,
            None => Vec::new(),
        };
        ensure_schema(&mut conn, &job.relation).await?;
        drop(conn);
        self.transaction(
            &view_statements(job, existing, &dependents),
            inflight,
            Some(job),
        )
        .await?;
        Ok(MaterializeOutcome::default())
    }

    async fn apply_incremental(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        let strategy = match &job.table.incremental {
            Some(s) if *s != IncrementalStrategy::Full && !job.table.full_rebuild => s.clone(),
            _ => return self.build_full(job, inflight).await,
        };
        let mut conn = self.connection().await?;
        let _tracked = track(&mut conn, inflight).await?;
        let existing = self
            .relation_info(&mut conn, std::slice::from_ref(&job.relation))
            .await?
            .remove(0);
        let table_columns = match existing {
            Some(RelationInfo {
                kind: RelationKind::Table,
                columns: Some(columns),
                strategy: Some(label),
            }) if label == job.table.label() => columns,
            _ => {
                drop(conn);
                return self.build_full(job, inflight).await;
            }
        };
        let mut tx = conn.begin().await.map_err(|e| plain(e, "BEGIN"))?;
        run(&mut tx, &batch_statement(job, &strategy), Some(job)).await?;
        let columns_sql = "SELECT attname::text FROM pg_attribute
                           WHERE attrelid = 'pg_temp.phlo_batch'::regclass AND attnum > 0 AND NOT attisdropped
                           ORDER BY attnum";
        let batch_columns: Vec<String> = sqlx::query_scalar(columns_sql)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| plain(e, columns_sql))?;
        let names: Vec<String> = table_columns.iter().map(|c| c.name.clone()).collect();
        if batch_columns != names {
            // The model's columns changed: the table is rebuilt, as the local engine does.
            tx.rollback().await.map_err(|e| plain(e, "ROLLBACK"))?;
            drop(conn);
            return self.build_full(job, inflight).await;
        }
        let before = self.count(&mut tx, &job.relation).await?;
        for sql in sqlgen::incremental(&strategy, &job.table.key, &job.relation, BATCH, &names) {
            run(&mut tx, &sql, None).await?;
        }
        let rows = self.count(&mut tx, &job.relation).await?;
        tx.commit().await.map_err(|e| plain(e, "COMMIT"))?;
        let write = sqlgen::write_kind(&strategy, !job.table.key.is_empty(), before, rows);
        Ok(MaterializeOutcome {
            rows: Some(rows),
            write: Some(write.into()),
            ..MaterializeOutcome::default()
        })
    }

    async fn drop_relation(&self, relation: &Relation) -> Result<(), AdapterError> {
        let existing = self.introspect_relation(relation).await?.map(|i| i.kind);
        if let Some(sql) = drop_existing(relation, existing) {
            self.transaction(&[sql], &InFlight::default(), None).await?;
        }
        Ok(())
    }

    async fn source_state(
        &self,
        source: &SourceDecl,
        timestamp_column: Option<&str>,
    ) -> Result<SourceState, AdapterError> {
        let Some(column) = timestamp_column else {
            return Ok(SourceState::default());
        };
        let relation = self.source_relation(&source.name);
        let sql = format!(
            "SELECT (extract(epoch FROM max({c})::timestamp) * 1000000)::bigint FROM {t}",
            c = ident(column),
            t = relation.quoted()
        );
        let mut conn = self.connection().await?;
        let latest: Option<i64> = sqlx::query_scalar(sql.as_str())
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| plain(e, &sql))?;
        Ok(SourceState {
            latest_timestamp: latest,
            version: None,
        })
    }

    async fn cancel(&self, query: &QueryId) -> Result<(), AdapterError> {
        let pid: i32 = query.0.parse().map_err(|_| {
            AdapterError::new(
                codes::QUERY_FAILED,
                format!("not a backend pid: {}", query.0),
            )
            .with_help("a query id the PostgreSQL adapter never handed out: a bug, report it")
        })?;
        let mut conn = self.connection().await?;
        sqlx::query("SELECT pg_cancel_backend($1)")
            .bind(pid)
            .execute(&mut *conn)
            .await
            .map_err(|e| plain(e, "SELECT pg_cancel_backend($1)"))?;
        Ok(())
    }

    /// PostgreSQL has no content identity a second environment could verify.
    async fn output_identity(&self, _: &Relation) -> Result<Option<String>, AdapterError> {
        Ok(None)
    }

    /// As for a relation that does not exist yet (views, tables) or, for incremental models,
    /// an existing table with the model's columns (`job.columns`).
    fn statements(&self, job: &MaterializeJob) -> Result<Vec<String>, AdapterError> {
        use phlo_transform_project::Materialization;
        let mut out = vec![schema_statement(&job.relation)];
        out.extend(match (&job.materialization, &job.table.incremental) {
            (Materialization::View, _) => view_statements(job, None, &[]),
            (Materialization::Incremental, Some(s)) if *s != IncrementalStrategy::Full => {
                sqlgen::incremental_preview(job, s, batch_statement(job, s))
            }
            _ => self.full_build(job, None, &[]),
        });
        Ok(out)
    }
}
