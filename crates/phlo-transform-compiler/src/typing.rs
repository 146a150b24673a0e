//! Lowering (decision 2): every model becomes an unoptimized DataFusion `LogicalPlan`, in
//! topological order, against schema-only tables (`EmptyTable`) for its sources and upstream
//! models. The plan's output schema is the model's inferred schema; a planning error is a
//! located T diagnostic. A model reading something whose schema is unknown is `unknown` too,
//! with the reason, never a false error.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DataFusionError;
use datafusion::datasource::empty::EmptyTable;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionConfig;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::TableReference;
use phlo_transform_core::diagnostic::{codes, Location, Span};
use phlo_transform_core::{Diagnostic, Diagnostics};
use serde::Serialize;
use std::collections::HashSet;
use std::sync::Arc;

use crate::compile::{typing_query, Compilation, CompiledModel};
use crate::dialect::{known_dialects, Dialect};
use crate::lineage::{column_lineage, ColumnDerivations};
use crate::resolve::Target;
use crate::schemas::SourceSchema;
use crate::version::plan_fingerprint;
use crate::CatalogSnapshot;
use phlo_transform_project::{AnalysisMode, Workspace};

/// One output column of a model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Column {
    pub name: String,
    /// The Arrow type DataFusion infers (`Int64`, `Utf8`, `Decimal128(10, 2)`, …).
    #[serde(rename = "type")]
    pub data_type: String,
    /// False only where the plan proves the column cannot be null.
    pub nullable: bool,
    #[serde(skip)]
    pub arrow_type: datafusion::arrow::datatypes::DataType,
}

/// A model's inferred schema.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ModelSchema {
    Known {
        columns: Vec<Column>,
        #[serde(skip)]
        arrow: SchemaRef,
    },
    Unknown {
        reason: String,
    },
}

impl ModelSchema {
    fn known(arrow: SchemaRef) -> Self {
        let columns = arrow
            .fields()
            .iter()
            .map(|f| Column {
                name: f.name().clone(),
                data_type: f.data_type().to_string(),
                nullable: f.is_nullable(),
                arrow_type: f.data_type().clone(),
            })
            .collect();
        ModelSchema::Known { columns, arrow }
    }

    pub fn columns(&self) -> Option<&[Column]> {
        match self {
            ModelSchema::Known { columns, .. } => Some(columns),
            ModelSchema::Unknown { .. } => None,
        }
    }
}

/// A session whose tables are schema-only: nothing here can read data.
fn typing_session() -> SessionContext {
    let mut config = SessionConfig::new();
    config.options_mut().sql_parser.collect_spans = true;
    config.options_mut().sql_parser.map_string_types_to_utf8view = false;
    SessionContext::new_with_config(config)
}

fn register(ctx: &SessionContext, name: &str, schema: SchemaRef) {
    let table = TableReference::bare(name);
    let _ = ctx.deregister_table(table.clone());
    // EmptyTable is schema-only; registration of a fresh name cannot fail.
    let _ = ctx.register_table(table, Arc::new(EmptyTable::new(schema)));
}

/// The dialect `[transform] dialect` names (an unknown name is C002, and the local engine's
/// own functions are used instead).
pub(crate) fn load_dialect(workspace: &Workspace, diagnostics: &mut Diagnostics) -> Dialect {
    let name = workspace
        .config
        .transform
        .dialect
        .as_deref()
        .unwrap_or("datafusion");
    Dialect::builtin(name).unwrap_or_else(|reason| {
        diagnostics.push(
            Diagnostic::error(
                codes::INVALID_CONFIG,
                format!("[transform] dialect: {reason}"),
            )
            .in_file("phlo.toml")
            .with_help(format!(
                "set `dialect` to one of: {}",
                known_dialects().join(", ")
            )),
        );
        Dialect::builtin("datafusion").expect("the local engine's dialect always loads")
    })
}

