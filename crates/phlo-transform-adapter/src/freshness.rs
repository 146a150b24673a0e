//! The latest value of a timestamp column, for source freshness (SPEC §34).

use datafusion::arrow::array::{Array, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::execution::context::SessionContext;
use datafusion::functions_aggregate::expr_fn::max;
use datafusion::prelude::{cast, ident};
use datafusion::sql::TableReference;
use phlo_transform_core::diagnostic::codes;

use crate::AdapterError;

/// `max(column)` of `table` as microseconds since the epoch (UTC). Strings and dates are cast
/// to timestamps; a zoned timestamp is taken in UTC.
pub(crate) async fn latest_timestamp(
    ctx: &SessionContext,
    table: TableReference,
    column: &str,
) -> Result<Option<i64>, AdapterError> {
    let failed = |e: datafusion::error::DataFusionError| {
        AdapterError::new(
            codes::QUERY_FAILED,
            format!("cannot read the latest `{column}` of `{table}`: {e}"),
        )
    };
    let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
    let batches = ctx
        .table(table.clone())
        .await
        .map_err(failed)?
        .aggregate(
            vec![],
            vec![max(cast(ident(column), micros)).alias("latest")],
        )
        .map_err(failed)?
        .collect()
        .await
        .map_err(failed)?;
    let value = batches.iter().find(|b| b.num_rows() > 0).and_then(|b| {
        let a = b
            .column(0)
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()?;
        (!a.is_null(0)).then(|| a.value(0))
    });
    Ok(value)
}
