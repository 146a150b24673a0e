//! Delta tables as exact sinks (decision 7, SPEC §26–29).
//!
//! - Every data commit carries the application transaction `(phlo-transform:<model id>, run
//!   generation)` and the commit metadata `phlo.model_version`, `phlo.run_id`,
//!   `phlo.generation`. A write is skipped when the table's `txn` for the model already reached
//!   the generation, or when the last phlo-transform data commit wrote the same model version
//!   (the same state), unless a full rebuild was asked for. The `txn` is read from the log's
//!   transaction actions (checkpoints included), so maintenance commits and another writer's
//!   OPTIMIZE or VACUUM never hide it.
//! - Tables are created with Change Data Feed on, NOT NULL for `@key`, `@not-null`, enforced
//!   contract `nullable = false` columns and columns the query proves non-null, CHECK
//!   constraints for what the query proves ([`guarantees`]), the configured checkpoint
//!   interval and log retention, and `phlo.strategy` (the build strategy, read back by the
//!   planner to force a full rebuild when it changes).
//! - An existing table with CHECK constraints the model does not guarantee is refused (A005)
//!   unless a full rebuild was asked for, which replaces the table, constraints included.

mod change;
mod created;
mod guarantees;
mod maintenance;
mod relabel;
mod table;

pub use phlo_transform_lakehouse::delta_log::has_commit;
pub use table::open;

use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Expr, LogicalPlan};
use deltalake::kernel::engine::arrow_conversion::TryIntoKernel as _;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::kernel::{StructField, StructType, Transaction};
use deltalake::protocol::SaveMode;
use deltalake::{DeltaTable, DeltaTableError};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_project::IncrementalStrategy;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::{err, io_err};
use crate::kept_rows::Gathered;
use crate::{AdapterError, MaterializeJob};

/// Prefix of the Delta application-transaction id: `phlo-transform:<model id>`.
pub const APP_ID_PREFIX: &str = "phlo-transform:";

/// Table property holding the strategy label the table was built with.
pub const STRATEGY_PROPERTY: &str = "phlo.strategy";
const CONSTRAINT_PREFIX: &str = "delta.constraints.";
/// The name of a CHECK constraint phlo-transform derived from a model (`phlo_check_<n>`).
const OWN_CHECK_PREFIX: &str = "phlo_check_";

/// What a write did.
pub struct Written {
    pub already_committed: bool,
    pub description: String,
    /// The table as the write (and any maintenance after it) left it: read from here, not
    /// opened again.
    pub table: DeltaTable,
    /// The rows of a table created by this write, gathered as they were written (when not
    /// too many) for the session to keep for their readers ([`crate::kept_rows`]).
    pub rows: Option<Gathered>,
}

impl Written {
    fn new(description: impl Into<String>, table: DeltaTable, rows: Option<Gathered>) -> Written {
        Written {
            already_committed: false,
            description: description.into(),
            table,
            rows,
        }
    }
}

/// The strategy label the table at `path` was built with.
pub async fn built_strategy(path: &Path) -> Option<String> {
    let table = open(path).await.ok()??;
    let snapshot = table.snapshot().ok()?;
    snapshot
        .metadata()
        .configuration()
        .get(STRATEGY_PROPERTY)
        .cloned()
}