/// Types every model without errors, in `order`. Planning errors become diagnostics and mark
/// the model as erroneous.
pub(crate) fn infer(
    models: &mut [CompiledModel],
    order: &[usize],
    catalog: &CatalogSnapshot,
    workspace: &Workspace,
    dialect: &Dialect,
    diagnostics: &mut Diagnostics,
) {
    let ctx = typing_session();
    dialect.register(&ctx);
    for (name, state) in &catalog.sources {
        if let SourceSchema::Known(schema) = &state.schema {
            register(&ctx, name, schema.clone());
        }
    }
    // Scanned names that are datasets, for column lineage (anything else is a CTE work table).
    let datasets: HashSet<String> = models
        .iter()
        .map(|m| m.name.to_string())
        .chain(catalog.sources.keys().cloned())
        .collect();
    // Models of one topological level only read earlier levels: plan each level in parallel,
    // then register its schemas for the next.
    for level in levels(models, order) {
        let mut work = Vec::with_capacity(level.len());
        for i in level {
            // A model over an erroneous upstream is not typed: its error is already reported.
            if models[i].has_errors
                || models[i]
                    .upstream
                    .iter()
                    .any(|&u| models[u].has_errors || models[u].schema.is_none())
            {
                continue;
            }
            if workspace.models[i].config.analysis.value == AnalysisMode::Off {
                models[i].schema = Some(ModelSchema::Unknown {
                    reason: "analysis is off for this model".into(),
                });
                continue;
            }
            if let Some(reason) = unknown_input(models, i, catalog) {
                models[i].schema = Some(ModelSchema::Unknown { reason });
                continue;
            }
            work.push(i);
        }
        for (i, planned) in plan_in_parallel(&ctx, models, work, &datasets) {
            record(i, planned, models, workspace, &ctx, diagnostics);
        }
    }
}

/// The unoptimized plan of typed model `i`, planned again against the inferred schemas of
/// its inputs (compiling keeps no plans). `None` when the model is not typed.
pub(crate) fn plan_model(c: &Compilation, i: usize) -> Option<LogicalPlan> {
    let models = &c.models;
    models[i].plan_fingerprint.as_ref()?;
    let ctx = typing_session();
    let mut ignored = Diagnostics::default();
    load_dialect(&c.workspace, &mut ignored).register(&ctx);
    for r in &models[i].relations {
        match r.target.as_ref()? {
            Target::Source(s) => {
                if let SourceSchema::Known(schema) = &c.catalog.sources.get(s)?.schema {
                    register(&ctx, s, schema.clone());
                }
            }
            Target::Model(u) => {
                if let Some(ModelSchema::Known { arrow, .. }) = &models[*u].schema {
                    register(&ctx, models[*u].name.as_str(), arrow.clone());
                }
            }
        }
    }
    let dotted = |t: &Target| match t {
        Target::Model(u) => models[*u].name.to_string(),
        Target::Source(s) => s.clone(),
    };
    let query = typing_query(models, i, &dotted)?;
    let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query))));
    futures::executor::block_on(ctx.state().statement_to_plan(statement)).ok()
}

/// Groups `order` by depth: a model's level is one more than its deepest upstream's.
fn levels(models: &[CompiledModel], order: &[usize]) -> Vec<Vec<usize>> {
    let mut depth = vec![0usize; models.len()];
    let mut out: Vec<Vec<usize>> = Vec::new();
    for &i in order {
        let d = models[i]
            .upstream
            .iter()
            .map(|&u| depth[u] + 1)
            .max()
            .unwrap_or(0);
        depth[i] = d;
        if out.len() <= d {
            out.resize_with(d + 1, Vec::new);
        }
        out[d].push(i);
    }
    out
}

/// What compiling keeps of a model's plan: the plan itself is dropped on the planning
/// thread, so at most one plan per thread is alive.
struct Typed {
    schema: SchemaRef,
    fingerprint: String,
    lineage: Vec<ColumnDerivations>,
}

