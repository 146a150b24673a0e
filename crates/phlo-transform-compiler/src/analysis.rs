//! DataFusion's analyzer (type coercion and the other analyzer rules; never the optimizer)
//! over a model's planned query.
//!
//! The SQL planner accepts comparisons, join keys, CASE conditions, IN subqueries and function
//! arguments whose types nothing reconciles; the analyzer rejects them, but its error names
//! neither the expression nor where it is. When it fails, [`analyse`] finds the plan node it
//! rejects (the first one, bottom-up) and in it the innermost expression type coercion
//! rejects, and describes that expression from its operand types, so the diagnostic can point
//! at it and say what is wrong in one line.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion, TreeNodeVisitor};
use datafusion::common::{DFSchema, DataFusionError, Span};
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::expr::{
    AggregateFunction, Case, InList, InSubquery, Like, ScalarFunction, WindowFunction,
};
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{BinaryExpr, Cast, Expr, ExprSchemable, LogicalPlan, TryCast};
use datafusion::optimizer::analyzer::type_coercion::TypeCoercionRewriter;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Code;
use std::cell::LazyCell;

/// Why the analyzer rejects a plan, located as precisely as the plan allows.
pub(crate) struct Rejection {
    pub code: Code,
    /// One line.
    pub message: String,
    pub help: String,
    /// Source spans of the column references in the rejected expression (empty when the
    /// expression names no column, or the whole node is to blame).
    pub anchors: Vec<Span>,
    /// The kind of SQL expression rejected, to find its span around the anchors.
    pub shape: Shape,
}

/// The SQL expression an analyzer error is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A binary operator, by its SQL spelling (`>`, `=`, `+`, `AND`).
    Binary(String),
    /// A function call, by name.
    Function(String),
    Case,
    InSubquery,
    InList,
    Like,
    Cast,
    /// Not an expression: the node as a whole (a UNION, a filter's result type).
    Node,
}

/// The analysed plan, or why the analyzer (or the stricter rules every target engine applies)
/// rejects `plan`.
pub(crate) fn analyse(
    state: &SessionState,
    plan: &LogicalPlan,
) -> Result<LogicalPlan, Box<Rejection>> {
    if let Some(rejection) = strict(plan) {
        return Err(Box::new(rejection));
    }
    let config = state.config_options();
    state
        .analyzer()
        .execute_and_check(plan.clone(), config, |_, _| {})
        .map_err(|error| Box::new(locate(state, plan, &error)))
}

