//! Views read from their rows, computed once per session.
//!
//! DataFusion inlines a view's plan into every query that reads it, so each model reading a
//! chain of views analyses, optimises and physically plans the whole chain again, and runs
//! it again: at 1,000 realistic models about half of a first `run`'s CPU went to planning
//! such inlined plans, and staging views over CSV sources parsed the files once per reader.
//! A view written in this session is instead registered as a [`ComputedView`]: the first
//! query that reads it runs the view once and keeps its rows in memory (within the session's
//! budget, see [`crate::kept_rows`]); later reads scan them.
//!
//! - A view too large to keep, or whose computation fails, is read as DataFusion reads a view
//!   it does not inline: its plan with the reader's projection, filters and limit applied,
//!   so they are still pushed into it (and a failure is reported where the reader meets it).
//! - Filters are accepted as inexact: the reader keeps its own filter above the scan, which
//!   kept rows need.
//! - The rows are the view's when first read. In a run every model that reads the view is
//!   built after the view's inputs, so they do not change while it is kept; a view written
//!   again gets a new provider, and with it an empty cache.

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{MemTable, Session, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::view::ViewTable;
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, LogicalPlan, TableProviderFilterPushDown};
use datafusion::physical_plan::{execute_stream, ExecutionPlan};
use futures::StreamExt;
use std::any::Any;
use std::sync::Arc;
use tokio::sync::OnceCell;

use crate::kept_rows::{Budget, Gathered};

/// A view whose rows are computed on first read and kept (see the module documentation).
#[derive(Debug)]
pub struct ComputedView {
    view: ViewTable,
    /// `None` once the rows were found too large to keep, or failed.
    rows: OnceCell<Option<Arc<MemTable>>>,
    budget: Budget,
}

impl ComputedView {
    pub fn new(plan: LogicalPlan, sql: String, budget: Budget) -> ComputedView {
        ComputedView {
            view: ViewTable::new(plan, Some(sql)),
            rows: OnceCell::new(),
            budget,
        }
    }

    async fn compute(&self, state: &dyn Session) -> Option<Arc<MemTable>> {
        let physical = state
            .create_physical_plan(self.view.logical_plan())
            .await
            .ok()?;
        let mut stream = execute_stream(physical, state.task_ctx()).ok()?;
        let mut rows = Gathered::default();
        while let Some(batch) = stream.next().await {
            rows.push(&batch.ok()?);
        }
        rows.keep(&self.view.schema(), &self.budget)
    }
}

#[async_trait]
impl TableProvider for ComputedView {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn schema(&self) -> SchemaRef {
        self.view.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn get_table_definition(&self) -> Option<&str> {
        self.view.get_table_definition()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match self.rows.get_or_init(|| self.compute(state)).await {
            Some(rows) => rows.scan(state, projection, &[], limit).await,
            None => self.view.scan(state, projection, filters, limit).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept_rows::PER_SESSION;
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::prelude::SessionContext;
    use std::sync::atomic::AtomicUsize;

    /// A session with `t(a)` = 0, 1, 2, 3 and the view `v` over it as a [`ComputedView`]
    /// with `budget` bytes for its rows.
    async fn session(view_sql: &str, budget: usize) -> (SessionContext, Arc<ComputedView>) {
        let ctx = SessionContext::new();
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
        let a = Arc::new(Int64Array::from(vec![0, 1, 2, 3]));
        let batch = RecordBatch::try_new(schema.clone(), vec![a]).unwrap();
        let t = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("t", Arc::new(t)).unwrap();
        let plan = ctx.state().create_logical_plan(view_sql).await.unwrap();
        let view = Arc::new(ComputedView::new(
            plan,
            view_sql.into(),
            Arc::new(AtomicUsize::new(budget)),
        ));
        ctx.register_table("v", view.clone()).unwrap();
        (ctx, view)
    }

    async fn column(ctx: &SessionContext, sql: &str) -> Vec<i64> {
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let mut values: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_any().downcast_ref::<Int64Array>().unwrap())
            .map(|v| v.unwrap())
            .collect();
        values.sort();
        values
    }

    #[tokio::test]
    async fn kept_rows_and_an_exhausted_budget_read_the_same() {
        let sql = "select a, a * 10 as b from t where a > 0";
        let (kept, view) = session(sql, PER_SESSION).await;
        let (read, unkept) = session(sql, 0).await;
        for query in ["select b from v where a >= 2", "select a from v limit 10"] {
            assert_eq!(column(&kept, query).await, column(&read, query).await);
        }
        assert_eq!(
            column(&kept, "select b from v where a >= 2").await,
            [20, 30]
        );
        assert!(view.rows.get().unwrap().is_some(), "the rows are kept");
        assert!(unkept.rows.get().unwrap().is_none(), "no budget: not kept");
    }

    /// The whole view fails (10 / 0), but the reader's filter excludes that row: the view is
    /// read with the filter pushed into it, as DataFusion reads any view.
    #[tokio::test]
    async fn a_view_that_fails_whole_is_read_with_the_readers_filter() {
        let (ctx, view) = session("select a, 10 / a as r from t", PER_SESSION).await;
        assert_eq!(
            column(&ctx, "select r from v where a <> 0").await,
            [3, 5, 10]
        );
        assert!(view.rows.get().unwrap().is_none());
    }
}
