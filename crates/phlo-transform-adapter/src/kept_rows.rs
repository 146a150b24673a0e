//! Rows a session keeps in memory for the readers of a relation it wrote.
//!
//! A first `run` writes every model, and each is then read by its downstream models and its
//! data tests. Views keep the rows they compute on their first read ([`crate::computed_view`]);
//! tables keep the rows they were created with ([`KeptTable`]), so their readers scan memory
//! instead of planning a Delta scan and decoding Parquet again (the rows are the ones just
//! committed, in the same order). At most [`PER_RELATION`] bytes are kept for one relation,
//! and [`PER_SESSION`] for all the views of a session and as much again for all its tables.
//! The budgets are separate so that tables never crowd views out: a view that is not kept is
//! inlined into the plan of every reader, planned and run again each time (at 10,000 models,
//! one shared budget ran out and made the first run 20–40 % slower), while a table that is not
//! kept is read from its files, as before.

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{MemTable, Session, TableProvider};
use datafusion::common::{Constraints, Result, Statistics};
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The most memory one relation's kept rows may take.
pub const PER_RELATION: usize = 32 << 20;
/// The most memory the kept rows of a session's views, or of its tables, may take.
pub const PER_SESSION: usize = 256 << 20;

/// What is left of a session's [`PER_SESSION`] bytes for one kind of relation.
pub type Budget = Arc<AtomicUsize>;

/// A new session's budget.
pub fn budget() -> Budget {
    Arc::new(AtomicUsize::new(PER_SESSION))
}

/// Batches gathered while they stream past, until they exceed [`PER_RELATION`].
#[derive(Default)]
pub struct Gathered {
    batches: Vec<RecordBatch>,
    bytes: usize,
    too_large: bool,
}

impl Gathered {
    pub fn push(&mut self, batch: &RecordBatch) {
        if self.too_large {
            return;
        }
        self.bytes += batch.get_array_memory_size();
        if self.bytes > PER_RELATION {
            self.too_large = true;
            self.batches = Vec::new();
        } else {
            self.batches.push(batch.clone());
        }
    }

    /// The rows as one batch of `schema` with buffers of its own size (a small batch of a
    /// query may hold buffers sized for a whole batch, 8,192 rows), taken from `budget`;
    /// `None` when they were too large, do not fit `schema`, or the budget is spent.
    pub fn keep(self, schema: &SchemaRef, budget: &Budget) -> Option<Arc<MemTable>> {
        if self.too_large {
            return None;
        }
        let batches = self
            .batches
            .into_iter()
            .map(|b| conformed(b, schema))
            .collect::<Option<Vec<_>>>()?;
        let rows = concat_batches(schema, &batches).ok()?;
        let bytes = rows.get_array_memory_size();
        budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(bytes)
            })
            .ok()?;
        MemTable::try_new(schema.clone(), vec![vec![rows]])
            .ok()
            .map(Arc::new)
    }
}

