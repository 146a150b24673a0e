//! A key inferred from the analysed plan's grain: the columns the query makes unique.
//!
//! Recognised: `GROUP BY` keys (not grouping sets), `SELECT DISTINCT` (every column),
//! `DISTINCT ON`, and the dedup pattern `row_number() OVER (PARTITION BY k …) = 1` (or
//! `<= 1`, `< 2`) — carried up through projections (renames followed), aliases, sorts,
//! limits, filters and windows. Anything else (joins, unions, scans) has no known grain.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Distinct, Expr, LogicalPlan, Operator};
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InferredKey {
    pub columns: Vec<String>,
    /// What in the query makes them unique: `group by`, `distinct`, `distinct on`,
    /// `row_number() = 1`.
    pub from: &'static str,
}

/// The key of `plan`'s output, if its grain is known.
pub fn infer_key(plan: &LogicalPlan) -> Option<InferredKey> {
    grain(plan).map(|(columns, from)| InferredKey { columns, from })
}

fn column_name(e: &Expr) -> Option<&str> {
    match strip_alias(e) {
        Expr::Column(c) => Some(c.name.as_str()),
        _ => None,
    }
}

fn strip_alias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => strip_alias(&a.expr),
        other => other,
    }
}

fn grain(plan: &LogicalPlan) -> Option<(Vec<String>, &'static str)> {
    match plan {
        LogicalPlan::Projection(p) => {
            let (inner, from) = grain(&p.input)?;
            let mapped = inner
                .iter()
                .map(|g| {
                    p.expr
                        .iter()
                        .position(|e| column_name(e) == Some(g.as_str()))
                        .map(|i| p.schema.field(i).name().clone())
                })
                .collect::<Option<Vec<_>>>()?;
            Some((mapped, from))
        }
        LogicalPlan::Aggregate(a) => {
            if a.group_expr.is_empty()
                || a.group_expr
                    .iter()
                    .any(|e| matches!(e, Expr::GroupingSet(_)))
            {
                return None;
            }
            let names = a.schema.fields()[..a.group_expr.len()]
                .iter()
                .map(|f| f.name().clone())
                .collect();
            Some((names, "group by"))
        }
        LogicalPlan::Distinct(Distinct::All(input)) => Some((
            input
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
            "distinct",
        )),
        LogicalPlan::Distinct(Distinct::On(d)) => {
            let names = d
                .on_expr
                .iter()
                .map(|on| {
                    let name = column_name(on)?;
                    d.select_expr
                        .iter()
                        .position(|e| column_name(e) == Some(name))
                        .map(|i| d.schema.field(i).name().clone())
                })
                .collect::<Option<Vec<_>>>()?;
            Some((names, "distinct on"))
        }
        LogicalPlan::Filter(f) => {
            if let Some(partition) =
                row_number_filter(&f.predicate).and_then(|rn| row_number_partition(&f.input, &rn))
            {
                let schema = f.input.schema();
                if !partition.is_empty()
                    && partition
                        .iter()
                        .all(|c| schema.fields().iter().any(|f| f.name() == c))
                {
                    return Some((partition, "row_number() = 1"));
                }
            }
            grain(&f.input)
        }
        LogicalPlan::SubqueryAlias(s) => grain(&s.input),
        LogicalPlan::Sort(s) => grain(&s.input),
        LogicalPlan::Limit(l) => grain(&l.input),
        LogicalPlan::Window(w) => grain(&w.input),
        _ => None,
    }
}