/// Writes `plan` (the model's query) to the table at `path` as `job` says.
pub async fn write(
    ctx: &SessionContext,
    path: &Path,
    job: &MaterializeJob,
    plan: LogicalPlan,
) -> Result<Written, AdapterError> {
    std::fs::create_dir_all(path)
        .map_err(|e| io_err(format!("cannot create {}: {e}", path.display())))?;
    let app_id = format!("{APP_ID_PREFIX}{}", job.model_id);
    let existing = open(path).await?;
    if let Some(table) = &existing {
        if already_committed(table, &app_id, job).await? {
            return Ok(Written {
                already_committed: true,
                description: "already committed".into(),
                table: table.clone(),
                rows: None,
            });
        }
    }
    let desired = Definition::desired(&plan, job)?;
    let sink = Sink {
        ctx,
        path,
        job,
        app_id,
        desired,
    };
    let mut written = match existing {
        None => sink.full(None, plan).await?,
        Some(table) => {
            let label = table
                .snapshot()
                .ok()
                .and_then(|s| s.metadata().configuration().get(STRATEGY_PROPERTY).cloned());
            let incremental = match &job.table.incremental {
                Some(s) if *s != IncrementalStrategy::Full => Some(s.clone()),
                _ => None,
            };
            let keeps_rows = incremental.is_some()
                && !job.table.full_rebuild
                && label.as_deref() == Some(job.table.label().as_str())
                && sink.desired.same_layout(&table)?;
            // A full write recreates the table with the guarantees the model proves now, so
            // the CHECK constraints phlo-transform added for an earlier version go with it;
            // any other constraint, or one kept with the rows of an incremental write, must
            // hold for the new rows.
            let foreign: Vec<String> = sink
                .desired
                .foreign_constraints(&table)?
                .into_iter()
                .filter(|c| keeps_rows || !c.starts_with(OWN_CHECK_PREFIX))
                .collect();
            if !foreign.is_empty() && !job.table.full_rebuild {
                return Err(err(
                    codes::CONSTRAINT_NOT_GUARANTEED,
                    format!(
                        "table `{}` has CHECK constraints the model does not guarantee: {}; \
                         drop them, or rebuild the table with `run --full-refresh`",
                        job.relation,
                        foreign.join(", ")
                    ),
                ));
            }
            match incremental {
                Some(strategy) if keeps_rows => {
                    let (description, table) = sink.incremental(table, &strategy, plan).await?;
                    Written::new(description, table, None)
                }
                _ => sink.full(Some(table), plan).await?,
            }
        }
    };
    written.table =
        maintenance::after_write(written.table, path, &job.table.maintenance, &job.run_id).await?;
    Ok(written)
}

/// The `txn` of the model reached this generation, or (no full rebuild asked) the last
/// phlo-transform data commit wrote this very model version.
async fn already_committed(
    table: &DeltaTable,
    app_id: &str,
    job: &MaterializeJob,
) -> Result<bool, AdapterError> {
    let log = |e: DeltaTableError| io_err(format!("reading the Delta log: {e}"));
    let snapshot = table.snapshot().map_err(log)?;
    let txn = snapshot
        .transaction_version(table.log_store().as_ref(), app_id)
        .await
        .map_err(log)?;
    if txn.is_some_and(|v| v >= job.generation) {
        return Ok(true);
    }
    if job.table.full_rebuild {
        return Ok(false);
    }
    Ok(maintenance::last_written_version(table).await?.as_deref() == Some(job.version.as_str()))
}

/// The table a model should have: columns with their nullability, partitioning and the
/// properties phlo-transform manages.
struct Definition {
    schema: StructType,
    partition_columns: Vec<String>,
    configuration: BTreeMap<String, String>,
}

