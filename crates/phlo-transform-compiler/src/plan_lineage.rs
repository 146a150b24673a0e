//! Column lineage of one model, computed by output position bottom-up over its unoptimized
//! DataFusion plan (decision 3). Every plan node maps each of its output columns to the input
//! columns it derives from; rows-wide inputs (filters, join keys, grouping and sort keys) are
//! carried apart and become indirect inputs of every output column. A construct the walk does
//! not understand marks the columns it feeds `unknown` instead of guessing.

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema};
use datafusion::logical_expr::expr::{AggregateFunction, WindowFunction};
use datafusion::logical_expr::utils::grouping_set_to_exprlist;
use datafusion::logical_expr::{
    Aggregate, Distinct, Expr, JoinType, LogicalPlan, Projection, Subquery,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;

/// How an output column depends on an input column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Directness {
    /// The input's value flows into the output's value.
    Direct,
    /// The input decides which rows exist or how they are grouped, ordered or chosen.
    Indirect,
}

/// What happens to the input on its way to the output. Ordered by strength: along a chain of
/// plan nodes the strongest step names the edge (a sum over an arithmetic expression is an
/// aggregation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transformation {
    Identity,
    Transformation,
    Conditional,
    Filter,
    Join,
    GroupBy,
    Sort,
    Window,
    Aggregation,
}

/// An input column: the dataset (a source or model name, as registered for typing) and column.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InputColumn {
    pub dataset: Arc<str>,
    pub column: Arc<str>,
}

/// One derivation of an output column from an input column.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Derivation {
    pub input: InputColumn,
    pub directness: Directness,
    pub transformation: Transformation,
    /// The SQL expression responsible (absent for a plain pass-through).
    pub expression: Option<Arc<str>>,
}

/// The lineage of one output column.
#[derive(Clone, Debug, Default)]
pub struct ColumnDerivations {
    pub derivations: BTreeSet<Derivation>,
    /// False when part of the column's derivation could not be analysed.
    pub exact: bool,
}

/// Lineage of a plan node's output: one entry per output column, plus the rows-wide indirect
/// inputs that apply to all of them.
#[derive(Clone, Debug)]
struct NodeLineage {
    columns: Vec<ColumnDerivations>,
    rows: BTreeSet<Derivation>,
    /// False when a rows-wide input could not be analysed.
    rows_exact: bool,
}

impl NodeLineage {
    fn unknown(width: usize) -> Self {
        NodeLineage {
            columns: vec![
                ColumnDerivations {
                    derivations: BTreeSet::new(),
                    exact: false
                };
                width
            ],
            rows: BTreeSet::new(),
            rows_exact: false,
        }
    }
}

/// The lineage of every output column of `plan`, in output order. `datasets` tells which
/// scanned table names are known datasets (sources and models); a scan of anything else
/// (a recursive CTE's work table) leaves its columns `unknown`.
pub fn column_lineage(
    plan: &LogicalPlan,
    is_dataset: &dyn Fn(&str) -> bool,
) -> Vec<ColumnDerivations> {
    let walker = Walker { is_dataset };
    let node = walker.plan(plan, None);
    node.columns
        .into_iter()
        .map(|mut c| {
            let direct: BTreeSet<InputColumn> = c
                .derivations
                .iter()
                .filter(|d| d.directness == Directness::Direct)
                .map(|d| d.input.clone())
                .collect();
            // A rows-wide input the column already copies or computes from is not repeated.
            c.derivations.extend(
                node.rows
                    .iter()
                    .filter(|d| !direct.contains(&d.input))
                    .cloned(),
            );
            c.exact &= node.rows_exact;
            c
        })
        .collect()
}

/// The columns of enclosing queries a correlated subquery may reference.
struct Scope<'a> {
    schema: &'a DFSchema,
    lineage: &'a NodeLineage,
    outer: Option<&'a Scope<'a>>,
}

impl Scope<'_> {
    fn resolve(&self, column: &Column) -> Option<&ColumnDerivations> {
        match self.schema.maybe_index_of_column(column) {
            Some(i) => self.lineage.columns.get(i),
            None => self.outer.and_then(|o| o.resolve(column)),
        }
    }
}

