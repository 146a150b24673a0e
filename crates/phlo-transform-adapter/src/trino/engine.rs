//! The Trino adapter: models as Iceberg tables in one catalog (a schema per namespace, or
//! `default_schema`), views in the views catalog, every statement through [`Trino`].
//!
//! - **Tables** are written with `CREATE OR REPLACE TABLE … AS`: one Iceberg commit, so readers
//!   see the old snapshot or the new one. The strategy a table was built with is its comment
//!   (`phlo.strategy=…`), as in the SQL warehouses.
//! - **Views** live in `views_catalog` (Trino's Nessie catalog cannot hold views; see
//!   docs/adapters.md). Without one, a workspace with views on a Nessie catalog is refused when
//!   the adapter opens (plan time), not when the view is built.
//! - **Incremental** writes run the model's query once into a batch table beside the target
//!   and apply it with the shared `sqlgen` statements (MERGE for keys and keyed windows,
//!   INSERT of new rows for append) or, for partitions, one MERGE that deletes the affected
//!   partitions and inserts their new rows (one snapshot, where DELETE + INSERT would be two). They only add rows the
//!   table does not have, and Trino commits no snapshot for a write of no rows, so repeating
//!   a generation after a crash adds no second snapshot.
//! - **Iceberg state** after every write: the table's metadata location from Nessie's contents
//!   API, the metadata file read natively (`phlo_transform_lakehouse::iceberg_state`); its
//!   snapshot and schema ids are the write's output identity.
//! - **Errors**: Trino's `errorLocation` is a position in the SQL sent; it is mapped back to
//!   the model file (`position::map_back`).

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::Query;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_lakehouse::iceberg_state::{read_table_state, IcebergTableState};
use phlo_transform_lakehouse::nessie::{Content, Nessie};
use phlo_transform_project::{IncrementalStrategy, Materialization, SourceDecl};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;
use url::Url;

use super::client::{FailureKind, QueryResult, Trino, TrinoConfig, TrinoError};
use crate::sqlgen::{ident, list, literal, same};
use crate::{
    Adapter, AdapterError, ColumnInfo, InFlight, MaterializeJob, MaterializeOutcome, QueryId,
    QueryStatistics, Relation, RelationInfo, RelationKind, SourceState,
};

/// The table comment's line recording the table's build strategy.
const STRATEGY_COMMENT: &str = "phlo.strategy=";
/// The table comment's lines naming the model and run generation whose full build wrote the
/// table: set by the same `CREATE OR REPLACE … AS` that writes the rows, so a resumed run
/// sees that the generation's write already committed.
const MODEL_COMMENT: &str = "phlo.model=";
const GENERATION_COMMENT: &str = "phlo.generation=";
/// How long a write waits for the cancelled queries of a killed run to end.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Suffix of the relation an incremental batch is written to before it is applied.
pub(crate) const BATCH_SUFFIX: &str = "__phlo_batch";
/// The schema of one-segment model names.
const DEFAULT_SCHEMA: &str = "default";

/// How the adapter reaches Trino and Nessie (`[adapter] type = "trino"`).
#[derive(Clone, Debug)]
pub struct TrinoSettings {
    pub url: Url,
    pub user: String,
    pub password: Option<String>,
    /// Where tables are written.
    pub catalog: String,
    /// Where views are written (the same catalog when it can hold views).
    pub views_catalog: Option<String>,
    pub default_schema: Option<String>,
    /// The Nessie server behind `catalog` (`[adapter.nessie] url`) and the reference Trino's
    /// catalog is on.
    pub nessie: Option<(Url, String)>,
    /// Where Trino's `local://` file system is rooted (its `local.location`), so that
    /// `local:///…` metadata locations can be read here.
    pub local_root: Option<PathBuf>,
}

pub struct TrinoEngine {
    client: Trino,
    settings: TrinoSettings,
    nessie: Option<Nessie>,
    /// Models materialised as views: they live in the views catalog.
    views: HashSet<String>,
    /// Schemas known to exist (`catalog.schema`).
    schemas: Mutex<HashSet<Relation>>,
}