/// `rn = 1`, `rn <= 1`, `rn < 2` (either way round): the column `rn`.
fn row_number_filter(predicate: &Expr) -> Option<String> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = predicate else {
        return None;
    };
    let int = |e: &Expr| match strip_alias(e) {
        Expr::Literal(v, _) => match v {
            ScalarValue::Int8(Some(n)) => Some(*n as i64),
            ScalarValue::Int16(Some(n)) => Some(*n as i64),
            ScalarValue::Int32(Some(n)) => Some(*n as i64),
            ScalarValue::Int64(Some(n)) => Some(*n),
            ScalarValue::UInt64(Some(n)) => Some(*n as i64),
            _ => None,
        },
        Expr::Cast(c) => match strip_alias(&c.expr) {
            Expr::Literal(ScalarValue::Int64(Some(n)), _) => Some(*n),
            _ => None,
        },
        _ => None,
    };
    let col = |e: &Expr| match strip_alias(e) {
        Expr::Column(c) => Some(c.name.clone()),
        Expr::Cast(c) => match strip_alias(&c.expr) {
            Expr::Column(c) => Some(c.name.clone()),
            _ => None,
        },
        _ => None,
    };
    let (name, op, n) = match (col(left), int(right), col(right), int(left)) {
        (Some(name), Some(n), _, _) => (name, *op, n),
        (_, _, Some(name), Some(n)) => (name, op.swap()?, n),
        _ => return None,
    };
    let first_only = matches!(
        (op, n),
        (Operator::Eq, 1) | (Operator::LtEq, 1) | (Operator::Lt, 2)
    );
    first_only.then_some(name)
}

/// The partition columns of the `row_number()` window that produces column `name`.
fn row_number_partition(plan: &LogicalPlan, name: &str) -> Option<Vec<String>> {
    match plan {
        LogicalPlan::Projection(p) => {
            let i = p.schema.fields().iter().position(|f| f.name() == name)?;
            let inner = column_name(&p.expr[i])?.to_string();
            row_number_partition(&p.input, &inner)
        }
        LogicalPlan::SubqueryAlias(s) => row_number_partition(&s.input, name),
        LogicalPlan::Sort(s) => row_number_partition(&s.input, name),
        LogicalPlan::Filter(f) => row_number_partition(&f.input, name),
        LogicalPlan::Window(w) => {
            let offset = w.input.schema().fields().len();
            let i = w.schema.fields()[offset..]
                .iter()
                .position(|f| f.name() == name);
            let Some(i) = i else {
                return row_number_partition(&w.input, name);
            };
            let Expr::WindowFunction(wf) = strip_alias(&w.window_expr[i]) else {
                return None;
            };
            if wf.fun.name() != "row_number" {
                return None;
            }
            wf.params
                .partition_by
                .iter()
                .map(|e| column_name(e).map(str::to_string))
                .collect()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::empty::EmptyTable;
    use datafusion::prelude::SessionContext;
    use std::sync::Arc;

    async fn key_of(sql: &str) -> Option<InferredKey> {
        let ctx = SessionContext::new();
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("site", DataType::Utf8, true),
            Field::new("ts", DataType::Int64, true),
            Field::new("v", DataType::Float64, true),
        ]));
        ctx.register_table("t", Arc::new(EmptyTable::new(schema)))
            .unwrap();
        let plan = ctx.state().create_logical_plan(sql).await.unwrap();
        infer_key(&plan)
    }

    fn key(columns: &[&str], from: &'static str) -> Option<InferredKey> {
        Some(InferredKey {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            from,
        })
    }

    #[tokio::test]
    async fn grains() {
        assert_eq!(
            key_of("select site as s, id, sum(v) total from t group by id, site").await,
            key(&["id", "s"], "group by")
        );
        assert_eq!(
            key_of("select distinct id, site from t").await,
            key(&["id", "site"], "distinct")
        );
        assert_eq!(
            key_of(
                "select id, site, v from (select *, row_number() over (partition by id, site order by ts desc) rn from t) where rn = 1"
            )
            .await,
            key(&["id", "site"], "row_number() = 1")
        );
        assert_eq!(
            key_of("select a.id from t a join t b on a.id = b.id").await,
            None
        );
        assert_eq!(key_of("select sum(v) from t").await, None);
        assert_eq!(
            key_of("select id, sum(v) from t group by rollup(id)").await,
            None
        );
        // The grouping key is not selected: no key.
        assert_eq!(key_of("select sum(v) from t group by id").await, None);
    }
}