type Planned = Result<Typed, DataFusionError>;

/// Plans the models on up to `available_parallelism` threads, one session state each, and
/// reads the schema, fingerprint and column lineage off each plan there. Each query is
/// parsed again on its thread (compiling keeps no ASTs).
fn plan_in_parallel(
    ctx: &SessionContext,
    models: &[CompiledModel],
    work: Vec<usize>,
    datasets: &HashSet<String>,
) -> Vec<(usize, Planned)> {
    let is_dataset = |name: &str| datasets.contains(name);
    let dotted = |t: &Target| match t {
        Target::Model(u) => models[*u].name.to_string(),
        Target::Source(s) => s.clone(),
    };
    crate::par::map_chunks(work, |chunk| {
        let state = ctx.state();
        chunk
            .into_iter()
            .filter_map(|i| Some((i, typing_query(models, i, &dotted)?)))
            .map(|(i, query)| {
                let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query))));
                let planned = futures::executor::block_on(state.statement_to_plan(statement));
                let typed = planned.map(|plan| Typed {
                    schema: Arc::new(plan.schema().as_arrow().clone()),
                    fingerprint: plan_fingerprint(&plan.display_indent_schema().to_string()),
                    lineage: column_lineage(&plan, &is_dataset),
                });
                (i, typed)
            })
            .collect()
    })
}

/// Stores a planned model's schema, or turns its planning error into a diagnostic.
fn record(
    i: usize,
    planned: Planned,
    models: &mut [CompiledModel],
    workspace: &Workspace,
    ctx: &SessionContext,
    diagnostics: &mut Diagnostics,
) {
    match planned {
        Ok(typed) => {
            register(ctx, models[i].name.as_str(), typed.schema.clone());
            models[i].schema = Some(ModelSchema::known(typed.schema));
            models[i].plan_fingerprint = Some(typed.fingerprint);
            models[i].column_lineage = Some(typed.lineage);
        }
        Err(e) => {
            let mut d = type_diagnostic(&e, &models[i]);
            if d.code == codes::UNKNOWN_FUNCTION {
                suggest_functions(&mut d, ctx);
            }
            // Baseline: what DataFusion cannot type is not the user's error.
            let baseline = workspace.models[i].config.analysis.value == AnalysisMode::Baseline;
            if baseline && matches!(d.code, codes::UNKNOWN_FUNCTION | codes::UNTYPEABLE) {
                d.severity = phlo_transform_core::Severity::Warning;
                d = d.with_note("analysis is `baseline`: the model's schema is unknown");
                models[i].schema = Some(ModelSchema::Unknown {
                    reason: d.message.clone(),
                });
            } else {
                models[i].has_errors = true;
            }
            diagnostics.push(d);
        }
    }
}

/// DataFusion's "Possible function" note depends on hash order; suggest deterministically.
fn suggest_functions(d: &mut Diagnostic, ctx: &SessionContext) {
    d.notes.retain(|n| !n.starts_with("Possible function"));
    let Some(name) = d.message.split('\'').nth(1).map(str::to_string) else {
        return;
    };
    let state = ctx.state();
    let names: Vec<&String> = state
        .scalar_functions()
        .keys()
        .chain(state.aggregate_functions().keys())
        .chain(state.window_functions().keys())
        .collect();
    d.suggestions = phlo_transform_core::did_you_mean(&name, names.iter().map(|s| s.as_str()));
}

/// Why a model cannot be typed: an input whose schema is unknown.
fn unknown_input(models: &[CompiledModel], i: usize, catalog: &CatalogSnapshot) -> Option<String> {
    for r in &models[i].relations {
        match &r.target {
            Some(Target::Source(s)) => match catalog.sources.get(s).map(|st| &st.schema) {
                Some(SourceSchema::Unknown(reason)) => {
                    return Some(format!("source {s}: {reason}"))
                }
                None => return Some(format!("source {s} was not read")),
                _ => {}
            },
            Some(Target::Model(u)) => {
                if let Some(ModelSchema::Unknown { .. }) = &models[*u].schema {
                    return Some(format!(
                        "upstream {} has an unknown schema",
                        models[*u].name
                    ));
                }
            }
            None => {}
        }
    }
    None
}

