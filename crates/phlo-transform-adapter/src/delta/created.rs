//! A table created (or recreated) together with its rows in one commit.
//!
//! delta-rs's `WriteBuilder` can create a table in its first commit, but takes the columns'
//! nullability from the query rather than the model and refuses table properties it does not
//! know (`phlo.strategy`, `delta.constraints.*`). Creating the table first and writing after
//! costs a second commit, a second log load and the writer's own planning for every new table
//! (about a seventh of a first `run`). So the rows are written here with delta-rs's
//! `DeltaWriter`, checked as delta-rs's write checks them (every NOT NULL column and CHECK
//! constraint of the new table; a row failing one fails the write with `InvalidData`, which
//! names the column or constraint), and committed with the table's protocol and metadata by
//! `CreateBuilder`, which takes the data files as extra actions. A write that fails commits
//! nothing: a table being recreated keeps its old definition and rows.

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::logical_expr::{cast, Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::execute_stream;
use deltalake::delta_datafusion::expr::parse_predicate_expression;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow as _;
use deltalake::kernel::Action;
use deltalake::operations::write::writer::{DeltaWriter, WriterConfig};
use deltalake::protocol::SaveMode;
use deltalake::table::config::DEFAULT_TARGET_FILE_SIZE;
use deltalake::{DeltaResult, DeltaTable, DeltaTableBuilder, DeltaTableError};
use futures::StreamExt;
use std::sync::Arc;

use super::{classify, Sink};
use crate::cause::datafusion_error;
use crate::error::io_err;
use crate::kept_rows::Gathered;
use crate::AdapterError;

impl Sink<'_> {
    /// Creates the table as desired, holding the rows of `plan`; `mode` is `Overwrite` to
    /// replace a table whose definition differs (its files are removed in the same commit).
    /// Also hands back the rows, gathered as they were written.
    pub(super) async fn create_with_rows(
        &self,
        mode: SaveMode,
        plan: LogicalPlan,
    ) -> Result<(DeltaTable, Gathered), AdapterError> {
        let url = deltalake::ensure_table_uri(self.path.to_string_lossy())
            .map_err(|e| io_err(e.to_string()))?;
        // Not loaded: `CreateBuilder` loads an existing table itself when it replaces it.
        let table = DeltaTableBuilder::from_url(url)
            .and_then(|b| b.build())
            .map_err(|e| io_err(e.to_string()))?;
        let schema: Schema = (&self.desired.schema)
            .try_into_arrow()
            .map_err(|e| io_err(format!("the table's columns in Arrow: {e}")))?;
        let (adds, rows) = self.write_files(&table, Arc::new(schema), plan).await?;
        let table = table
            .create()
            .with_columns(self.desired.schema.fields().cloned())
            .with_partition_columns(self.desired.partition_columns.clone())
            .with_configuration(
                self.desired
                    .configuration
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(v.clone()))),
            )
            .with_raise_if_key_not_exists(false)
            .with_save_mode(mode)
            .with_actions(adds.into_iter().map(Action::Add))
            .with_commit_properties(self.properties())
            .await
            .map_err(classify)?;
        Ok((table, rows))
    }

    /// Runs `plan` cast to the table's column types and writes its rows as Parquet files of
    /// the table, after checking them; the files' `add` actions, not committed, and the rows.
    async fn write_files(
        &self,
        table: &DeltaTable,
        schema: SchemaRef,
        plan: LogicalPlan,
    ) -> Result<(Vec<deltalake::kernel::Add>, Gathered), AdapterError> {
        let state = self.ctx.state();
        let plan = conformed(plan, &schema).map_err(|e| datafusion_error(&e))?;
        let physical = state
            .create_physical_plan(&plan)
            .await
            .map_err(|e| datafusion_error(&e))?;
        let check = Check::new(&state, &schema, self.desired.constraints())?;
        // delta-rs's write defaults: Snappy, files of about 100 MiB, statistics on the first
        // 32 columns (the table sets neither `delta.targetFileSize` nor the statistics ones).
        let config = WriterConfig::new(
            schema.clone(),
            self.desired.partition_columns.clone(),
            None,
            Some(DEFAULT_TARGET_FILE_SIZE),
            None,
            Default::default(),
            None,
        );
        let mut writer = DeltaWriter::new(table.object_store(), config);
        let mut batches =
            execute_stream(physical, state.task_ctx()).map_err(|e| datafusion_error(&e))?;
        let mut rows = Gathered::default();
        while let Some(batch) = batches.next().await {
            let batch = batch.map_err(|e| datafusion_error(&e))?;
            check.rows(&batch).map_err(classify)?;
            // Only the nullability differs (the query was cast to the column types), and the
            // check above proved the NOT NULL columns hold no null.
            let batch =
                RecordBatch::try_new(schema.clone(), batch.columns().to_vec()).map_err(|e| {
                    let (cause, message) = crate::cause::of_arrow(&e);
                    cause.error(message)
                })?;
            writer.write(&batch).await.map_err(classify)?;
            rows.push(&batch);
        }
        Ok((writer.close().await.map_err(classify)?, rows))
    }
}

