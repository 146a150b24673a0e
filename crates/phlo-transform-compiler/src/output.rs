//! A model's output type: one definition for `check` and the local engine (issue 37).
//!
//! `check` reports, and the local engine declares on the table it writes, the schema of
//! [`executable`]'s plan: the planned query after DataFusion's analyzer (type coercion), its
//! literal casts folded. The engine then executes that plan with [`type_preserving_rules`], the
//! optimizer rules that keep every column's type, so what it computes is what was declared.
//!
//! Where the three could diverge, and why each step is here:
//! - **Literal casts.** The analyzer casts `round(x, 2)`'s literal scale to Int32, and
//!   `round` types a DECIMAL by its scale only when that argument is a literal: the analysed
//!   plan alone says `round(DECIMAL(27, 10), 2)` is DECIMAL(27, 10), while execution (which
//!   folds the cast first) computes DECIMAL(26, 2). TPC-DS q02.
//! - **Analysis.** The analyzer resolves `grouping(c)` into bit operations on the grouping id,
//!   which are not nullable: the unanalysed plan says they are. TPC-DS q70, q86.
//! - **One optimizer rule changes types**, see [`type_preserving_rules`].

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::DataFusionError;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Cast, Expr, LogicalPlan};
use datafusion::optimizer::{Optimizer, OptimizerRule};
use std::sync::Arc;

/// `analysed` with the casts the analyzer put on literals folded into the literals, and every
/// schema computed again from the folded expressions, bottom-up: its schema is the model's
/// output schema.
///
/// Execution folds constants before it plans (DataFusion's `SimplifyExpressions`), and some
/// functions type their result by a literal argument: `round(d, 2)` of a DECIMAL(p, s) is
/// DECIMAL(p', 2) only while the 2 is a literal. Folding just the literal casts gives the types
/// the engine computes at a fraction of the simplifier's cost (which added half to `check`'s
/// time). A literal that cannot be cast (`cast('seven' AS int)`) stays a cast: it is the
/// model's SQL error at run time (E006), not a type error.
pub fn folded(analysed: LogicalPlan) -> LogicalPlan {
    analysed
        .clone()
        .transform_up_with_subqueries(|node| {
            let names = NamePreserver::new(&node);
            let folded = node.map_expressions(|expr| {
                let name = names.save(&expr);
                expr.transform_up(fold_literal_cast)
                    .map(|t| t.update_data(|e| name.restore(e)))
            })?;
            match folded.transformed {
                true => folded.map_data(LogicalPlan::recompute_schema),
                false => Ok(folded),
            }
        })
        .map_or(analysed, |t| t.data)
}

fn fold_literal_cast(expr: Expr) -> Result<Transformed<Expr>, DataFusionError> {
    match &expr {
        Expr::Cast(Cast {
            expr: inner,
            data_type,
        }) => match inner.as_ref() {
            Expr::Literal(value, metadata) => Ok(match value.cast_to(data_type) {
                Ok(cast) => Transformed::yes(Expr::Literal(cast, metadata.clone())),
                Err(_) => Transformed::no(expr),
            }),
            _ => Ok(Transformed::no(expr)),
        },
        _ => Ok(Transformed::no(expr)),
    }
}

/// The plan the local engine executes for `planned` (a model's query as the SQL planner
/// planned it, after the dialect's rewrites): analysed and folded, so its schema is the one
/// `check` reported.
pub fn executable(
    state: &SessionState,
    planned: LogicalPlan,
) -> Result<LogicalPlan, DataFusionError> {
    let analysed =
        state
            .analyzer()
            .execute_and_check(planned, state.config_options(), |_, _| {})?;
    Ok(folded(analysed))
}

/// DataFusion's logical optimizer rules, less those that change a column's type.
///
/// `single_distinct_aggregation_to_group_by` rewrites `sum(x)` beside one `count(DISTINCT y)`
/// into `sum(sum(x))` over a group by `y`, which widens a DECIMAL(p, s) sum by 10 digits twice
/// (DECIMAL(7, 2) is summed to DECIMAL(27, 2), not DECIMAL(17, 2): apache/datafusion#17699;
/// TPC-DS q16, q94, q95 failed to write their declared tables). Without it the distinct count
/// keeps its own accumulator.
pub fn type_preserving_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    const WIDENS_DECIMAL_SUMS: &str = "single_distinct_aggregation_to_group_by";
    Optimizer::new()
        .rules
        .into_iter()
        .filter(|rule| rule.name() != WIDENS_DECIMAL_SUMS)
        .collect()
}
