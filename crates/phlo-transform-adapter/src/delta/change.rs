//! What an incremental run applies to an existing table (SPEC §27): the model's query still
//! defines the whole table, so a full rebuild and an incremental run give the same rows; the
//! engine works out the change rather than asking the model to filter on its own table.
//!
//! - rows *new* to the table: the query's rows without an identical row in the table
//!   (null-safe anti-join on every column) — what `append` inserts and `key=` merges;
//! - *affected partitions*: the partitions of the rows new to the table and of the table's
//!   rows the query no longer returns — what `partition=` replaces;
//! - rows past the *watermark*: the query restricted to `window column > max(window column)
//!   in the table`. DataFusion pushes that predicate through the model's projections and
//!   filters into its scans, so only newer source rows are read where the column passes
//!   through.

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{Column, ScalarValue};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::{cast, col, lit, BinaryExpr, Expr, JoinType, Operator};
use phlo_transform_core::diagnostic::codes;

use crate::error::err;
use crate::AdapterError;

const NEW: &str = "__phlo_new";
const OLD: &str = "__phlo_old";

fn failed(e: impl std::fmt::Display) -> AdapterError {
    err(codes::QUERY_FAILED, e.to_string())
}

fn qualified(table: &str, name: &str) -> Expr {
    Expr::Column(Column::new(Some(table), name))
}

/// `df` with exactly the table's columns, in its order and types.
pub fn conform(df: DataFrame, table: &SchemaRef) -> Result<DataFrame, AdapterError> {
    let exprs: Vec<Expr> = table
        .fields()
        .iter()
        .map(|f| {
            cast(
                Expr::Column(Column::from_name(f.name())),
                f.data_type().clone(),
            )
            .alias(f.name())
        })
        .collect();
    df.select(exprs).map_err(failed)
}

/// The rows of `left` without an identical row in `right` (both conformed to `columns`).
pub fn anti_join(
    left: DataFrame,
    right: DataFrame,
    columns: &[String],
) -> Result<DataFrame, AdapterError> {
    let on: Vec<Expr> = columns
        .iter()
        .map(|c| {
            Expr::BinaryExpr(BinaryExpr::new(
                Box::new(qualified(NEW, c)),
                Operator::IsNotDistinctFrom,
                Box::new(qualified(OLD, c)),
            ))
        })
        .collect();
    let left = left.alias(NEW).map_err(failed)?;
    let right = right.alias(OLD).map_err(failed)?;
    let joined = left
        .join_on(right, JoinType::LeftAnti, on)
        .map_err(failed)?;
    // Drop the qualifier so later steps (MERGE aliases, writes) see plain names.
    joined
        .select(
            columns
                .iter()
                .map(|c| qualified(NEW, c).alias(c))
                .collect::<Vec<_>>(),
        )
        .map_err(failed)
}

/// `df` restricted to rows whose `column` is greater than `watermark` (all rows when the
/// table holds no value yet).
pub fn past_watermark(
    df: DataFrame,
    column: &str,
    watermark: ScalarValue,
) -> Result<DataFrame, AdapterError> {
    if watermark.is_null() {
        return Ok(df);
    }
    df.filter(Expr::Column(Column::from_name(column)).gt(lit(watermark)))
        .map_err(failed)
}

/// `max(column)` of the table.
pub async fn watermark(table: DataFrame, column: &str) -> Result<ScalarValue, AdapterError> {
    let batches = table
        .aggregate(
            vec![],
            vec![
                datafusion::functions_aggregate::expr_fn::max(col(Column::from_name(column)))
                    .alias("watermark"),
            ],
        )
        .map_err(failed)?
        .collect()
        .await
        .map_err(|e| crate::cause::datafusion_error(&e))?;
    match batches.iter().find(|b| b.num_rows() > 0) {
        Some(b) => ScalarValue::try_from_array(b.column(0), 0).map_err(failed),
        None => Ok(ScalarValue::Null),
    }
}

/// The distinct values of `columns` in `df`, one vector per partition.
pub async fn partitions(
    df: DataFrame,
    columns: &[String],
) -> Result<Vec<Vec<ScalarValue>>, AdapterError> {
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let batches = df
        .select_columns(&names)
        .and_then(DataFrame::distinct)
        .map_err(failed)?
        .collect()
        .await
        .map_err(|e| crate::cause::datafusion_error(&e))?;
    let mut out = Vec::new();
    for b in &batches {
        for row in 0..b.num_rows() {
            let values = b
                .columns()
                .iter()
                .map(|a| ScalarValue::try_from_array(a.as_ref() as &dyn Array, row))
                .collect::<Result<Vec<_>, _>>()
                .map_err(failed)?;
            if !out.contains(&values) {
                out.push(values);
            }
        }
    }
    Ok(out)
}

/// `(p1 = v1 and p2 = v2) or …` over the partitions (`is null` for a null value); `None` when
/// there are none.
pub fn partition_predicate(columns: &[String], partitions: &[Vec<ScalarValue>]) -> Option<Expr> {
    partitions
        .iter()
        .map(|values| {
            columns
                .iter()
                .zip(values)
                .map(|(c, v)| {
                    let column = Expr::Column(Column::from_name(c));
                    if v.is_null() {
                        column.is_null()
                    } else {
                        column.eq(lit(v.clone()))
                    }
                })
                .reduce(Expr::and)
                .expect("partition columns are never empty")
        })
        .reduce(Expr::or)
}