impl Definition {
    fn desired(plan: &LogicalPlan, job: &MaterializeJob) -> Result<Definition, AdapterError> {
        let schema = plan.schema().inner();
        let proved = guarantees::prove(&job.query, plan);
        let not_null = |name: &str| {
            let name = name.to_lowercase();
            job.table.key.contains(&name)
                || job.table.not_null.contains(&name)
                || proved.not_null.contains(&name)
        };
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| {
                let nullable = f.is_nullable() && !not_null(f.name());
                f.as_ref().clone().with_nullable(nullable)
            })
            .collect();
        let arrow = Arc::new(Schema::new(fields));
        let schema: StructType = deltalake::kernel::schema::normalize_for_delta(&arrow)
            .as_ref()
            .try_into_kernel()
            .map_err(|e| err(codes::QUERY_FAILED, e.to_string()))?;
        let partition_columns = match &job.table.incremental {
            Some(IncrementalStrategy::Partition { columns }) => columns.clone(),
            _ => Vec::new(),
        };
        let mut configuration = BTreeMap::from([
            ("delta.enableChangeDataFeed".to_string(), "true".to_string()),
            (STRATEGY_PROPERTY.to_string(), job.table.label()),
        ]);
        let m = &job.table.maintenance;
        if let Some(n) = m.checkpoint_interval {
            configuration.insert("delta.checkpointInterval".into(), n.to_string());
        }
        if let Some(d) = m.log_retention {
            configuration.insert(
                "delta.logRetentionDuration".into(),
                format!("interval {} seconds", d.as_secs()),
            );
        }
        for (i, (_, check)) in proved.checks.iter().enumerate() {
            configuration.insert(
                format!("{CONSTRAINT_PREFIX}{OWN_CHECK_PREFIX}{}", i + 1),
                check.clone(),
            );
        }
        Ok(Definition {
            schema,
            partition_columns,
            configuration,
        })
    }

    /// The desired CHECK constraints: name and SQL.
    fn constraints(&self) -> impl Iterator<Item = (&str, &str)> {
        self.configuration
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(CONSTRAINT_PREFIX)?, v.as_str())))
    }

    /// CHECK constraints of `table` that are not among the desired ones.
    fn foreign_constraints(&self, table: &DeltaTable) -> Result<Vec<String>, AdapterError> {
        let snapshot = table.snapshot().map_err(|e| io_err(e.to_string()))?;
        let mut foreign: Vec<String> = snapshot
            .metadata()
            .configuration()
            .iter()
            .filter(|(k, v)| {
                k.starts_with(CONSTRAINT_PREFIX) && self.configuration.get(*k) != Some(v)
            })
            .map(|(k, v)| format!("{} ({v})", &k[CONSTRAINT_PREFIX.len()..]))
            .collect();
        foreign.sort();
        Ok(foreign)
    }

    /// Same columns (names, types, nullability) and partitioning as `table`.
    fn same_layout(&self, table: &DeltaTable) -> Result<bool, AdapterError> {
        let snapshot = table.snapshot().map_err(|e| io_err(e.to_string()))?;
        let fields = |s: &StructType| -> Vec<StructField> { s.fields().cloned().collect() };
        Ok(fields(&snapshot.schema()) == fields(&self.schema)
            && snapshot.metadata().partition_columns() == self.partition_columns.as_slice())
    }

    /// Same layout and every managed property as desired: an overwrite keeps the table's
    /// metadata, so nothing needs recreating.
    fn matches(&self, table: &DeltaTable) -> Result<bool, AdapterError> {
        let snapshot = table.snapshot().map_err(|e| io_err(e.to_string()))?;
        let config = snapshot.metadata().configuration();
        let constraints = config
            .keys()
            .filter(|k| k.starts_with(CONSTRAINT_PREFIX))
            .count();
        let desired_constraints = self
            .configuration
            .keys()
            .filter(|k| k.starts_with(CONSTRAINT_PREFIX))
            .count();
        Ok(self.same_layout(table)?
            && constraints == desired_constraints
            && self
                .configuration
                .iter()
                .all(|(k, v)| config.get(k) == Some(v)))
    }
}

struct Sink<'a> {
    ctx: &'a SessionContext,
    path: &'a Path,
    job: &'a MaterializeJob,
    app_id: String,
    desired: Definition,
}