/// What an expression contributes to the column it computes.
#[derive(Default)]
struct ExprLineage {
    derivations: BTreeSet<Derivation>,
    exact: bool,
}

struct Walker<'a> {
    is_dataset: &'a dyn Fn(&str) -> bool,
}

impl Walker<'_> {
    fn plan(&self, plan: &LogicalPlan, outer: Option<&Scope>) -> NodeLineage {
        let width = plan.schema().fields().len();
        let node = match plan {
            LogicalPlan::TableScan(scan) => {
                let name = scan.table_name.to_string();
                if (self.is_dataset)(&name) {
                    let dataset: Arc<str> = name.into();
                    let columns = scan
                        .projected_schema
                        .fields()
                        .iter()
                        .map(|f| ColumnDerivations {
                            derivations: BTreeSet::from([Derivation {
                                input: InputColumn {
                                    dataset: dataset.clone(),
                                    column: f.name().as_str().into(),
                                },
                                directness: Directness::Direct,
                                transformation: Transformation::Identity,
                                expression: None,
                            }]),
                            exact: true,
                        })
                        .collect();
                    NodeLineage {
                        columns,
                        rows: BTreeSet::new(),
                        rows_exact: true,
                    }
                } else {
                    NodeLineage::unknown(width)
                }
            }
            LogicalPlan::Projection(p) => self.projection(p, outer),
            LogicalPlan::Filter(f) => {
                let mut input = self.plan(&f.input, outer);
                let e = self.expr(
                    &f.predicate,
                    f.input.schema(),
                    &input,
                    outer,
                    Transformation::Filter,
                );
                input.add_rows(e);
                input
            }
            LogicalPlan::Aggregate(a) => self.aggregate(a, outer),
            LogicalPlan::Window(w) => {
                let input = self.plan(&w.input, outer);
                let mut columns = input.columns.clone();
                for e in &w.window_expr {
                    let lineage =
                        self.expr(e, w.input.schema(), &input, outer, Transformation::Identity);
                    columns.push(lineage.into_column());
                }
                NodeLineage { columns, ..input }
            }
            LogicalPlan::Sort(s) => {
                let mut input = self.plan(&s.input, outer);
                for key in &s.expr {
                    let e = self.expr(
                        &key.expr,
                        s.input.schema(),
                        &input,
                        outer,
                        Transformation::Sort,
                    );
                    input.add_rows(e);
                }
                input
            }
            LogicalPlan::Join(j) => {
                let left = self.plan(&j.left, outer);
                let right = self.plan(&j.right, outer);
                let both_schema = j.left.schema().join(j.right.schema());
                let mut both = NodeLineage {
                    columns: left
                        .columns
                        .iter()
                        .chain(right.columns.iter())
                        .cloned()
                        .collect(),
                    rows: left.rows.union(&right.rows).cloned().collect(),
                    rows_exact: left.rows_exact && right.rows_exact,
                };
                match both_schema {
                    Ok(schema) => {
                        let keys =
                            j.on.iter()
                                .flat_map(|(l, r)| [l, r])
                                .chain(j.filter.as_ref());
                        for key in keys {
                            let e = self.expr(key, &schema, &both, outer, Transformation::Join);
                            both.add_rows(e);
                        }
                    }
                    Err(_) => both.rows_exact = false,
                }
                let columns = match j.join_type {
                    JoinType::Inner | JoinType::Left | JoinType::Right | JoinType::Full => {
                        both.columns
                    }
                    JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => left.columns,
                    JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => {
                        right.columns
                    }
                };
                NodeLineage { columns, ..both }
            }
            LogicalPlan::Union(u) => {
                let mut columns = vec![
                    ColumnDerivations {
                        derivations: BTreeSet::new(),
                        exact: true
                    };
                    width
                ];
                let mut rows = BTreeSet::new();
                let mut rows_exact = true;
                for input in &u.inputs {
                    let branch = self.plan(input, outer);
                    for (out, c) in columns.iter_mut().zip(branch.columns) {
                        out.derivations.extend(c.derivations);
                        out.exact &= c.exact;
                    }
                    rows.extend(branch.rows);
                    rows_exact &= branch.rows_exact;
                }
                NodeLineage {
                    columns,
                    rows,
                    rows_exact,
                }
            }
            LogicalPlan::SubqueryAlias(s) => self.plan(&s.input, outer),
            LogicalPlan::Subquery(s) => self.plan(&s.subquery, outer),
            LogicalPlan::Limit(l) => self.plan(&l.input, outer),
            LogicalPlan::Repartition(r) => self.plan(&r.input, outer),
            LogicalPlan::Distinct(Distinct::All(input)) => self.plan(input, outer),
            LogicalPlan::Distinct(Distinct::On(d)) => {
                let mut input = self.plan(&d.input, outer);
                let schema = d.input.schema();
                let columns = d
                    .select_expr
                    .iter()
                    .map(|e| {
                        self.expr(e, schema, &input, outer, Transformation::Identity)
                            .into_column()
                    })
                    .collect();
                let keys: Vec<&Expr> = d
                    .on_expr
                    .iter()
                    .chain(d.sort_expr.iter().flatten().map(|s| &s.expr))
                    .collect();
                for key in keys {
                    let e = self.expr(key, schema, &input, outer, Transformation::Sort);
                    input.add_rows(e);
                }
                NodeLineage { columns, ..input }
            }
            LogicalPlan::Unnest(u) => {
                let input = self.plan(&u.input, outer);
                let unnested: BTreeSet<usize> = u
                    .list_type_columns
                    .iter()
                    .map(|(i, _)| *i)
                    .chain(u.struct_type_columns.iter().copied())
                    .collect();
                let columns = u
                    .dependency_indices
                    .iter()
                    .map(|&i| {
                        let mut c = input.columns.get(i).cloned().unwrap_or_default();
                        if unnested.contains(&i) {
                            let text: Arc<str> =
                                format!("unnest({})", u.input.schema().field(i).name()).into();
                            c.derivations = c
                                .derivations
                                .iter()
                                .map(|d| {
                                    d.seen_through(Transformation::Transformation, false, &text)
                                })
                                .collect();
                        }
                        c
                    })
                    .collect();
                NodeLineage { columns, ..input }
            }
            LogicalPlan::Values(_) | LogicalPlan::EmptyRelation(_) => NodeLineage {
                columns: vec![
                    ColumnDerivations {
                        derivations: BTreeSet::new(),
                        exact: true
                    };
                    width
                ],
                rows: BTreeSet::new(),
                rows_exact: true,
            },
            LogicalPlan::RecursiveQuery(r) => {
                // The recursive term reads the CTE's own work table, which is not a dataset:
                // its columns come out `unknown`, the static term's inputs are kept.
                let mut node = self.plan(&r.static_term, outer);
                let recursive = self.plan(&r.recursive_term, outer);
                for (out, c) in node.columns.iter_mut().zip(recursive.columns) {
                    out.derivations.extend(c.derivations);
                    out.exact &= c.exact;
                }
                node.rows.extend(recursive.rows);
                node.rows_exact &= recursive.rows_exact;
                node
            }
            _ => NodeLineage::unknown(width),
        };
        if node.columns.len() == width {
            node
        } else {
            NodeLineage::unknown(width)
        }
    }

    fn projection(&self, p: &Projection, outer: Option<&Scope>) -> NodeLineage {
        let input = self.plan(&p.input, outer);
        let columns = p
            .expr
            .iter()
            .map(|e| {
                self.expr(e, p.input.schema(), &input, outer, Transformation::Identity)
                    .into_column()
            })
            .collect();
        NodeLineage { columns, ..input }
    }

    fn aggregate(&self, a: &Aggregate, outer: Option<&Scope>) -> NodeLineage {
        let mut input = self.plan(&a.input, outer);
        let schema = a.input.schema();
        let Ok(keys) = grouping_set_to_exprlist(&a.group_expr) else {
            return NodeLineage::unknown(a.schema.fields().len());
        };
        let mut columns: Vec<ColumnDerivations> = keys
            .iter()
            .map(|k| {
                self.expr(k, schema, &input, outer, Transformation::Identity)
                    .into_column()
            })
            .collect();
        if matches!(a.group_expr.as_slice(), [Expr::GroupingSet(_)]) {
            // The internal grouping id says which keys a row is grouped by.
            let mut id = ExprLineage {
                exact: true,
                ..Default::default()
            };
            for k in &keys {
                id.merge(self.expr(k, schema, &input, outer, Transformation::GroupBy));
            }
            columns.push(id.into_column());
        }
        for e in &a.aggr_expr {
            columns.push(
                self.expr(e, schema, &input, outer, Transformation::Identity)
                    .into_column(),
            );
        }
        for k in keys {
            let e = self.expr(k, schema, &input, outer, Transformation::GroupBy);
            input.add_rows(e);
        }
        NodeLineage { columns, ..input }
    }

    /// The derivations of `expr`, evaluated over `input` (whose columns `schema` names).
    /// `step` is the transformation the enclosing context applies (identity for a projected
    /// expression, filter for a WHERE predicate, …).
    fn expr(
        &self,
        expr: &Expr,
        schema: &DFSchema,
        input: &NodeLineage,
        outer: Option<&Scope>,
        step: Transformation,
    ) -> ExprLineage {
        let scope = Scope {
            schema,
            lineage: input,
            outer,
        };
        let root = strip_alias(expr);
        let text: Arc<str> = root.to_string().into();
        let indirect_context = step != Transformation::Identity;
        let mut out = ExprLineage {
            exact: true,
            ..Default::default()
        };
        self.visit(root, &scope, step, indirect_context, &text, &mut out);
        out
    }

    /// Adds the derivations of `e` to `out`. Without `indirect`, `kind` is the strongest
    /// transformation between `e` and the output; below a condition or key (`indirect`) it is
    /// the role that makes the inputs indirect (filter, join, conditional, …) and stays fixed.
    fn visit(
        &self,
        e: &Expr,
        scope: &Scope,
        kind: Transformation,
        indirect: bool,
        text: &Arc<str>,
        out: &mut ExprLineage,
    ) {
        let next = |k: Transformation| if indirect { kind } else { kind.max(k) };
        match e {
            Expr::Column(c) | Expr::OuterReferenceColumn(_, c) => match scope.resolve(c) {
                Some(col) => {
                    out.exact &= col.exact;
                    for d in &col.derivations {
                        out.derivations.insert(d.seen_through(kind, indirect, text));
                    }
                }
                None => out.exact = false,
            },
            Expr::Alias(a) => self.visit(&a.expr, scope, kind, indirect, text, out),
            Expr::Case(case) => {
                let conditions = case
                    .expr
                    .iter()
                    .map(|b| b.as_ref())
                    .chain(case.when_then_expr.iter().map(|(w, _)| w.as_ref()));
                for c in conditions {
                    let role = if indirect {
                        kind
                    } else {
                        Transformation::Conditional
                    };
                    self.visit(c, scope, role, true, text, out);
                }
                let values = case
                    .when_then_expr
                    .iter()
                    .map(|(_, t)| t.as_ref())
                    .chain(case.else_expr.as_deref());
                for v in values {
                    self.visit(
                        v,
                        scope,
                        next(Transformation::Conditional),
                        indirect,
                        text,
                        out,
                    );
                }
            }
            Expr::AggregateFunction(AggregateFunction { params, .. }) => {
                for a in &params.args {
                    self.visit(
                        a,
                        scope,
                        next(Transformation::Aggregation),
                        indirect,
                        text,
                        out,
                    );
                }
                if let Some(f) = &params.filter {
                    self.visit(f, scope, Transformation::Filter, true, text, out);
                }
                for s in &params.order_by {
                    self.visit(&s.expr, scope, Transformation::Sort, true, text, out);
                }
            }
            Expr::WindowFunction(w) => {
                let WindowFunction { params, .. } = w.as_ref();
                for a in &params.args {
                    self.visit(a, scope, next(Transformation::Window), indirect, text, out);
                }
                let keys = params
                    .partition_by
                    .iter()
                    .chain(params.order_by.iter().map(|s| &s.expr))
                    .chain(params.filter.as_deref());
                for k in keys {
                    self.visit(k, scope, Transformation::Window, true, text, out);
                }
            }
            Expr::ScalarSubquery(s) => self.subquery(s, scope, kind, indirect, text, out),
            Expr::InSubquery(s) => {
                let t = next(Transformation::Transformation);
                self.visit(&s.expr, scope, t, indirect, text, out);
                self.subquery(&s.subquery, scope, t, indirect, text, out);
            }
            Expr::SetComparison(s) => {
                let t = next(Transformation::Transformation);
                self.visit(&s.expr, scope, t, indirect, text, out);
                self.subquery(&s.subquery, scope, t, indirect, text, out);
            }
            Expr::Exists(s) => {
                // Existence depends on which rows the subquery finds, never on the values it
                // selects: only its rows-wide inputs count (`EXISTS (SELECT * …)` reads no
                // column of its projection).
                let node = self.plan(&s.subquery.subquery, Some(scope));
                out.exact &= node.rows_exact;
                out.derivations.extend(node.rows);
            }
            Expr::Literal(..) | Expr::Placeholder(_) | Expr::ScalarVariable(..) => {}
            other => {
                let t = next(Transformation::Transformation);
                let mut children = Vec::new();
                let _ = other.apply_children(|child| {
                    children.push(child);
                    Ok(TreeNodeRecursion::Continue)
                });
                for child in children {
                    self.visit(child, scope, t, indirect, text, out);
                }
            }
        }
    }

    /// A subquery inside an expression: its output values flow like any operand, its
    /// rows-wide inputs (correlated outer columns included) are indirect.
    fn subquery(
        &self,
        s: &Subquery,
        scope: &Scope,
        kind: Transformation,
        indirect: bool,
        text: &Arc<str>,
        out: &mut ExprLineage,
    ) {
        let node = self.plan(&s.subquery, Some(scope));
        for c in &node.columns {
            out.exact &= c.exact;
            for d in &c.derivations {
                out.derivations.insert(d.seen_through(kind, indirect, text));
            }
        }
        out.exact &= node.rows_exact;
        out.derivations.extend(node.rows.iter().cloned());
    }
}