/// `batch` as a batch of `schema`, whose columns it must have in the same order: cast where
/// their type differs (a stored table may read strings as views), and carrying `schema`, so
/// scans of the rows match what readers were planned against (a UNION's batches may each
/// claim another nullability; `try_new` checks the values, not the claim).
fn conformed(batch: RecordBatch, schema: &SchemaRef) -> Option<RecordBatch> {
    let names = |s: &datafusion::arrow::datatypes::Schema| {
        s.fields()
            .iter()
            .map(|f| f.name().clone())
            .collect::<Vec<_>>()
    };
    if names(&batch.schema()) != names(schema) {
        return None;
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(
            |(column, field)| match column.data_type() == field.data_type() {
                true => Some(column.clone()),
                false => cast(column, field.data_type()).ok(),
            },
        )
        .collect::<Option<Vec<_>>>()?;
    RecordBatch::try_new(schema.clone(), columns).ok()
}

/// A table written in this session, read from the rows it was written with.
///
/// Everything but the scan is the stored table's (schema, definition, constraints,
/// statistics). Filters are accepted as inexact, so readers keep their own filter above the
/// scan of the rows.
#[derive(Debug)]
pub struct KeptTable {
    stored: Arc<dyn TableProvider>,
    rows: Arc<MemTable>,
}

impl KeptTable {
    /// `stored` read from `rows`; `None` unless the rows fit the stored table's schema.
    pub fn new(
        stored: Arc<dyn TableProvider>,
        rows: Gathered,
        budget: &Budget,
    ) -> Option<KeptTable> {
        let rows = rows.keep(&stored.schema(), budget)?;
        Some(KeptTable { stored, rows })
    }

    /// `stored` read from `rows` when they can be kept ([`KeptTable::new`]), else `stored`.
    pub fn or_stored(
        stored: Arc<dyn TableProvider>,
        rows: Gathered,
        budget: &Budget,
    ) -> Arc<dyn TableProvider> {
        match KeptTable::new(stored.clone(), rows, budget) {
            Some(kept) => Arc::new(kept),
            None => stored,
        }
    }
}

#[async_trait]
impl TableProvider for KeptTable {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn schema(&self) -> SchemaRef {
        self.stored.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.stored.constraints()
    }

    fn table_type(&self) -> TableType {
        self.stored.table_type()
    }

    fn get_table_definition(&self) -> Option<&str> {
        self.stored.get_table_definition()
    }

    fn statistics(&self) -> Option<Statistics> {
        self.stored.statistics()
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
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.rows.scan(state, projection, &[], limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn batch(values: Vec<i64>, nullable: bool) -> RecordBatch {
        let schema = Schema::new(vec![Field::new("a", DataType::Int64, nullable)]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(Int64Array::from(values))]).unwrap()
    }

    #[test]
    fn gathered_rows_are_kept_as_one_batch_of_the_given_schema_and_paid_for() {
        let mut gathered = Gathered::default();
        gathered.push(&batch(vec![1, 2], true));
        gathered.push(&batch(vec![3], true));
        let stored = batch(vec![], false).schema();
        let budget = budget();
        let kept = gathered.keep(&stored, &budget).expect("kept");
        assert_eq!(kept.schema(), stored);
        assert!(budget.load(Ordering::SeqCst) < PER_SESSION);
    }

    #[test]
    fn rows_are_not_kept_past_the_budget_or_against_another_schema() {
        let mut gathered = Gathered::default();
        gathered.push(&batch(vec![1, 2], true));
        let empty: Budget = Arc::new(AtomicUsize::new(0));
        assert!(gathered
            .keep(&batch(vec![], true).schema(), &empty)
            .is_none());

        let mut gathered = Gathered::default();
        gathered.push(&batch(vec![1], true));
        let renamed = Schema::new(vec![Field::new("b", DataType::Int64, true)]);
        assert!(gathered.keep(&Arc::new(renamed), &budget()).is_none());
    }

    /// The stored table here is itself in memory and holds other rows than the kept ones, so
    /// the results show which are read: the kept rows, filtered by the reader.
    #[tokio::test]
    async fn a_kept_table_is_read_from_its_rows_with_the_readers_filter() {
        let stored = batch(vec![7, 8, 9], false);
        let stored = MemTable::try_new(stored.schema(), vec![vec![stored]]).unwrap();
        let mut written = Gathered::default();
        written.push(&batch(vec![1, 2, 3], true));
        let kept = KeptTable::new(Arc::new(stored), written, &budget()).expect("kept");
        assert!(
            !kept.schema().field(0).is_nullable(),
            "the stored table's schema"
        );
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_table("t", Arc::new(kept)).unwrap();
        let rows = ctx
            .sql("select a from t where a > 1 order by a")
            .await
            .unwrap();
        let rows = rows.collect().await.unwrap();
        let values: Vec<i64> = rows[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .values()
            .to_vec();
        assert_eq!(values, [2, 3]);
    }

    #[test]
    fn rows_are_cast_to_the_types_of_the_given_schema() {
        let strings = Schema::new(vec![Field::new("s", DataType::Utf8, true)]);
        let values = Arc::new(datafusion::arrow::array::StringArray::from(vec!["x", "y"]));
        let mut gathered = Gathered::default();
        gathered.push(&RecordBatch::try_new(Arc::new(strings), vec![values]).unwrap());
        let stored = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8View, true)]));
        let kept = gathered.keep(&stored, &budget()).expect("kept");
        assert_eq!(kept.schema(), stored);
    }

    #[test]
    fn too_many_rows_are_dropped_as_they_come() {
        let mut gathered = Gathered::default();
        let big = batch((0..(PER_RELATION / 8 + 1) as i64).collect(), true);
        gathered.push(&big);
        assert!(gathered.batches.is_empty());
        assert!(gathered.keep(&big.schema(), &budget()).is_none());
    }
}