impl Sink<'_> {
    /// The commit metadata and application transaction of a data commit.
    fn properties(&self) -> CommitProperties {
        let metadata = [
            ("phlo.model_version", serde_json::json!(self.job.version)),
            ("phlo.run_id", serde_json::json!(self.job.run_id)),
            ("phlo.generation", serde_json::json!(self.job.generation)),
        ]
        .map(|(k, v)| (k.to_string(), v));
        CommitProperties::default()
            .with_application_transaction(Transaction::new(&self.app_id, self.job.generation))
            .with_metadata(metadata)
    }

    fn session(&self) -> Arc<datafusion::execution::SessionState> {
        Arc::new(self.ctx.state())
    }

    /// Replaces the table's rows with the query's: an overwrite when the table is as desired,
    /// else the table created (or recreated) with the rows in one commit ([`created`]).
    async fn full(
        &self,
        table: Option<DeltaTable>,
        plan: LogicalPlan,
    ) -> Result<Written, AdapterError> {
        let table = match table {
            Some(t) if self.desired.matches(&t)? => t,
            existing => {
                let mode = match existing {
                    Some(_) => SaveMode::Overwrite,
                    None => SaveMode::ErrorIfExists,
                };
                let (table, rows) = self.create_with_rows(mode, plan).await?;
                return Ok(Written::new("full", table, Some(rows)));
            }
        };
        let plan = relabel::relabelled(self.ctx, plan)
            .await
            .map_err(|e| crate::cause::datafusion_error(&e))?;
        let table = table
            .write(Vec::new())
            .with_input_plan(plan)
            .with_session_state(self.session())
            .with_save_mode(SaveMode::Overwrite)
            .with_partition_columns(self.desired.partition_columns.clone())
            .with_commit_properties(self.properties())
            .await
            .map_err(classify)?;
        Ok(Written::new("full", table, None))
    }

    async fn incremental(
        &self,
        table: DeltaTable,
        strategy: &IncrementalStrategy,
        plan: LogicalPlan,
    ) -> Result<(String, DeltaTable), AdapterError> {
        table
            .update_datafusion_session(&self.ctx.state())
            .map_err(|e| io_err(e.to_string()))?;
        let snapshot = table.snapshot().map_err(|e| io_err(e.to_string()))?;
        let arrow = snapshot.snapshot().arrow_schema();
        let columns: Vec<String> = arrow.fields().iter().map(|f| f.name().clone()).collect();
        let provider = table
            .table_provider()
            .await
            .map_err(|e| io_err(e.to_string()))?;
        let old = self
            .ctx
            .read_table(provider)
            .map_err(|e| err(codes::QUERY_FAILED, e.to_string()))?;
        let new = change::conform(DataFrame::new(self.ctx.state(), plan), &arrow)?;
        match strategy {
            IncrementalStrategy::Append => {
                let rows = change::anti_join(new, old, &columns)?;
                self.append(table, rows).await
            }
            IncrementalStrategy::Key { columns: key } => {
                let rows = change::anti_join(new, old, &columns)?;
                self.merge(table, rows, key, &columns).await
            }
            IncrementalStrategy::Window { column } => {
                let watermark = change::watermark(old, column).await?;
                let rows = change::past_watermark(new, column, watermark)?;
                if self.job.table.key.is_empty() {
                    self.append(table, rows).await
                } else {
                    self.merge(table, rows, &self.job.table.key, &columns).await
                }
            }
            IncrementalStrategy::Partition { columns: parts } => {
                let added = change::anti_join(new.clone(), old.clone(), &columns)?;
                let removed = change::anti_join(old, new.clone(), &columns)?;
                let mut affected = change::partitions(added, parts).await?;
                for p in change::partitions(removed, parts).await? {
                    if !affected.contains(&p) {
                        affected.push(p);
                    }
                }
                let Some(predicate) = change::partition_predicate(parts, &affected) else {
                    return Ok(("no change".into(), table));
                };
                self.replace(table, new, predicate, affected.len()).await
            }
            IncrementalStrategy::Full => unreachable!("`full` is built by `Sink::full`"),
        }
    }

    async fn append(
        &self,
        table: DeltaTable,
        rows: DataFrame,
    ) -> Result<(String, DeltaTable), AdapterError> {
        let table = table
            .write(Vec::new())
            .with_input_plan(rows.into_unoptimized_plan())
            .with_session_state(self.session())
            .with_save_mode(SaveMode::Append)
            .with_commit_properties(self.properties())
            .await
            .map_err(classify)?;
        Ok(("append".into(), table))
    }

    async fn merge(
        &self,
        table: DeltaTable,
        rows: DataFrame,
        key: &[String],
        columns: &[String],
    ) -> Result<(String, DeltaTable), AdapterError> {
        let side =
            |alias: &str, c: &str| Expr::Column(datafusion::common::Column::new(Some(alias), c));
        let on = key
            .iter()
            .map(|k| side("t", k).eq(side("s", k)))
            .reduce(Expr::and)
            .expect("a merge key is never empty");
        let (table, metrics) = table
            .merge(rows, on)
            .with_source_alias("s")
            .with_target_alias("t")
            .when_matched_update(|u| {
                columns
                    .iter()
                    .filter(|c| !key.contains(c))
                    .fold(u, |u, c| u.update(c.as_str(), side("s", c)))
            })
            .and_then(|m| {
                m.when_not_matched_insert(|i| {
                    columns
                        .iter()
                        .fold(i, |i, c| i.set(c.as_str(), side("s", c)))
                })
            })
            .map_err(classify)?
            .with_session_state(self.session())
            .with_commit_properties(self.properties())
            .await
            .map_err(classify)?;
        let description = format!(
            "merge ({} inserted, {} updated)",
            metrics.num_target_rows_inserted, metrics.num_target_rows_updated
        );
        Ok((description, table))
    }

    async fn replace(
        &self,
        table: DeltaTable,
        new: DataFrame,
        predicate: Expr,
        partitions: usize,
    ) -> Result<(String, DeltaTable), AdapterError> {
        let rows = new
            .filter(predicate.clone())
            .map_err(|e| err(codes::QUERY_FAILED, e.to_string()))?;
        let table = table
            .write(Vec::new())
            .with_input_plan(rows.into_unoptimized_plan())
            .with_session_state(self.session())
            .with_save_mode(SaveMode::Overwrite)
            .with_replace_where(predicate)
            .with_commit_properties(self.properties())
            .await
            .map_err(classify)?;
        Ok((format!("replace {partitions} partition(s)"), table))
    }
}