/// `plan` with every column cast to the table's type where it differs (a view type, a
/// timestamp's unit), as delta-rs's write casts its input.
fn conformed(plan: LogicalPlan, schema: &Schema) -> datafusion::common::Result<LogicalPlan> {
    let same = plan
        .schema()
        .fields()
        .iter()
        .zip(schema.fields())
        .all(|(from, to)| from.data_type() == to.data_type());
    if same {
        return Ok(plan);
    }
    let columns: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .zip(schema.fields())
        .map(|(column, to)| {
            let name = to.name().clone();
            cast(Expr::Column(column), to.data_type().clone()).alias(name)
        })
        .collect();
    LogicalPlanBuilder::from(plan).project(columns)?.build()
}

/// What every row must satisfy: the table's NOT NULL columns hold no null and its CHECK
/// constraints are true (a CHECK that is null fails, as in delta-rs).
struct Check {
    /// Index and name of each NOT NULL column.
    not_null: Vec<(usize, String)>,
    /// Each CHECK constraint's name, SQL and compiled expression.
    constraints: Vec<(String, String, Arc<dyn PhysicalExpr>)>,
}

impl Check {
    fn new<'a>(
        state: &datafusion::execution::SessionState,
        schema: &SchemaRef,
        constraints: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<Check, AdapterError> {
        let df_schema =
            DFSchema::try_from(schema.as_ref().clone()).map_err(|e| datafusion_error(&e))?;
        let not_null = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.is_nullable())
            .map(|(i, f)| (i, f.name().clone()))
            .collect();
        let constraints = constraints
            .map(|(name, sql)| {
                let expr = parse_predicate_expression(&df_schema, sql, state).map_err(classify)?;
                let compiled = state
                    .create_physical_expr(expr, &df_schema)
                    .map_err(|e| datafusion_error(&e))?;
                Ok((name.to_string(), sql.to_string(), compiled))
            })
            .collect::<Result<_, AdapterError>>()?;
        Ok(Check {
            not_null,
            constraints,
        })
    }

    /// `InvalidData` (a constraint violation) naming the first rule `batch` breaks.
    fn rows(&self, batch: &RecordBatch) -> DeltaResult<()> {
        let broken = |rows: usize, rule: String| {
            let rows = match rows {
                1 => "1 row breaks".to_string(),
                n => format!("{n} rows break"),
            };
            Err(DeltaTableError::InvalidData {
                message: format!("{rows} {rule}"),
            })
        };
        for (i, name) in &self.not_null {
            let nulls = batch.column(*i).null_count();
            if nulls > 0 {
                return broken(nulls, format!("NOT NULL column `{name}` (null)"));
            }
        }
        for (name, sql, expr) in &self.constraints {
            let valid = expr.evaluate(batch)?.into_array(batch.num_rows())?;
            let valid = valid.as_boolean();
            let failed = valid.len() - valid.true_count();
            if failed > 0 {
                return broken(failed, format!("CHECK constraint `{name}` ({sql})"));
            }
        }
        Ok(())
    }
}