/// What DataFusion coerces but no target engine (Trino, PostgreSQL, DuckDB) accepts: a
/// non-boolean condition (WHERE, HAVING, JOIN … ON, CASE WHEN), which DataFusion casts to
/// boolean, and a comparison of a date or time with a number (`=`, `IN`, `BETWEEN`, join
/// keys), which DataFusion coerces through casts. Checked on the plan before the analyzer.
fn strict(plan: &LogicalPlan) -> Option<Rejection> {
    let mut found = None;
    let _ = plan.apply_with_subqueries(|node| {
        // The expressions are visited in place and the inputs' schemas merged only for an
        // expression that needs types: most nodes have none, and both were cloned for every
        // node of every model (issue 17).
        let schema = LazyCell::new(|| merge_schema(&node.inputs()));
        let _ = node.apply_expressions(|expr| {
            expr.apply(|e| {
                found = strict_expr(e, &schema);
                Ok(if found.is_some() {
                    TreeNodeRecursion::Stop
                } else {
                    TreeNodeRecursion::Continue
                })
            })
        });
        if found.is_some() {
            return Ok(TreeNodeRecursion::Stop);
        }
        let condition = match node {
            LogicalPlan::Filter(f) => Some(("the filter (WHERE or HAVING)", &f.predicate)),
            LogicalPlan::Join(j) => j.filter.as_ref().map(|f| ("the JOIN condition", f)),
            _ => None,
        };
        if let Some((what, e)) = condition {
            if !is_condition(e, &schema) {
                found = Some(not_boolean(what, e, &schema));
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

/// Boolean or NULL (or a type that cannot be computed: the analyzer reports that).
fn is_condition(e: &Expr, schema: &DFSchema) -> bool {
    e.get_type(schema)
        .map_or(true, |t| matches!(t, DataType::Boolean | DataType::Null))
}

/// A date, time, timestamp or interval compared with a number.
fn clash(a: &DataType, b: &DataType) -> bool {
    let temporal = |t: &DataType| t.is_temporal() || matches!(t, DataType::Interval(_));
    (temporal(a) && b.is_numeric()) || (temporal(b) && a.is_numeric())
}

/// `schema` is forced only for the expressions checked here.
fn strict_expr(
    e: &Expr,
    schema: &LazyCell<DFSchema, impl FnOnce() -> DFSchema>,
) -> Option<Rejection> {
    let ty = |x: &Expr| x.get_type(&**schema).ok();
    let clashes = |a: &Expr, b: &Expr| match (ty(a), ty(b)) {
        (Some(a), Some(b)) => clash(&a, &b),
        _ => false,
    };
    let failed = |e: &Expr| describe_expr(e, schema, &DataFusionError::Plan(String::new()));
    match e {
        Expr::Case(case) if case.expr.is_none() => case
            .when_then_expr
            .iter()
            .any(|(when, _)| !is_condition(when, schema))
            .then(|| failed(e)),
        Expr::Case(case) => {
            let base = case.expr.as_deref()?;
            case.when_then_expr
                .iter()
                .any(|(when, _)| clashes(base, when))
                .then(|| failed(e))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            use datafusion::logical_expr::Operator::*;
            let comparison = matches!(
                op,
                Eq | NotEq | Lt | LtEq | Gt | GtEq | IsDistinctFrom | IsNotDistinctFrom
            );
            (comparison && clashes(left, right)).then(|| failed(e))
        }
        Expr::Between(b) => {
            (clashes(&b.expr, &b.low) || clashes(&b.expr, &b.high)).then(|| failed(e))
        }
        Expr::InList(InList { expr, list, .. }) => {
            list.iter().any(|i| clashes(expr, i)).then(|| failed(e))
        }
        Expr::InSubquery(InSubquery { expr, subquery, .. }) => {
            let sub = subquery.subquery.schema().field(0).data_type().clone();
            ty(expr).is_some_and(|t| clash(&t, &sub)).then(|| failed(e))
        }
        _ => None,
    }
}

/// The first node, bottom-up and subqueries included, that the analyzer rules reject on their
/// own (its inputs pass), and the rejection described.
fn locate(state: &SessionState, plan: &LogicalPlan, error: &DataFusionError) -> Rejection {
    struct FirstRejected<'a> {
        state: &'a SessionState,
        found: Option<LogicalPlan>,
    }
    impl<'n> TreeNodeVisitor<'n> for FirstRejected<'_> {
        type Node = LogicalPlan;
        fn f_up(&mut self, node: &'n LogicalPlan) -> datafusion::common::Result<TreeNodeRecursion> {
            if run_rules(self.state, node).is_err() {
                self.found = Some(node.clone());
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        }
    }
    let mut visitor = FirstRejected { state, found: None };
    let _ = plan.visit_with_subqueries(&mut visitor);
    match visitor.found {
        Some(node) => describe_node(&node, error),
        None => generic(error),
    }
}

/// The analyzer's rules without its plan-invariant checks (a subquery on its own has outer
/// references no standalone plan may have).
fn run_rules(state: &SessionState, node: &LogicalPlan) -> datafusion::common::Result<()> {
    let config = state.config_options();
    let mut plan = node.clone();
    for rule in &state.analyzer().rules {
        plan = rule.analyze(plan, config)?;
    }
    Ok(())
}

fn describe_node(node: &LogicalPlan, error: &DataFusionError) -> Rejection {
    let schema = merge_schema(&node.inputs());
    // The innermost expression type coercion rejects, children before parents.
    for expr in node.expressions() {
        if let Some(rejected) = innermost_rejected(&expr, &schema) {
            return describe_expr(&rejected, &schema, error);
        }
    }
    match node {
        LogicalPlan::Join(join) => {
            for (l, r) in &join.on {
                let eq = l.clone().eq(r.clone());
                if coerce(&eq, &schema).is_err() {
                    return describe_expr(&eq, &schema, error);
                }
            }
            if let Some(filter) = &join.filter {
                return not_boolean("the JOIN condition", filter, &schema);
            }
        }
        LogicalPlan::Filter(filter) => {
            return not_boolean("the filter (WHERE or HAVING)", &filter.predicate, &schema);
        }
        LogicalPlan::Union(_) => {
            return Rejection {
                code: codes::SET_OPERATION_MISMATCH,
                help: "make every branch return compatible types in each position (cast one)"
                    .into(),
                ..generic(error)
            }
        }
        _ => {}
    }
    generic(error)
}

fn coerce(expr: &Expr, schema: &DFSchema) -> datafusion::common::Result<Expr> {
    expr.clone()
        .rewrite(&mut TypeCoercionRewriter::new(schema))
        .map(|t| t.data)
}

/// The first subexpression of `expr`, in post-order, that type coercion rejects.
fn innermost_rejected(expr: &Expr, schema: &DFSchema) -> Option<Expr> {
    struct Innermost<'a> {
        schema: &'a DFSchema,
        found: Option<Expr>,
    }
    impl<'n> TreeNodeVisitor<'n> for Innermost<'_> {
        type Node = Expr;
        fn f_up(&mut self, e: &'n Expr) -> datafusion::common::Result<TreeNodeRecursion> {
            if coerce(e, self.schema).is_err() {
                self.found = Some(e.clone());
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        }
    }
    let mut v = Innermost {
        schema,
        found: None,
    };
    let _ = expr.visit(&mut v);
    v.found
}

fn type_of(e: &Expr, schema: &DFSchema) -> String {
    e.get_type(schema)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| "an unknown type".into())
}

/// Column references inside `e` (subqueries' own columns excluded) with a source span.
fn anchors(e: &Expr) -> Vec<Span> {
    let mut out = Vec::new();
    let _ = e.apply(|sub| {
        match sub {
            Expr::Column(c) => out.extend(c.spans.iter().copied()),
            Expr::OuterReferenceColumn(_, c) => out.extend(c.spans.iter().copied()),
            Expr::InSubquery(s) => out.extend(s.subquery.spans.iter().copied()),
            Expr::ScalarSubquery(s) => out.extend(s.spans.iter().copied()),
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    });
    out
}

fn describe_expr(e: &Expr, schema: &DFSchema, error: &DataFusionError) -> Rejection {
    let incompatible = |message: String, shape: Shape| Rejection {
        code: codes::INCOMPATIBLE_TYPES,
        message,
        help: "cast one side (`CAST(x AS type)`) so both have compatible types".into(),
        anchors: anchors(e),
        shape,
    };
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (l, r) = (type_of(left, schema), type_of(right, schema));
            use datafusion::logical_expr::Operator::*;
            let comparison = matches!(
                op,
                Eq | NotEq | Lt | LtEq | Gt | GtEq | IsDistinctFrom | IsNotDistinctFrom
            );
            let message = if comparison {
                format!("cannot compare {l} with {r} (`{op}`)")
            } else if op.is_logic_operator() {
                format!("`{op}` needs boolean operands, not {l} and {r}")
            } else {
                format!("cannot apply `{op}` to {l} and {r}")
            };
            incompatible(message, Shape::Binary(op.to_string()))
        }
        Expr::InSubquery(InSubquery { expr, subquery, .. }) => {
            let sub = subquery
                .subquery
                .schema()
                .fields()
                .first()
                .map(|f| f.data_type().to_string())
                .unwrap_or_else(|| "no column".into());
            incompatible(
                format!(
                    "IN compares {} with a subquery returning {sub}",
                    type_of(expr, schema)
                ),
                Shape::InSubquery,
            )
        }
        Expr::InList(InList { expr, list, .. }) => {
            let mut types: Vec<String> = list.iter().map(|i| type_of(i, schema)).collect();
            types.dedup();
            incompatible(
                format!(
                    "IN compares {} with a list of {}",
                    type_of(expr, schema),
                    types.join(", ")
                ),
                Shape::InList,
            )
        }
        Expr::Between(b) => incompatible(
            format!(
                "BETWEEN compares {} with {} and {}",
                type_of(&b.expr, schema),
                type_of(&b.low, schema),
                type_of(&b.high, schema)
            ),
            Shape::Binary("BETWEEN".into()),
        ),
        Expr::Like(Like { expr, pattern, .. }) | Expr::SimilarTo(Like { expr, pattern, .. }) => {
            incompatible(
                format!(
                    "pattern matching needs strings, not {} and {}",
                    type_of(expr, schema),
                    type_of(pattern, schema)
                ),
                Shape::Like,
            )
        }
        Expr::Case(case) => describe_case(e, case, schema, error),
        Expr::Cast(Cast { expr, data_type }) | Expr::TryCast(TryCast { expr, data_type }) => {
            Rejection {
                code: codes::INVALID_CAST,
                message: format!("cannot cast {} to {data_type}", type_of(expr, schema)),
                help: "cast to a type the value can convert to".into(),
                anchors: anchors(e),
                shape: Shape::Cast,
            }
        }
        Expr::Not(inner)
        | Expr::IsTrue(inner)
        | Expr::IsFalse(inner)
        | Expr::IsNotTrue(inner)
        | Expr::IsNotFalse(inner)
        | Expr::IsUnknown(inner)
        | Expr::IsNotUnknown(inner) => Rejection {
            anchors: anchors(e),
            shape: Shape::Node,
            ..not_boolean("the operand of a boolean test", inner, schema)
        },
        Expr::ScalarFunction(ScalarFunction { func, args }) => {
            signature(func.name(), args, schema, e)
        }
        Expr::AggregateFunction(AggregateFunction { func, params }) => {
            signature(func.name(), &params.args, schema, e)
        }
        Expr::WindowFunction(w) => {
            let WindowFunction { fun, params } = w.as_ref();
            signature(fun.name(), &params.args, schema, e)
        }
        _ => Rejection {
            anchors: anchors(e),
            ..generic(error)
        },
    }
}

fn describe_case(e: &Expr, case: &Case, schema: &DFSchema, error: &DataFusionError) -> Rejection {
    let anchors_of = anchors;
    if case.expr.is_none() {
        for (when, _) in &case.when_then_expr {
            let t = when.get_type(schema).ok();
            if !matches!(t, Some(DataType::Boolean | DataType::Null) | None) {
                return Rejection {
                    code: codes::NOT_BOOLEAN,
                    message: format!(
                        "CASE WHEN condition is {}, not boolean",
                        type_of(when, schema)
                    ),
                    help: "write a condition (`WHEN x > 0 THEN …`), or `CASE x WHEN value …` to \
                           compare a value"
                        .into(),
                    anchors: anchors_of(e),
                    shape: Shape::Case,
                };
            }
        }
    }
    if let Some(base) = case.expr.as_deref() {
        let bt = base.get_type(schema).ok();
        for (when, _) in &case.when_then_expr {
            let wt = when.get_type(schema).ok();
            let comparable = match (&bt, &wt) {
                (Some(b), Some(w)) => {
                    !clash(b, w)
                        && datafusion::logical_expr::type_coercion::binary::comparison_coercion(
                            b, w,
                        )
                        .is_some()
                }
                _ => true,
            };
            if !comparable {
                return Rejection {
                    code: codes::INCOMPATIBLE_TYPES,
                    message: format!(
                        "CASE compares {} with {}",
                        type_of(base, schema),
                        type_of(when, schema)
                    ),
                    help: "cast the compared value or the WHEN values to one type".into(),
                    anchors: anchors_of(e),
                    shape: Shape::Case,
                };
            }
        }
    }
    let mut types: Vec<String> = case
        .when_then_expr
        .iter()
        .map(|(_, then)| type_of(then, schema))
        .chain(case.else_expr.iter().map(|x| type_of(x, schema)))
        .collect();
    types.dedup();
    let message = if types.len() > 1 {
        format!(
            "CASE branches have incompatible types: {}",
            types.join(", ")
        )
    } else {
        first_line(error)
    };
    Rejection {
        code: codes::INCOMPATIBLE_TYPES,
        message,
        help: "cast the branches (or the compared values) to one type".into(),
        anchors: anchors_of(e),
        shape: Shape::Case,
    }
}

fn signature(name: &str, args: &[Expr], schema: &DFSchema, e: &Expr) -> Rejection {
    let types: Vec<String> = args.iter().map(|a| type_of(a, schema)).collect();
    Rejection {
        code: codes::ARGUMENT_TYPES,
        message: format!("{name}({}) is not defined", types.join(", ")),
        help: format!("cast the arguments to types `{name}` accepts"),
        anchors: anchors(e),
        shape: Shape::Function(name.to_string()),
    }
}

fn not_boolean(what: &str, e: &Expr, schema: &DFSchema) -> Rejection {
    Rejection {
        code: codes::NOT_BOOLEAN,
        message: format!("{what} is {}, not boolean", type_of(e, schema)),
        help: "write a condition (a comparison, IS NULL, …) that is true or false".into(),
        anchors: anchors(e),
        shape: Shape::Node,
    }
}

fn generic(error: &DataFusionError) -> Rejection {
    Rejection {
        code: codes::UNTYPEABLE,
        message: first_line(error),
        help: "fix the query; it was checked against the inferred schemas of its inputs".into(),
        anchors: Vec::new(),
        shape: Shape::Node,
    }
}

/// The root cause's own message, first line, without DataFusion's variant prefix.
fn first_line(error: &DataFusionError) -> String {
    let root = error.find_root();
    let text = match root {
        DataFusionError::Plan(m)
        | DataFusionError::Execution(m)
        | DataFusionError::NotImplemented(m)
        | DataFusionError::Internal(m) => m.clone(),
        other => other.strip_backtrace(),
    };
    text.lines().next().unwrap_or_default().trim().to_string()
}