/// The rows of `table` from its files' statistics, without reading them; `None` when a file
/// has no row count or carries a deletion vector (its count is before the deletions).
pub fn row_count(table: &DeltaTable) -> Option<u64> {
    let snapshot = table.snapshot().ok()?;
    snapshot.log_data().iter().try_fold(0u64, |rows, file| {
        match file.deletion_vector_descriptor() {
            Some(_) => None,
            None => Some(rows + file.num_records()? as u64),
        }
    })
}

/// A delta-rs failure by its cause ([`crate::cause`]): storage and commit contention may pass
/// on a retry; a division by zero, a failed cast or rows breaking a constraint never do.
pub fn classify(e: DeltaTableError) -> AdapterError {
    crate::cause::delta_error(&e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::DataType;

    fn batch(values: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values.to_vec()))]).unwrap()
    }

    async fn write(table: DeltaTable, values: &[i64], mode: SaveMode) -> DeltaTable {
        table
            .write(vec![batch(values)])
            .with_save_mode(mode)
            .await
            .unwrap()
    }

    /// Counted from the files' statistics after appends, an overwrite and a delete, as a
    /// scan of the table counts them.
    #[tokio::test]
    async fn row_count_follows_every_kind_of_commit() {
        let dir = tempfile::tempdir().unwrap();
        let url = deltalake::ensure_table_uri(dir.path().to_string_lossy()).unwrap();
        let table = DeltaTable::try_from_url(url).await.unwrap();
        let table = write(table, &[1, 2, 3], SaveMode::Append).await;
        assert_eq!(row_count(&table), Some(3));
        let table = write(table, &[4, 5], SaveMode::Append).await;
        assert_eq!(row_count(&table), Some(5));
        let table = write(table, &[6, 7, 8, 9], SaveMode::Overwrite).await;
        assert_eq!(row_count(&table), Some(4));
        let (table, _) = table.delete().with_predicate("id > 7").await.unwrap();
        assert_eq!(row_count(&table), Some(2));
        let reopened = open(dir.path()).await.unwrap().unwrap();
        assert_eq!(row_count(&reopened), Some(2));
    }
}
