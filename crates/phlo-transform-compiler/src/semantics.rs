//! What a target dialect computes differently from DataFusion, as data (`[semantics]` in
//! `dialects/<name>.toml`), and how typing and the local engine follow it:
//!
//! - configuration where DataFusion has a switch (`null_ordering`, DataFusion's
//!   `sql_parser.default_null_ordering`; `decimal_literals`, its
//!   `sql_parser.parse_float_as_decimal`);
//! - exact plan rewrites where it has none: integer and decimal `/` computed in DOUBLE
//!   (DuckDB), `extract`/`date_part` returning BIGINT (DuckDB, Trino) instead of Int32, `sum`
//!   of decimals as DECIMAL(38, s) (DuckDB, Trino) and of integers as DECIMAL(38, 0)
//!   (DuckDB's HUGEINT), `avg` of decimals in DOUBLE (DuckDB): each an argument cast that
//!   leaves the aggregate's values as they were and gives the target's result type; and
//!   `grouping(…)` as BIGINT (DuckDB): a cast of its 0/1 bits;
//! - a warning naming the construct where neither is exact (`difference` entries), so the
//!   local answer is known to possibly differ from the warehouse's.
//!
//! Rewrites apply to the plan typing analyses and the local engine executes; lineage and the
//! plan fingerprint keep the plan as planned.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result, Span};
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction, WindowFunctionDefinition};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    cast, Aggregate, BinaryExpr, Cast, Expr, ExprSchemable, LogicalPlan, Operator, Union,
};
use datafusion::optimizer::analyzer::resolve_grouping_function::ResolveGroupingFunction;
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionConfig;
use serde::Deserialize;

/// A dialect's semantics where they differ from DataFusion's.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Semantics {
    /// `nulls_max` (PostgreSQL; DataFusion's default), `nulls_min`, `nulls_first` or
    /// `nulls_last` (DuckDB, Trino: NULLs last whatever the direction).
    #[serde(default)]
    pub null_ordering: Option<String>,
    /// `truncate` (DataFusion, Trino, PostgreSQL) or `float` (DuckDB: integer `/` is DOUBLE).
    #[serde(default)]
    pub integer_division: Option<String>,
    /// `float` (DuckDB): `/` with decimal operands (and integers) is DOUBLE division.
    #[serde(default)]
    pub decimal_division: Option<String>,
    /// The type `extract`/`date_part` returns for integral fields (`bigint`), where it is not
    /// DataFusion's Int32.
    #[serde(default)]
    pub extract: Option<String>,
    /// `decimal(38)` (DuckDB, Trino): `sum` of DECIMAL(p, s) is DECIMAL(38, s), not
    /// DataFusion's DECIMAL(p + 10, s).
    #[serde(default)]
    pub sum_decimal: Option<String>,
    /// `decimal(38,0)` (DuckDB: HUGEINT): `sum` of an integer column, not BIGINT.
    #[serde(default)]
    pub sum_integer: Option<String>,
    /// `double` (DuckDB): `avg` of a decimal is DOUBLE, not DECIMAL(p + 4, s + 4).
    #[serde(default)]
    pub avg_decimal: Option<String>,
    /// `bigint` (DuckDB): `grouping(…)` is BIGINT, not DataFusion's Int32.
    #[serde(default)]
    pub grouping: Option<String>,
    /// `decimal` (Trino): a literal with a fraction (`100.00`) is DECIMAL, not DOUBLE
    /// (DataFusion's `sql_parser.parse_float_as_decimal`).
    #[serde(default)]
    pub decimal_literals: Option<String>,
    /// Constructs the local engine computes differently and cannot rewrite exactly.
    #[serde(default, rename = "difference")]
    pub differences: Vec<Difference>,
}

/// A construct whose result differs between DataFusion and the target.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Difference {
    /// One of [`CONSTRUCTS`].
    pub construct: String,
    /// What the target does instead (the warning's help).
    pub reason: String,
}

/// The constructs a `difference` can name: an aggregate over a decimal or integer argument.
pub const CONSTRUCTS: &[&str] = &["avg(decimal)", "sum(decimal)", "sum(integer)"];

/// A construct of a model the local engine may compute differently.
#[derive(Clone)]
pub struct Divergence {
    pub construct: String,
    pub reason: String,
    /// Spans of the column references in the construct.
    pub anchors: Vec<Span>,
    pub function: String,
}