impl NodeLineage {
    /// Records an expression's inputs as rows-wide indirect inputs.
    fn add_rows(&mut self, e: ExprLineage) {
        self.rows_exact &= e.exact;
        self.rows
            .extend(e.derivations.into_iter().map(|d| Derivation {
                directness: Directness::Indirect,
                ..d
            }));
    }
}

impl ExprLineage {
    fn merge(&mut self, other: ExprLineage) {
        self.exact &= other.exact;
        self.derivations.extend(other.derivations);
    }

    fn into_column(self) -> ColumnDerivations {
        ColumnDerivations {
            derivations: self.derivations,
            exact: self.exact,
        }
    }
}

impl Derivation {
    /// This derivation seen through one more step of kind `kind` computing `text`. An input
    /// that is already indirect keeps its role; one that becomes indirect here takes the
    /// step's role; a direct one takes the stronger transformation, and the step's expression
    /// when the step is at least as strong as what it had.
    fn seen_through(&self, kind: Transformation, indirect: bool, text: &Arc<str>) -> Derivation {
        if self.directness == Directness::Indirect {
            return self.clone();
        }
        if indirect {
            return Derivation {
                input: self.input.clone(),
                directness: Directness::Indirect,
                transformation: kind,
                expression: Some(text.clone()),
            };
        }
        if kind == Transformation::Identity || kind < self.transformation {
            return Derivation {
                transformation: self.transformation.max(kind),
                ..self.clone()
            };
        }
        Derivation {
            input: self.input.clone(),
            directness: Directness::Direct,
            transformation: kind,
            expression: Some(text.clone()),
        }
    }
}

fn strip_alias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => strip_alias(&a.expr),
        other => other,
    }
}
