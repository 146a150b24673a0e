//! Batches that carry the plan's schema. DataFusion's `UnionExec` passes each input's batches
//! through with that input's schema, so a column NOT NULL in one branch of a UNION and
//! nullable in another (or in the union's schema) arrives as NOT NULL in some batches, and
//! delta-rs rejects every batch whose schema is not exactly the table's ("Unexpected Arrow
//! schema"). [`relabelled`] plans the query and reads it back as a scan whose batches are
//! relabelled with the physical plan's own schema (`RecordBatch::with_schema`, which only
//! ever relaxes nullability), one stream per partition of the plan. A physical plan runs
//! once (a `RepartitionExec` cannot be executed twice), so only full writes, which read the
//! query once, go through here; incremental writes read it several times and are not
//! relabelled.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::datasource::provider_as_source;
use datafusion::error::Result;
use datafusion::execution::context::SessionContext;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::ExecutionPlan;
use futures::StreamExt;
use std::sync::Arc;

/// `plan` as a scan of its own execution whose batches all have its schema.
pub async fn relabelled(ctx: &SessionContext, plan: LogicalPlan) -> Result<LogicalPlan> {
    let physical = ctx.state().create_physical_plan(&plan).await?;
    let schema = physical.schema();
    let partitions = physical
        .properties()
        .output_partitioning()
        .partition_count();
    let streams: Vec<Arc<dyn PartitionStream>> = (0..partitions)
        .map(|partition| {
            Arc::new(Partition {
                plan: physical.clone(),
                schema: schema.clone(),
                partition,
            }) as Arc<dyn PartitionStream>
        })
        .collect();
    let table = StreamingTable::try_new(schema, streams)?;
    LogicalPlanBuilder::scan("phlo_query", provider_as_source(Arc::new(table)), None)?.build()
}

/// One partition of the planned query.
#[derive(Debug)]
struct Partition {
    plan: Arc<dyn ExecutionPlan>,
    schema: SchemaRef,
    partition: usize,
}

impl PartitionStream for Partition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = self.schema.clone();
        let batches = match self.plan.execute(self.partition, ctx) {
            Ok(stream) => stream
                .map(move |batch| Ok(batch?.with_schema(schema.clone())?))
                .boxed(),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        };
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), batches))
    }
}