impl Semantics {
    /// Checks the values a dialect file gives.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if let Some(n) = &self.null_ordering {
            if !["nulls_max", "nulls_min", "nulls_first", "nulls_last"].contains(&n.as_str()) {
                return Err(format!("unknown null_ordering `{n}`"));
            }
        }
        if let Some(d) = &self.integer_division {
            if !["truncate", "float"].contains(&d.as_str()) {
                return Err(format!("unknown integer_division `{d}`"));
            }
        }
        for (key, value, allowed) in [
            ("decimal_division", &self.decimal_division, "float"),
            ("extract", &self.extract, "bigint"),
            ("sum_decimal", &self.sum_decimal, "decimal(38)"),
            ("sum_integer", &self.sum_integer, "decimal(38,0)"),
            ("avg_decimal", &self.avg_decimal, "double"),
            ("decimal_literals", &self.decimal_literals, "decimal"),
            ("grouping", &self.grouping, "bigint"),
        ] {
            if let Some(v) = value {
                if v != allowed {
                    return Err(format!("unsupported {key} `{v}` (only `{allowed}`)"));
                }
            }
        }
        for d in &self.differences {
            if !CONSTRUCTS.contains(&d.construct.as_str()) {
                return Err(format!(
                    "unknown construct `{}` (known: {})",
                    d.construct,
                    CONSTRUCTS.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Sets what DataFusion can be configured for.
    /// The DataFusion session configuration models are typed and executed under, one for
    /// both so that typing infers the types execution produces: this dialect's settings, and
    /// strings as `Utf8` (not `Utf8View`) whether parsed from SQL or read from Parquet. Typing
    /// adds span collection for its diagnostics, which changes no type.
    pub fn session_config(&self) -> SessionConfig {
        let mut config = SessionConfig::new();
        self.configure(&mut config);
        config.options_mut().sql_parser.map_string_types_to_utf8view = false;
        config
            .options_mut()
            .execution
            .parquet
            .schema_force_view_types = false;
        config
    }

    fn configure(&self, config: &mut SessionConfig) {
        if let Some(n) = &self.null_ordering {
            config.options_mut().sql_parser.default_null_ordering = n.clone();
        }
        if self.decimal_literals.as_deref() == Some("decimal") {
            config.options_mut().sql_parser.parse_float_as_decimal = true;
        }
    }

    fn float_division(&self) -> bool {
        self.integer_division.as_deref() == Some("float")
    }

    fn bigint_extract(&self) -> bool {
        self.extract.as_deref() == Some("bigint")
    }

    fn bigint_grouping(&self) -> bool {
        self.grouping.as_deref() == Some("bigint")
    }

    /// Whether any rewrite applies.
    fn rewrites(&self) -> bool {
        self.float_division()
            || self.decimal_division.is_some()
            || self.bigint_extract()
            || self.sum_decimal.is_some()
            || self.sum_integer.is_some()
            || self.avg_decimal.is_some()
            || self.bigint_grouping()
    }

    /// The type an aggregate's argument is cast to so that the aggregate returns the target's
    /// type (the values stay those of the uncast argument): DECIMAL(38, s) for `sum` of a
    /// decimal (DataFusion's sum of DECIMAL(38, s) is DECIMAL(38, s)), DECIMAL(38, 0) for
    /// `sum` of an integer, DOUBLE for `avg` of a decimal.
    fn aggregate_argument(&self, function: &str, argument: &DataType) -> Option<DataType> {
        match (function, argument) {
            ("sum", DataType::Decimal128(p, s)) if self.sum_decimal.is_some() && *p < 38 => {
                Some(DataType::Decimal128(38, *s))
            }
            ("sum", t) if self.sum_integer.is_some() && t.is_integer() => {
                Some(DataType::Decimal128(38, 0))
            }
            ("avg", DataType::Decimal128(..)) if self.avg_decimal.is_some() => {
                Some(DataType::Float64)
            }
            _ => None,
        }
    }

    /// `plan` with the exact rewrites applied (output names kept).
    pub fn rewrite(&self, plan: LogicalPlan) -> Result<LogicalPlan> {
        if !self.rewrites() {
            return Ok(plan);
        }
        // `grouping(…)` has no type of its own to change until DataFusion's analyzer rule
        // resolves it into a cast of bits of the grouping id to Int32 (in a projection over
        // the aggregate); resolved here first, that cast is the one to rewrite. The analyzer
        // runs the rule again later and finds nothing left to resolve.
        let plan = match self.bigint_grouping() {
            true => ResolveGroupingFunction::new().analyze(plan, &ConfigOptions::default())?,
            false => plan,
        };
        plan.transform_up_with_subqueries(|node| {
            let schema = merge_schema(&node.inputs());
            let names = NamePreserver::new(&node);
            node.map_expressions(|expr| {
                let name = names.save(&expr);
                expr.transform_up(|e| self.rewrite_expr(e, &schema))
                    .map(|t| t.update_data(|e| name.restore(e)))
            })?
            .map_data(recompute_schema)
        })
        .map(|t| t.data)
    }

    fn rewrite_expr(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        let integer = |x: &Expr| x.get_type(schema).is_ok_and(|t| t.is_integer());
        let exact = |x: &Expr| {
            x.get_type(schema)
                .is_ok_and(|t| t.is_integer() || matches!(t, DataType::Decimal128(..)))
        };
        let decimal = |x: &Expr| {
            x.get_type(schema)
                .is_ok_and(|t| matches!(t, DataType::Decimal128(..)))
        };
        let float_division = |l: &Expr, r: &Expr| {
            (self.float_division() && integer(l) && integer(r))
                || (self.decimal_division.is_some()
                    && exact(l)
                    && exact(r)
                    && (decimal(l) || decimal(r)))
        };
        match e {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Divide,
                right,
            }) if float_division(&left, &right) => {
                Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: Box::new(cast(*left, DataType::Float64)),
                    op: Operator::Divide,
                    right: Box::new(cast(*right, DataType::Float64)),
                })))
            }
            Expr::ScalarFunction(ScalarFunction { ref func, .. })
                if self.bigint_extract()
                    && func.name() == "date_part"
                    && e.get_type(schema).is_ok_and(|t| t == DataType::Int32) =>
            {
                Ok(Transformed::yes(cast(e, DataType::Int64)))
            }
            Expr::Cast(Cast {
                expr,
                data_type: DataType::Int32,
            }) if self.bigint_grouping() && reads_grouping_id(&expr) => {
                Ok(Transformed::yes(cast(*expr, DataType::Int64)))
            }
            // `avg(x) OVER (…)`: an aggregate used as a window function types the same way.
            Expr::WindowFunction(mut window)
                if window.params.args.len() == 1
                    && matches!(window.fun, WindowFunctionDefinition::AggregateUDF(_)) =>
            {
                let WindowFunctionDefinition::AggregateUDF(func) = &window.fun else {
                    unreachable!("matched above")
                };
                let to = window.params.args[0]
                    .get_type(schema)
                    .ok()
                    .and_then(|t| self.aggregate_argument(func.name(), &t));
                match to {
                    Some(to) => {
                        let arg = window.params.args.remove(0);
                        window.params.args.push(cast(arg, to));
                        Ok(Transformed::yes(Expr::WindowFunction(window)))
                    }
                    None => Ok(Transformed::no(Expr::WindowFunction(window))),
                }
            }
            Expr::AggregateFunction(AggregateFunction { func, mut params })
                if params.args.len() == 1 =>
            {
                let to = params.args[0]
                    .get_type(schema)
                    .ok()
                    .and_then(|t| self.aggregate_argument(func.name(), &t));
                match to {
                    Some(to) => {
                        let arg = params.args.remove(0);
                        params.args.push(cast(arg, to));
                        Ok(Transformed::yes(Expr::AggregateFunction(
                            AggregateFunction { func, params },
                        )))
                    }
                    None => Ok(Transformed::no(Expr::AggregateFunction(
                        AggregateFunction { func, params },
                    ))),
                }
            }
            other => Ok(Transformed::no(other)),
        }
    }

    /// The constructs of `plan` this dialect lists as differences.
    pub fn divergences(&self, plan: &LogicalPlan) -> Vec<Divergence> {
        if self.differences.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let _ = plan.apply_with_subqueries(|node| {
            let schema = merge_schema(&node.inputs());
            for expr in node.expressions() {
                let _ = expr.apply(|e| {
                    let aggregate = match e {
                        Expr::AggregateFunction(AggregateFunction { func, params }) => {
                            Some((func.name(), params.args.first()))
                        }
                        Expr::WindowFunction(w) => match &w.fun {
                            WindowFunctionDefinition::AggregateUDF(func) => {
                                Some((func.name(), w.params.args.first()))
                            }
                            WindowFunctionDefinition::WindowUDF(_) => None,
                        },
                        _ => None,
                    };
                    if let Some((function, argument)) = aggregate {
                        let kind = match argument.map(|a| a.get_type(&schema)) {
                            Some(Ok(DataType::Decimal128(..))) => "decimal",
                            Some(Ok(t)) if t.is_integer() => "integer",
                            _ => return Ok(TreeNodeRecursion::Continue),
                        };
                        let construct = format!("{function}({kind})");
                        if let Some(d) = self.differences.iter().find(|d| d.construct == construct)
                        {
                            out.push(Divergence {
                                construct,
                                reason: d.reason.clone(),
                                anchors: anchors(e),
                                function: function.to_string(),
                            });
                        }
                    }
                    Ok(TreeNodeRecursion::Continue)
                });
            }
            Ok(TreeNodeRecursion::Continue)
        });
        out
    }
}