/// A DataFusion planning error as a T diagnostic at the model's line and column.
fn type_diagnostic(e: &DataFusionError, model: &CompiledModel) -> Diagnostic {
    let text = e.strip_backtrace();
    let diag = e.diagnostic();
    let message = diag
        .map(|d| d.message.clone())
        .unwrap_or_else(|| first_line(&text));
    let code = classify(&text, &message);
    let mut d = Diagnostic::error(code, message).in_file(&model.path);
    if let Some(span) = diag.and_then(|d| d.span).filter(|s| s.start.line > 0) {
        d = d.with_span(Span {
            start: Location {
                line: span.start.line as usize,
                column: span.start.column as usize,
            },
            end: Location {
                line: span.end.line as usize,
                column: span.end.column as usize,
            },
        });
    } else {
        d = d.at(1, 1);
    }
    let mut helps = Vec::new();
    if let Some(dd) = diag {
        for n in &dd.notes {
            d = d.with_note(n.message.clone());
        }
        helps.extend(dd.helps.iter().map(|h| h.message.clone()));
    }
    if diag.is_some() && first_line(&text) != d.message {
        d = d.with_note(first_line(&text));
    }
    let help = if helps.is_empty() {
        default_help(code).to_string()
    } else {
        helps.join("; ")
    };
    d.with_help(help)
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or(text).trim().to_string()
}

fn classify(text: &str, message: &str) -> phlo_transform_core::Code {
    let t = format!("{text}\n{message}");
    if t.contains("No field named") || t.contains("not found") && t.contains("column") {
        codes::UNKNOWN_COLUMN
    } else if t.contains("mbiguous") {
        codes::AMBIGUOUS_COLUMN
    } else if t.contains("Invalid function")
        || t.contains("Unsupported function")
        || t.contains("Did you mean") && t.contains("function")
    {
        codes::UNKNOWN_FUNCTION
    } else if t.contains("GROUP BY") || t.contains("aggregate function") {
        codes::NOT_GROUPED
    } else if t.contains("UNION")
        || t.contains("Union")
        || t.contains("INTERSECT")
        || t.contains("EXCEPT")
    {
        codes::SET_OPERATION_MISMATCH
    } else if t.contains("Unsupported CAST") || t.contains("Cannot cast") {
        codes::INVALID_CAST
    } else if t.contains("subquery") && t.contains("column") {
        codes::SUBQUERY_COLUMNS
    } else if t.contains("Cannot infer common")
        || t.contains("Cannot coerce")
        || t.contains("cannot be coerced")
        || t.contains("type")
    {
        codes::INCOMPATIBLE_TYPES
    } else {
        codes::UNTYPEABLE
    }
}

fn default_help(code: phlo_transform_core::Code) -> &'static str {
    match code {
        codes::UNKNOWN_COLUMN => "check the column name against the relation's columns (`phlo-transform inspect <model>` lists them)",
        codes::AMBIGUOUS_COLUMN => "qualify the column with its table or alias",
        codes::UNKNOWN_FUNCTION => "check the function name; dialect functions are declared in dialects/<name>.toml",
        codes::NOT_GROUPED => "add the column to GROUP BY or wrap it in an aggregate",
        codes::SET_OPERATION_MISMATCH => "make every branch return the same number of columns with compatible types",
        codes::INVALID_CAST => "cast to a type the value can convert to",
        codes::SUBQUERY_COLUMNS => "a scalar or IN subquery must return exactly one column",
        codes::INCOMPATIBLE_TYPES => "cast one side so both operands have compatible types",
        _ => "fix the query; it was checked against the inferred schemas of its inputs",
    }
}
