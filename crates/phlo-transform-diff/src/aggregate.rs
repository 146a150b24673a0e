//! The aggregate comparison: per column count, nulls, min, max, sum and approximate distinct
//! on each side, computed by DataFusion over the side's DataFrame (one pass per side).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{approx_distinct, count, max, min, sum};
use datafusion::logical_expr::Expr;
use datafusion::prelude::{cast, ident, lit, DataFrame};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use serde_json::Value;

use crate::values;

/// One column's statistics on one side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Aggregates {
    pub count: u64,
    pub nulls: u64,
    pub min: Value,
    pub max: Value,
    /// Numeric columns only.
    pub sum: Value,
    pub approx_distinct: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ColumnAggregates {
    pub column: String,
    pub base: Aggregates,
    pub candidate: Aggregates,
    /// The statistics that differ (`count`, `nulls`, `min`, `max`, `sum`, `approx_distinct`).
    pub differs: Vec<&'static str>,
}

/// A column to aggregate: its name on this side and its type.
pub struct AggregateColumn<'a> {
    pub name: &'a str,
    pub data_type: &'a DataType,
}

fn orderable(t: &DataType) -> bool {
    t.is_primitive()
        || matches!(
            t,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Boolean
                | DataType::Binary
                | DataType::LargeBinary
        )
}

/// Types DataFusion's `approx_distinct` counts directly; other orderable types (floats,
/// decimals, booleans) are counted through their text, which is as distinct as the value.
fn hll_native(t: &DataType) -> bool {
    t.is_integer()
        || matches!(
            t,
            DataType::Date32
                | DataType::Date64
                | DataType::Time32(_)
                | DataType::Time64(_)
                | DataType::Timestamp(_, _)
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
        )
}

fn summable(t: &DataType) -> bool {
    t.is_numeric()
}

/// Row count and per-column statistics of `df`.
pub async fn aggregate(
    df: DataFrame,
    columns: &[AggregateColumn<'_>],
    side: &str,
) -> Result<(u64, Vec<Aggregates>), Diagnostic> {
    let mut exprs: Vec<Expr> = vec![count(lit(1)).alias("__rows")];
    for (i, c) in columns.iter().enumerate() {
        let e = || ident(c.name);
        exprs.push(count(e()).alias(format!("c{i}_count")));
        if orderable(c.data_type) {
            exprs.push(min(e()).alias(format!("c{i}_min")));
            exprs.push(max(e()).alias(format!("c{i}_max")));
            let distinct_of = if hll_native(c.data_type) {
                e()
            } else {
                cast(e(), DataType::Utf8)
            };
            exprs.push(approx_distinct(distinct_of).alias(format!("c{i}_distinct")));
        }
        if summable(c.data_type) {
            exprs.push(sum(e()).alias(format!("c{i}_sum")));
        }
    }
    let unreadable = |e: datafusion::error::DataFusionError| {
        Diagnostic::error(
            codes::DIFF_UNREADABLE_SIDE,
            format!("aggregating the {side} side: {}", e.strip_backtrace()),
        )
        .with_help("check that the side can be read: `phlo-transform run` builds the model")
    };
    let batches: Vec<RecordBatch> = df
        .aggregate(vec![], exprs)
        .map_err(unreadable)?
        .collect()
        .await
        .map_err(unreadable)?;
    let batch = batches
        .into_iter()
        .find(|b| b.num_rows() == 1)
        .ok_or_else(|| {
            Diagnostic::error(
                codes::DIFF_UNREADABLE_SIDE,
                format!("aggregating the {side} side returned no row"),
            )
        })?;
    let get = |name: &str| -> Value {
        batch
            .schema()
            .index_of(name)
            .map(|i| values::value(batch.column(i), 0))
            .unwrap_or(Value::Null)
    };
    let rows = get("__rows").as_u64().unwrap_or(0);
    let stats = (0..columns.len())
        .map(|i| {
            let count = get(&format!("c{i}_count")).as_u64().unwrap_or(0);
            Aggregates {
                count,
                nulls: rows - count,
                min: get(&format!("c{i}_min")),
                max: get(&format!("c{i}_max")),
                sum: get(&format!("c{i}_sum")),
                approx_distinct: get(&format!("c{i}_distinct")),
            }
        })
        .collect();
    Ok((rows, stats))
}

/// Which statistics differ. Float sums depend on summation order, so they compare within a
/// relative 1e-9 (and the column's tolerance).
pub fn differing(
    base: &Aggregates,
    candidate: &Aggregates,
    tolerance: Option<f64>,
) -> Vec<&'static str> {
    let integers = |a: &Value, b: &Value| (a.is_i64() && b.is_i64()) || (a.is_u64() && b.is_u64());
    let close = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if !integers(a, b) => {
            let scale = x.abs().max(y.abs());
            (x - y).abs() <= tolerance.unwrap_or(0.0).max(scale * 1e-9)
        }
        _ => a == b,
    };
    let mut out = Vec::new();
    if base.count != candidate.count {
        out.push("count");
    }
    if base.nulls != candidate.nulls {
        out.push("nulls");
    }
    if !close(&base.min, &candidate.min) {
        out.push("min");
    }
    if !close(&base.max, &candidate.max) {
        out.push("max");
    }
    if !close(&base.sum, &candidate.sum) {
        out.push("sum");
    }
    if base.approx_distinct != candidate.approx_distinct {
        out.push("approx_distinct");
    }
    out
}