impl TrinoEngine {
    /// Connects (waiting while the coordinator is still starting) and checks that the
    /// catalogs exist. `views` are the names of the workspace's view models; with views and
    /// no catalog that can hold them, opening fails (DIALECT_UNSUPPORTED) before anything runs.
    pub async fn connect(
        settings: TrinoSettings,
        views: HashSet<String>,
    ) -> Result<Self, AdapterError> {
        let mut config = TrinoConfig::new(settings.url.clone(), settings.user.clone());
        config.password = settings.password.clone();
        config.catalog = Some(settings.catalog.clone());
        config.time_zone = Some("UTC".into());
        let client = Trino::new(config).map_err(|e| unavailable(&settings.url, &e))?;
        let mut waited = Duration::ZERO;
        loop {
            match client.ready().await {
                Ok(true) => break,
                Ok(false) if waited < Duration::from_secs(120) => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    waited += Duration::from_millis(500);
                }
                Ok(false) => {
                    return Err(AdapterError::retryable(
                        codes::ADAPTER_UNAVAILABLE,
                        format!(
                            "Trino at {} is still starting (SERVER_STARTING_UP)",
                            settings.url
                        ),
                    ))
                }
                Err(e) => return Err(unavailable(&settings.url, &e)),
            }
        }
        let nessie = match &settings.nessie {
            Some((url, _)) => Some(Nessie::new(url.clone(), Duration::from_secs(10)).map_err(
                |e| AdapterError::new(codes::ADAPTER_UNAVAILABLE, format!("Nessie at {url}: {e}")),
            )?),
            None => None,
        };
        let engine = TrinoEngine {
            client,
            settings,
            nessie,
            views,
            schemas: Mutex::default(),
        };
        engine.check_catalogs().await?;
        engine.check_nessie().await?;
        Ok(engine)
    }

    /// Nessie answers and has the reference: every write reads its table's Iceberg state
    /// there, so an unreachable Nessie stops the run before anything is written.
    async fn check_nessie(&self) -> Result<(), AdapterError> {
        let (Some(nessie), Some((url, reference))) = (&self.nessie, &self.settings.nessie) else {
            return Ok(());
        };
        nessie.reference(reference).await.map(drop).map_err(|e| {
            use phlo_transform_lakehouse::nessie::NessieErrorKind;
            let (code, retryable, help) = match e.kind {
                NessieErrorKind::NotFound => (
                    codes::UNKNOWN_ADAPTER,
                    false,
                    "name a branch Nessie has in [adapter.nessie] ref, or create it",
                ),
                _ => (
                    codes::ADAPTER_UNAVAILABLE,
                    e.kind == NessieErrorKind::Unreachable,
                    "start Nessie (scripts/services.sh up) or check [adapter.nessie] url",
                ),
            };
            AdapterError {
                retryable,
                ..AdapterError::new(
                    code,
                    format!("Nessie at {url} (reference `{reference}`): {e}"),
                )
            }
            .with_help(help)
        })
    }

    fn views_catalog(&self) -> &str {
        self.settings
            .views_catalog
            .as_deref()
            .unwrap_or(&self.settings.catalog)
    }

    /// The configured catalogs exist, and views have a catalog that can hold them.
    async fn check_catalogs(&self) -> Result<(), AdapterError> {
        let result = self
            .query("SELECT catalog_name FROM system.metadata.catalogs", None)
            .await?;
        let known: HashSet<&str> = result.rows.iter().filter_map(|r| r[0].as_str()).collect();
        let mut wanted = vec![self.settings.catalog.as_str()];
        if !self.views.is_empty() {
            wanted.push(self.views_catalog());
        }
        for catalog in wanted {
            if !known.contains(catalog) {
                let mut names: Vec<&str> = known.iter().copied().collect();
                names.sort();
                return Err(AdapterError::new(
                    codes::UNKNOWN_ADAPTER,
                    format!(
                        "Trino at {} has no catalog `{catalog}` (it has: {})",
                        self.settings.url,
                        names.join(", ")
                    ),
                ));
            }
        }
        if !self.views.is_empty()
            && self.settings.nessie.is_some()
            && self.views_catalog() == self.settings.catalog
        {
            let mut views: Vec<&str> = self.views.iter().map(String::as_str).collect();
            views.sort();
            return Err(AdapterError::new(
                codes::DIALECT_UNSUPPORTED,
                format!(
                    "view models ({}) cannot be created: catalog `{}` is on Nessie, and Trino's Nessie catalog has no views",
                    views.join(", "),
                    self.settings.catalog
                ),
            ));
        }
        Ok(())
    }

    /// Runs one statement; `model` maps the error position of statements carrying its query.
    async fn query(
        &self,
        sql: &str,
        model: Option<&MaterializeJob>,
    ) -> Result<QueryResult, AdapterError> {
        self.client
            .execute(sql)
            .await
            .map_err(|e| classify(&e, sql, model, &self.settings.url))
    }

    /// Runs `sql` with its query id registered in `inflight` while it runs.
    async fn tracked(
        &self,
        sql: &str,
        inflight: &InFlight,
        model: Option<&MaterializeJob>,
    ) -> Result<QueryResult, AdapterError> {
        let mut tracked = None;
        let result = self
            .client
            .execute_observed(sql, &mut |id| {
                tracked = Some(inflight.track(QueryId(id.to_owned())));
            })
            .await;
        drop(tracked);
        let result = result.map_err(|e| classify(&e, sql, model, &self.settings.url))?;
        inflight.finished(statistics(&result));
        Ok(result)
    }

    async fn run_all(
        &self,
        statements: &[String],
        inflight: &InFlight,
        model: Option<&MaterializeJob>,
    ) -> Result<Vec<QueryResult>, AdapterError> {
        let mut out = Vec::with_capacity(statements.len());
        for sql in statements {
            out.push(self.tracked(sql, inflight, model).await?);
        }
        Ok(out)
    }

    fn table_relation(&self, relation: &Relation) -> Relation {
        let mut parts = relation.parts.clone();
        if let Some(first) = parts.first_mut() {
            *first = self.settings.catalog.clone();
        }
        Relation { parts }
    }

    fn view_relation(&self, relation: &Relation) -> Relation {
        let mut parts = relation.parts.clone();
        if let Some(first) = parts.first_mut() {
            *first = self.views_catalog().to_owned();
        }
        Relation { parts }
    }

    fn sibling(relation: &Relation, suffix: &str) -> Relation {
        let mut parts = relation.parts.clone();
        if let Some(last) = parts.last_mut() {
            last.push_str(suffix);
        }
        Relation { parts }
    }

    /// Tables and views at `relations`, grouped into one catalog query per catalog.
    async fn relation_info(
        &self,
        relations: &[Relation],
    ) -> Result<Vec<Option<RelationInfo>>, AdapterError> {
        Ok(self
            .relation_details(relations)
            .await?
            .into_iter()
            .map(|d| d.map(|(info, _)| info))
            .collect())
    }

    /// [`Self::relation_info`] with each table's whole comment.
    async fn relation_details(
        &self,
        relations: &[Relation],
    ) -> Result<Vec<Option<(RelationInfo, Option<String>)>>, AdapterError> {
        let mut by_catalog: BTreeMap<&str, Vec<&Relation>> = BTreeMap::new();
        for r in relations {
            if r.parts.len() == 3 {
                by_catalog.entry(r.parts[0].as_str()).or_default().push(r);
            }
        }
        let mut found: BTreeMap<Vec<String>, (RelationInfo, Option<String>)> = BTreeMap::new();
        for (catalog, rels) in by_catalog {
            let wanted = rels
                .iter()
                .map(|r| format!("({}, {})", literal(&r.parts[1]), literal(&r.parts[2])))
                .collect::<Vec<_>>()
                .join(", ");
            // The plain IN lists on each side are what Trino pushes into the metadata tables;
            // with the pair condition alone it lists every table of the catalog (seconds on a
            // Nessie catalog with a few hundred tables).
            let (schemas, tables) = name_lists(&rels);
            let sql = format!(
                "SELECT t.table_schema, t.table_name, t.table_type, c.column_name, c.data_type, c.is_nullable, m.comment \
                 FROM {cat}.information_schema.tables t \
                 LEFT JOIN {cat}.information_schema.columns c \
                   ON c.table_schema = t.table_schema AND c.table_name = t.table_name \
                   AND c.table_schema IN ({schemas}) AND c.table_name IN ({tables}) \
                 LEFT JOIN system.metadata.table_comments m \
                   ON m.catalog_name = {lit} AND m.schema_name = t.table_schema AND m.table_name = t.table_name \
                   AND m.schema_name IN ({schemas}) AND m.table_name IN ({tables}) \
                 WHERE t.table_schema IN ({schemas}) AND t.table_name IN ({tables}) \
                   AND (t.table_schema, t.table_name) IN ({wanted}) \
                 ORDER BY t.table_schema, t.table_name, c.ordinal_position",
                cat = ident(catalog),
                lit = literal(catalog),
            );
            let result = self.query(&sql, None).await?;
            for row in &result.rows {
                let text = |i: usize| row.get(i).and_then(Value::as_str).map(str::to_owned);
                let key = vec![
                    catalog.to_owned(),
                    text(0).unwrap_or_default(),
                    text(1).unwrap_or_default(),
                ];
                let (info, _) = found.entry(key).or_insert_with(|| {
                    let info = RelationInfo {
                        kind: if text(2).as_deref() == Some("VIEW") {
                            RelationKind::View
                        } else {
                            RelationKind::Table
                        },
                        columns: Some(Vec::new()),
                        strategy: text(6).and_then(|c| comment_value(&c, STRATEGY_COMMENT)),
                    };
                    (info, text(6))
                });
                if let (Some(name), Some(columns)) = (text(3), info.columns.as_mut()) {
                    columns.push(ColumnInfo {
                        name,
                        data_type: text(4).unwrap_or_default(),
                        nullable: text(5).as_deref() != Some("NO"),
                    });
                }
            }
        }
        Ok(relations
            .iter()
            .map(|r| found.get(&r.parts).cloned())
            .collect())
    }

    async fn kind_at(&self, relation: &Relation) -> Result<Option<RelationKind>, AdapterError> {
        Ok(self
            .relation_info(std::slice::from_ref(relation))
            .await?
            .remove(0)
            .map(|i| i.kind))
    }

    /// The statements of a full build of `job`'s table (`existing`: what is at its name).
    fn full_build(&self, job: &MaterializeJob, existing_view: bool) -> Vec<String> {
        let target = self.table_relation(&job.relation);
        let mut out = vec![create_schema(&target)];
        if existing_view {
            out.push(format!("DROP VIEW {}", target.quoted()));
        }
        let partitioning = match &job.table.incremental {
            Some(IncrementalStrategy::Partition { columns }) => {
                let list = columns
                    .iter()
                    .map(|c| literal(c))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(" WITH (partitioning = ARRAY[{list}])")
            }
            _ => String::new(),
        };
        let comment = format!(
            "{STRATEGY_COMMENT}{}\n{MODEL_COMMENT}{}\n{GENERATION_COMMENT}{}",
            job.table.label(),
            job.model_id,
            job.generation
        );
        out.push(format!(
            "CREATE OR REPLACE TABLE {}{} COMMENT {}{partitioning} AS {}",
            target.quoted(),
            column_aliases(job),
            literal(&comment),
            job.query
        ));
        out
    }

    async fn build_full(
        &self,
        job: &MaterializeJob,
        inflight: &InFlight,
    ) -> Result<MaterializeOutcome, AdapterError> {
        let target = self.table_relation(&job.relation);
        self.settle(&target).await?;
        let existing = self
            .relation_details(std::slice::from_ref(&target))
            .await?
            .remove(0);
        let comment = existing.as_ref().and_then(|(_, c)| c.as_deref());
        if comment.is_some_and(|c| full_build_committed(c, job)) {
            let (output_identity, physical_state) = self.written(&target).await?;
            return Ok(MaterializeOutcome {
                rows: self.count(&target, inflight).await?,
                already_committed: true,
                write: Some("already committed".into()),
                output_identity,
                physical_state,
            });
        }
        let existing_view = existing.is_some_and(|(info, _)| info.kind == RelationKind::View);
        let statements = self.full_build(job, existing_view);
        // The first statement creates the schema: done once per schema and process.
        self.ensure_schema(&target).await?;
        let results = self.run_all(&statements[1..], inflight, Some(job)).await?;
        // A view of the same model left in the views catalog from before it became a table.
        self.drop_stray_view(&job.relation).await?;
        let rows = results.iter().rev().find_map(|r| r.update_count);
        let (output_identity, physical_state) = self.written(&target).await?;
        Ok(MaterializeOutcome {
            rows,
            write: Some("full".into()),
            output_identity,
            physical_state,
            ..MaterializeOutcome::default()
        })
    }

    async fn drop_stray_view(&self, relation: &Relation) -> Result<(), AdapterError> {
        if self.views_catalog() == self.settings.catalog {
            return Ok(());
        }
        let view = self.view_relation(relation);
        if self.kind_at(&view).await? == Some(RelationKind::View) {
            self.query(&format!("DROP VIEW {}", view.quoted()), None)
                .await?;
        }
        Ok(())
    }

    /// Creates the schema of `relation` unless this engine already made sure it exists.
    /// Trino's Nessie catalog fails `CREATE SCHEMA IF NOT EXISTS` with "Namespace already
    /// exists" when another statement created it in between (parallel models of one
    /// namespace): that is success, once the schema is seen to exist.
    async fn ensure_schema(&self, relation: &Relation) -> Result<(), AdapterError> {
        let schema = Relation::new(relation.parts[..relation.parts.len() - 1].iter().cloned());
        if self.schemas.lock().expect("schemas").contains(&schema) {
            return Ok(());
        }
        if let Err(e) = self.query(&create_schema(relation), None).await {
            let exists = format!(
                "SELECT count(*) FROM {}.information_schema.schemata WHERE schema_name = {}",
                ident(&schema.parts[0]),
                literal(&schema.parts[1])
            );
            let found = self.query(&exists, None).await?;
            if found
                .rows
                .first()
                .and_then(|r| r.first())
                .and_then(Value::as_u64)
                != Some(1)
            {
                return Err(e);
            }
        }
        self.schemas.lock().expect("schemas").insert(schema);
        Ok(())
    }

    async fn count(
        &self,
        table: &Relation,
        inflight: &InFlight,
    ) -> Result<Option<u64>, AdapterError> {
        let count = self
            .tracked(
                &format!("SELECT count(*) FROM {}", table.quoted()),
                inflight,
                None,
            )
            .await?;
        Ok(count
            .rows
            .first()
            .and_then(|r| r.first())
            .and_then(Value::as_u64))
    }

    /// Ends the queries of a killed phlo-transform process that still write `table` (or its
    /// batch table): Trino runs a statement on after its client is gone, so a resumed run's
    /// write could otherwise race it (two appends of the same rows, two snapshots for one
    /// generation). Only unfinished queries of this user from phlo-transform count; they are
    /// cancelled and waited for. (Two runs writing the same table at once are not supported:
    /// nothing locks a table across processes, and the later write ends the earlier one's
    /// query on it.)
    async fn settle(&self, table: &Relation) -> Result<(), AdapterError> {
        let batch = Self::sibling(table, BATCH_SUFFIX);
        // The quoted names are split in the SQL text so that this query does not find itself.
        let mentions = |r: &Relation| {
            let quoted = r.quoted();
            let (head, tail) = quoted.split_at(quoted.len() / 2);
            format!(
                "strpos(query, concat({}, {})) > 0",
                literal(head),
                literal(tail)
            )
        };
        let sql = format!(
            "SELECT query_id FROM system.runtime.queries \
             WHERE state NOT IN ('FINISHED', 'FAILED') AND source = {} AND \"user\" = {} \
             AND ({} OR {})",
            literal(&self.client.config().source),
            literal(&self.settings.user),
            mentions(table),
            mentions(&batch),
        );
        let running: Vec<String> = self
            .query(&sql, None)
            .await?
            .rows
            .iter()
            .filter_map(|r| r.first().and_then(Value::as_str).map(str::to_owned))
            .collect();
        if running.is_empty() {
            return Ok(());
        }
        for id in &running {
            self.client
                .cancel(id)
                .await
                .map_err(|e| classify(&e, "", None, &self.settings.url))?;
        }
        let ids = running
            .iter()
            .map(|id| literal(id))
            .collect::<Vec<_>>()
            .join(", ");
        let unfinished = format!(
            "SELECT count(*) FROM system.runtime.queries \
             WHERE query_id IN ({ids}) AND state NOT IN ('FINISHED', 'FAILED')"
        );
        let started = std::time::Instant::now();
        loop {
            let left = self.query(&unfinished, None).await?;
            if left
                .rows
                .first()
                .and_then(|r| r.first())
                .and_then(Value::as_u64)
                == Some(0)
            {
                return Ok(());
            }
            if started.elapsed() > SETTLE_TIMEOUT {
                return Err(AdapterError::retryable(
                    codes::WRITE_FAILED,
                    format!(
                        "{table}: queries of an earlier run still write it after cancelling ({})",
                        running.join(", ")
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The Iceberg state of the table at `relation`, read natively: metadata location from
    /// Nessie, then the metadata file. `None` without Nessie or for a missing table.
    pub async fn iceberg_state(
        &self,
        relation: &Relation,
    ) -> Result<Option<IcebergTableState>, AdapterError> {
        let (Some(nessie), Some((_, reference))) = (&self.nessie, &self.settings.nessie) else {
            return Ok(None);
        };
        if relation.parts.len() != 3 || relation.parts[0] != self.settings.catalog {
            return Ok(None);
        }
        let key = [relation.parts[1].as_str(), relation.parts[2].as_str()];
        let content = nessie.content(reference, &key).await.map_err(|e| {
            AdapterError::retryable(
                codes::ADAPTER_UNAVAILABLE,
                format!("Nessie: reading {relation}: {e}"),
            )
        })?;
        let Some(Content::IcebergTable {
            metadata_location, ..
        }) = content
        else {
            return Ok(None);
        };
        read_table_state(&metadata_location, self.settings.local_root.as_deref())
            .map(Some)
            .map_err(|e| AdapterError::new(codes::CATALOG_UNAVAILABLE, e.to_string()))
    }

    /// The output identity and physical state of the table at `relation` after a write, from
    /// one read of its Iceberg metadata.
    async fn written(
        &self,
        relation: &Relation,
    ) -> Result<(Option<String>, Option<Value>), AdapterError> {
        let state = self.iceberg_state(relation).await?;
        Ok((
            state.as_ref().map(identity),
            state.as_ref().map(physical_state),
        ))
    }

    /// The statements of an incremental write into the existing table, given its columns:
    /// the batch, the write, the batch dropped again.
    fn incremental_statements(
        &self,
        job: &MaterializeJob,
        strategy: &IncrementalStrategy,
        columns: &[String],
    ) -> Vec<String> {
        let target = self.table_relation(&job.relation);
        let batch = Self::sibling(&target, BATCH_SUFFIX);
        let mut out = vec![
            format!("DROP TABLE IF EXISTS {}", batch.quoted()),
            batch_statement(job, strategy, &target, &batch),
        ];
        match strategy {
            IncrementalStrategy::Partition { columns: parts } => {
                out.push(replace_partitions(&target, &batch.quoted(), columns, parts));
            }
            _ => out.extend(crate::sqlgen::incremental(
                strategy,
                &job.table.key,
                &target,
                &batch.quoted(),
                columns,
            )),
        }
        out.push(format!("DROP TABLE {}", batch.quoted()));
        out
    }
}

/// The distinct schema and table names of three-part `relations`, as SQL literal lists.
fn name_lists(relations: &[&Relation]) -> (String, String) {
    let distinct = |i: usize| {
        relations
            .iter()
            .map(|r| literal(&r.parts[i]))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", ")
    };
    (distinct(1), distinct(2))
}

/// The table comment says a full build of this model in this (or a later) generation wrote
/// the table: a resumed run whose killed process committed the write before it could record
/// it. (Incremental writes need no marker: they add only rows the table lacks, and Trino
/// commits no snapshot for a write of no rows.)
fn full_build_committed(comment: &str, job: &MaterializeJob) -> bool {
    let generation = comment_value(comment, GENERATION_COMMENT).and_then(|g| g.parse().ok());
    comment_value(comment, MODEL_COMMENT).as_deref() == Some(job.model_id.as_str())
        && generation.is_some_and(|g: i64| g >= job.generation)
}

/// The value of the `prefix` line of a table comment (`phlo.strategy=append`).
fn comment_value(comment: &str, prefix: &str) -> Option<String> {
    comment
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(str::to_owned)
}

/// The partitions (`parts` values) whose rows differ between `batch` and `table`: where the
/// batch has a row the table lacks, or the table one the batch lacks.
fn affected_partitions(table: &str, batch: &str, columns: &[String], parts: &[String]) -> String {
    let missing_from = |from: &str, other: &str| {
        format!(
            "SELECT DISTINCT {p} FROM (SELECT {c} FROM {from} AS b WHERE NOT EXISTS (SELECT 1 FROM {other} AS t WHERE {eq})) AS d",
            p = list(parts, ""),
            c = list(columns, "b."),
            eq = same(columns, "t", "b"),
        )
    };
    format!(
        "{} UNION {}",
        missing_from(batch, table),
        missing_from(table, batch)
    )
}

/// Replaces the affected partitions of `table` with the batch's rows in ONE statement (one
/// Iceberg snapshot; Trino has no INSERT OVERWRITE for Iceberg): a MERGE whose source holds a
/// deletion marker per affected partition and the batch rows of those partitions. Each table
/// row matches at most one marker; batch rows never match and are inserted.
fn replace_partitions(
    table: &Relation,
    batch: &str,
    columns: &[String],
    parts: &[String],
) -> String {
    let t = table.quoted();
    let affected = affected_partitions(&t, batch, columns, parts);
    let markers = columns
        .iter()
        .map(|c| {
            if parts.contains(c) {
                format!("a.{}", ident(c))
            } else {
                "NULL".to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "MERGE INTO {t} AS t USING (\
         SELECT {rows}, 'i' AS \"phlo_op\" FROM {batch} AS b WHERE EXISTS (SELECT 1 FROM ({affected}) AS a WHERE {in_affected}) \
         UNION ALL SELECT {markers}, 'd' FROM ({affected}) AS a\
         ) AS s ON {on} AND s.\"phlo_op\" = 'd' \
         WHEN MATCHED THEN DELETE \
         WHEN NOT MATCHED AND s.\"phlo_op\" = 'i' THEN INSERT ({cols}) VALUES ({values})",
        rows = list(columns, "b."),
        in_affected = same(parts, "b", "a"),
        on = same(parts, "t", "s"),
        cols = list(columns, ""),
        values = list(columns, "s."),
    )
}

fn create_schema(relation: &Relation) -> String {
    let schema = Relation::new(relation.parts[..relation.parts.len() - 1].iter().cloned());
    format!("CREATE SCHEMA IF NOT EXISTS {}", schema.quoted())
}

/// The batch of an incremental write: the model's query, or for `window=` only the rows past
/// the table's watermark.
fn batch_statement(
    job: &MaterializeJob,
    strategy: &IncrementalStrategy,
    target: &Relation,
    batch: &Relation,
) -> String {
    let query = job.query.to_string();
    let source = match strategy {
        IncrementalStrategy::Window { column } => {
            crate::sqlgen::past_watermark(&query, target, column)
        }
        _ => query,
    };
    format!(
        "CREATE TABLE {}{} AS {source}",
        batch.quoted(),
        column_aliases(job)
    )
}

/// ` ("a", "b")`: the model's compiled column names for a CTAS, so that the table has the
/// columns the workspace was compiled with and an unnamed expression (`sum(x)`), which Trino
/// refuses to store (MISSING_COLUMN_NAME), gets the compiler's name for it.
fn column_aliases(job: &MaterializeJob) -> String {
    if job.columns.is_empty() {
        return String::new();
    }
    format!(" ({})", list(&job.columns, ""))
}

/// The output identity of a table: its current snapshot and schema (SPEC §39). Another
/// write, through phlo-transform or not, moves the snapshot.
fn identity(s: &IcebergTableState) -> String {
    super::identity::iceberg_identity(s.current_snapshot_id, i64::from(s.current_schema_id))
}

/// What the metadata says of a written table (SPEC §69), as recorded with its
/// materialisation and shown by `inspect`.
fn physical_state(s: &IcebergTableState) -> Value {
    let current = s.current_snapshot();
    serde_json::json!({
        "format": "iceberg",
        "format_version": s.format_version,
        "table_uuid": s.table_uuid,
        "metadata_location": s.metadata_location,
        "snapshot_id": s.current_snapshot_id,
        "snapshot_timestamp_ms": current.map(|c| c.timestamp_ms),
        "snapshot_operation": current.map(|c| c.operation.as_str()),
        "snapshots": s.snapshots.len(),
        "schema_id": s.current_schema_id,
        "partition_spec": {
            "spec_id": s.default_spec_id,
            "fields": s.partition_fields.iter().map(|f| serde_json::json!({
                "name": f.name,
                "transform": f.transform,
                "source": f.source,
            })).collect::<Vec<_>>(),
        },
        "properties": s.properties,
    })
}

/// Trino's statistics of a finished query, for the attempt's record.
fn statistics(result: &QueryResult) -> QueryStatistics {
    QueryStatistics {
        id: QueryId(result.id.clone()),
        rows: result.stats.processed_rows,
        bytes: result.stats.processed_bytes,
        cpu_ms: result.stats.cpu_time_millis,
        wall_ms: result.stats.elapsed_time_millis,
        written_rows: result.update_count,
    }
}

fn unavailable(url: &Url, e: &TrinoError) -> AdapterError {
    AdapterError::retryable(codes::ADAPTER_UNAVAILABLE, format!("Trino at {url}: {e}")).with_help(
        "start Trino (scripts/services.sh up) or check [adapter] url, user and password_env",
    )
}

/// A Trino failure as an adapter error: the code by what failed, retryable only where the
/// engine or the wire says so, the position mapped back to the model file.
fn classify(e: &TrinoError, sql: &str, model: Option<&MaterializeJob>, url: &Url) -> AdapterError {
    let mut message = e.to_string();
    if let (Some(location), Some(job)) = (e.engine.as_ref().and_then(|x| x.location), model) {
        if let Some(offset) = char_offset(sql, location.line, location.column) {
            if let Some((line, column)) = crate::position::map_back(sql, offset, &job.text) {
                message.push_str(&format!(" at {}:{line}:{column}", job.path));
            }
        }
    }
    let code = match (e.kind, e.name()) {
        (FailureKind::Cancelled, _) => codes::QUERY_CANCELLED,
        (FailureKind::Unreachable | FailureKind::Starting | FailureKind::Unauthorized, _) => {
            return AdapterError {
                retryable: e.retryable(),
                ..AdapterError::new(
                    codes::ADAPTER_UNAVAILABLE,
                    format!("Trino at {url}: {message}"),
                )
            }
        }
        (_, "TABLE_NOT_FOUND" | "SCHEMA_NOT_FOUND" | "CATALOG_NOT_FOUND") => {
            codes::RELATION_UNAVAILABLE
        }
        (_, "ICEBERG_COMMIT_ERROR") => codes::WRITE_FAILED,
        _ => codes::QUERY_FAILED,
    };
    AdapterError {
        retryable: e.retryable(),
        ..AdapterError::new(code, message)
    }
}

/// The 1-based character offset of 1-based (line, column) in `text`.
fn char_offset(text: &str, line: u32, column: u32) -> Option<usize> {
    let mut offset = 0;
    for (i, l) in text.split('\n').enumerate() {
        if i + 1 == line as usize {
            return Some(offset + column as usize);
        }
        offset += l.chars().count() + 1;
    }
    None
}

#[async_trait]
impl Adapter for TrinoEngine {
    fn kind(&self) -> phlo_transform_project::AdapterKind {
        phlo_transform_project::AdapterKind::Trino
    }

    fn model_relation(&self, model_name: &str) -> Relation {
        let schema_table = crate::naming::model(
            model_name,
            self.settings.default_schema.as_deref(),
            DEFAULT_SCHEMA,
        );
        let catalog = if self.views.contains(model_name) {
            self.views_catalog()
        } else {
            &self.settings.catalog
        };
        Relation::new(std::iter::once(catalog.to_owned()).chain(schema_table.parts))
    }

    /// `catalog.schema.table` as written; shorter names in the models' catalog.
    fn source_relation(&self, source_name: &str) -> Relation {
        let parts: Vec<&str> = source_name.split('.').collect();
        match parts.as_slice() {
            [_, _, _] => Relation::new(parts),
            [schema, table] => Relation::new([self.settings.catalog.as_str(), schema, table]),
            _ => Relation::new([self.settings.catalog.as_str(), DEFAULT_SCHEMA, source_name]),
        }
    }

    async fn introspect_relations(
        &self,
        relations: &[Relation],
    ) -> Result<Vec<Option<RelationInfo>>, AdapterError> {
        self.relation_info(relations).await
    }

    async fn execute(&self, query: &Query, inflight: &InFlight) -> Result<u64, AdapterError> {
        let sql = crate::sqlgen::count_rows(query);
        let result = self.tracked(&sql, inflight, None).await?;
        result
            .rows
            .first()
            .and_then(|r| r.first())
            .and_then(Value::as_u64)
            .ok_or_else(|| {
                AdapterError::new(
                    codes::QUERY_FAILED,
                    format!("count(*) gave no number: {:?}", result.rows),
                )
            })
    }

    /// Two statements: the query with no rows for its columns and their Trino types, then
    /// its rows with zoned timestamps at UTC ([`super::rows`]), collected whole by the client.
    async fn fetch(
        &self,
        query: &Query,
        inflight: &InFlight,
    ) -> Result<(SchemaRef, Vec<RecordBatch>), AdapterError> {
        let sql = query.to_string();
        let described = self
            .tracked(&super::rows::columns_sql(&sql), inflight, None)
            .await?;
        let read = super::rows::read_sql(&sql, &described.columns);
        let result = self.tracked(&read, inflight, None).await?;
        super::rows::batch(&described.columns, &result.rows)
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
        let view = self.view_relation(&job.relation);
        let mut statements = vec![create_schema(&view)];
        if self.kind_at(&view).await? == Some(RelationKind::Table) {
            statements.push(format!("DROP TABLE {}", view.quoted()));
        }
        statements.push(format!(
            "CREATE OR REPLACE VIEW {} AS {}",
            view.quoted(),
            job.query
        ));
        self.ensure_schema(&view).await?;
        self.run_all(&statements[1..], inflight, Some(job)).await?;
        // A table of the same model left in the tables catalog from before it became a view.
        let table = self.table_relation(&job.relation);
        if table != view && self.kind_at(&table).await? == Some(RelationKind::Table) {
            self.query(&format!("DROP TABLE {}", table.quoted()), None)
                .await?;
        }
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
        let target = self.table_relation(&job.relation);
        self.settle(&target).await?;
        let existing = self.introspect_relation(&target).await?;
        let columns = match existing {
            Some(RelationInfo {
                kind: RelationKind::Table,
                columns: Some(columns),
                strategy: Some(label),
            }) if label == job.table.label() => columns,
            _ => return self.build_full(job, inflight).await,
        };
        let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
        let statements = self.incremental_statements(job, &strategy, &names);
        // The batch first, to compare its columns with the table's.
        let (prepare, apply) = statements.split_at(2);
        self.run_all(prepare, inflight, Some(job)).await?;
        let batch = Self::sibling(&target, BATCH_SUFFIX);
        let batch_columns: Vec<String> = self
            .introspect_relation(&batch)
            .await?
            .and_then(|i| i.columns)
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.name)
            .collect();
        if batch_columns != names {
            // The model's columns changed: the table is rebuilt, as the local engine does.
            self.query(&format!("DROP TABLE IF EXISTS {}", batch.quoted()), None)
                .await?;
            return self.build_full(job, inflight).await;
        }
        let before = self
            .iceberg_state(&target)
            .await?
            .and_then(|s| s.current_snapshot_id);
        self.run_all(apply, inflight, None).await?;
        let rows = self.count(&target, inflight).await?;
        let after = self.iceberg_state(&target).await?;
        let changed =
            after.as_ref().map(|s| s.current_snapshot_id) != Some(before) || self.nessie.is_none();
        let write = match strategy {
            _ if !changed => "no change",
            IncrementalStrategy::Key { .. } => "merge",
            IncrementalStrategy::Partition { .. } => "replace partitions",
            IncrementalStrategy::Window { .. } if !job.table.key.is_empty() => "merge",
            _ => "append",
        };
        Ok(MaterializeOutcome {
            rows,
            write: Some(write.into()),
            output_identity: after.as_ref().map(identity),
            physical_state: after.as_ref().map(physical_state),
            ..MaterializeOutcome::default()
        })
    }

    async fn drop_relation(&self, relation: &Relation) -> Result<(), AdapterError> {
        match self.kind_at(relation).await? {
            Some(RelationKind::Table) => self
                .query(&format!("DROP TABLE {}", relation.quoted()), None)
                .await
                .map(drop),
            Some(RelationKind::View) => self
                .query(&format!("DROP VIEW {}", relation.quoted()), None)
                .await
                .map(drop),
            None => Ok(()),
        }
    }

    /// The latest value of `timestamp_column`, or without one the time of the table's current
    /// Iceberg snapshot; the snapshot id is the source's version.
    async fn source_state(
        &self,
        source: &SourceDecl,
        timestamp_column: Option<&str>,
    ) -> Result<SourceState, AdapterError> {
        let relation = self.source_relation(&source.name);
        let iceberg = self.iceberg_state(&relation).await?;
        let version = iceberg
            .as_ref()
            .and_then(|s| s.current_snapshot_id)
            .map(|id| format!("iceberg:snapshot:{id}"));
        let latest_timestamp = match timestamp_column {
            Some(column) => {
                let sql = format!(
                    "SELECT CAST(to_unixtime(CAST(max({c}) AS timestamp(6) WITH TIME ZONE)) * 1000000 AS bigint) FROM {t}",
                    c = ident(column),
                    t = relation.quoted()
                );
                self.query(&sql, None)
                    .await?
                    .rows
                    .first()
                    .and_then(|r| r.first())
                    .and_then(Value::as_i64)
            }
            None => iceberg
                .as_ref()
                .and_then(|s| s.current_snapshot())
                .map(|s| s.timestamp_ms * 1000),
        };
        Ok(SourceState {
            latest_timestamp,
            version,
        })
    }

    async fn cancel(&self, query: &QueryId) -> Result<(), AdapterError> {
        self.client
            .cancel(&query.0)
            .await
            .map_err(|e| classify(&e, "", None, &self.settings.url))
    }

    async fn output_identity(&self, relation: &Relation) -> Result<Option<String>, AdapterError> {
        Ok(self.iceberg_state(relation).await?.as_ref().map(identity))
    }

    fn statements(&self, job: &MaterializeJob) -> Result<Vec<String>, AdapterError> {
        Ok(match (&job.materialization, &job.table.incremental) {
            (Materialization::View, _) => {
                let view = self.view_relation(&job.relation);
                vec![
                    create_schema(&view),
                    format!("CREATE OR REPLACE VIEW {} AS {}", view.quoted(), job.query),
                ]
            }
            (Materialization::Incremental, Some(s))
                if *s != IncrementalStrategy::Full && !job.table.full_rebuild =>
            {
                self.incremental_statements(job, s, &job.columns)
            }
            _ => self.full_build(job, false),
        })
    }
}