/// Whether `expr` reads the grouping id column DataFusion adds to an aggregate over grouping
/// sets: the cast around it is a resolved `grouping(…)`.
fn reads_grouping_id(expr: &Expr) -> bool {
    let mut found = false;
    let _ = expr.apply(|e| {
        found |= matches!(e, Expr::Column(c) if c.name == Aggregate::INTERNAL_GROUPING_ID);
        Ok(match found {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    });
    found
}

/// `node`'s schema computed again from its rewritten expressions and inputs. A UNION keeps the
/// schema it was planned with when its width is unchanged, so it is derived again from its
/// inputs as the SQL planner does (loosely: the analyzer coerces the branches), or a branch
/// whose `avg` became DOUBLE would still be declared DECIMAL (TPC-DS q27).
fn recompute_schema(node: LogicalPlan) -> Result<LogicalPlan> {
    match node {
        LogicalPlan::Union(union) => {
            Union::try_new_with_loose_types(union.inputs).map(LogicalPlan::Union)
        }
        other => other.recompute_schema(),
    }
}

fn anchors(e: &Expr) -> Vec<Span> {
    let mut out = Vec::new();
    let _ = e.apply(|sub| {
        if let Expr::Column(c) = sub {
            out.extend(c.spans.iter().copied());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    out
}
