//! Lowering (decision 2): every model becomes an unoptimized DataFusion `LogicalPlan`, in
//! topological order, against schema-only tables (`EmptyTable`) for its sources and upstream
//! models, and is put through DataFusion's analyzer (type coercion; never the optimizer). The
//! analysed plan's output schema, nullability included, is the model's inferred schema; a
//! planning or analysis error is a located T diagnostic. A model reading something whose
//! schema is unknown is `unknown` too, with the reason, never a false error.
//!
//! The model keeps the plan as planned, not as analysed: lineage reads the expressions as the
//! author wrote them (the analyser wraps operands in casts), and the plan fingerprint that
//! classifies edits stays what earlier runs recorded.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DataFusionError;
use datafusion::datasource::empty::EmptyTable;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::TableReference;
use phlo_transform_core::diagnostic::{codes, Location, Span};
use phlo_transform_core::{Diagnostic, Diagnostics};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use crate::analysis::{analyse, Rejection};
use crate::cache::CacheSession;
use crate::dialect::{known_dialects, Dialect};
use crate::locate::expression_span;
use crate::model::{typing_query, CompiledModel, ModelSchema};
use crate::plan_lineage::column_lineage;
use crate::relax;
use crate::resolve::Target;
use crate::schemas::SourceSchema;
use crate::semantics::{Divergence, Semantics};
use crate::typed_cache::{Typed, TypingCache};
use crate::version::plan_fingerprint;
use crate::CatalogSnapshot;
use phlo_transform_project::{AnalysisMode, Workspace};

/// A session whose tables are schema-only: nothing here can read data.
fn typing_session(semantics: &Semantics) -> SessionContext {
    let mut config = semantics.session_config();
    config.options_mut().sql_parser.collect_spans = true;
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

/// Which models typing took from the compile cache and which it planned.
#[derive(Default)]
pub(crate) struct TypingStats {
    pub hits: usize,
    /// Sorted model indices.
    pub computed: Vec<usize>,
}

/// Types every model without errors, in `order`. Planning errors become diagnostics and mark
/// the model as erroneous. A model whose SQL and inputs' schemas are as when an earlier
/// compile typed it takes that typing from `cache` instead of being planned.
pub(crate) fn infer(
    models: &mut [Arc<CompiledModel>],
    order: &[usize],
    catalog: &CatalogSnapshot,
    workspace: &Workspace,
    dialect: &Dialect,
    cache: &CacheSession,
    diagnostics: &mut Diagnostics,
) -> TypingStats {
    let mut stats = TypingStats::default();
    let mut cached = TypingCache::new(cache, &dialect.name);
    let ctx = typing_session(&dialect.semantics);
    dialect.register(&ctx);
    for (name, state) in &catalog.sources {
        if let SourceSchema::Known(schema) = &state.schema {
            register(&ctx, name, schema.clone());
            cached.registered(name, schema);
        }
    }
    register_typed_inputs(models, order, &ctx, &mut cached);
    // Models with an unknown column whose query planned once the column was NULL (see
    // `relax`), and the models typed against them: their schemas are registered for their
    // readers, but they keep no schema of their own.
    let mut relaxed = HashSet::new();
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
        let mut against_relaxed = HashSet::new();
        for i in level {
            if models[i].has_errors {
                continue;
            }
            // A model over an erroneous upstream is not typed (its error is already reported),
            // unless the upstream's relaxed schema stands in for it.
            let mut typed_upstream = true;
            for &u in &models[i].upstream {
                if relaxed.contains(&u) {
                    against_relaxed.insert(i);
                } else if models[u].has_errors || models[u].schema.is_none() {
                    typed_upstream = false;
                }
            }
            if !typed_upstream {
                continue;
            }
            if workspace.models[i].config.analysis.value == AnalysisMode::Off {
                Arc::make_mut(&mut models[i]).schema = Some(ModelSchema::Unknown {
                    reason: "analysis is off for this model".into(),
                });
                continue;
            }
            if let Some(reason) = unknown_input(models, i, catalog) {
                Arc::make_mut(&mut models[i]).schema = Some(ModelSchema::Unknown { reason });
                continue;
            }
            work.push(i);
        }
        let planned = plan_in_parallel(
            &ctx,
            &dialect.semantics,
            models,
            work,
            &datasets,
            (&cached, &against_relaxed),
        );
        for (i, planned, hit) in planned {
            if hit {
                stats.hits += 1;
            } else {
                stats.computed.push(i);
            }
            if against_relaxed.contains(&i) {
                if typed_against_relaxed(i, planned, models, &ctx, diagnostics) {
                    relaxed.insert(i);
                }
                continue;
            }
            let unknown = match &planned {
                Planned::Unplannable(e) => relax::unknown_column(e),
                _ => None,
            };
            if let Planned::Typed(typed) = &planned {
                cached.registered(models[i].name.as_str(), &typed.schema);
            }
            record(i, planned, models, workspace, &ctx, diagnostics);
            if let (Some(column), true) = (unknown, models[i].has_errors) {
                if relax_model(i, column, models, &ctx, diagnostics) {
                    relaxed.insert(i);
                }
            }
        }
    }
    stats.computed.sort_unstable();
    stats
}

/// When `order` is part of the workspace (an edit: `Compilation::with_edited_texts`), the
/// schemas its models read from models outside it, as typing them registered them.
fn register_typed_inputs(
    models: &[Arc<CompiledModel>],
    order: &[usize],
    ctx: &SessionContext,
    cached: &mut TypingCache<'_>,
) {
    if order.len() == models.len() {
        return;
    }
    let typing: HashSet<usize> = order.iter().copied().collect();
    let outside: BTreeSet<usize> = order
        .iter()
        .flat_map(|&i| models[i].upstream.iter().copied())
        .filter(|u| !typing.contains(u))
        .collect();
    for u in outside {
        if let Some(ModelSchema::Known { arrow, .. }) = &models[u].schema {
            register(ctx, models[u].name.as_str(), arrow.clone());
            cached.registered(models[u].name.as_str(), arrow);
        }
    }
}

/// Plans model `i` again with each unknown column replaced by NULL, reporting every further
/// unknown column as T001, until it plans; then registers the relaxed schema for its readers.
/// Returns whether it did. Another kind of error ends the attempt: it may be the NULL's doing.
fn relax_model(
    i: usize,
    first: (Option<String>, String),
    models: &mut [Arc<CompiledModel>],
    ctx: &SessionContext,
    diagnostics: &mut Diagnostics,
) -> bool {
    let dotted = |t: &Target| match t {
        Target::Model(u) => models[*u].name.to_string(),
        Target::Source(s) => s.clone(),
    };
    let Some(mut query) = typing_query(models, i, &dotted) else {
        return false;
    };
    let state = ctx.state();
    let mut column = first;
    for _ in 0..relax::MAX_ROUNDS {
        if !relax::null_out(&mut query, column.0.as_deref(), &column.1) {
            return false;
        }
        let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query.clone()))));
        match futures::executor::block_on(state.statement_to_plan(statement)) {
            Ok(plan) => {
                let arrow: SchemaRef = Arc::new(plan.schema().as_arrow().clone());
                register(ctx, models[i].name.as_str(), arrow);
                return true;
            }
            Err(e) => match relax::unknown_column(&e) {
                Some(next) => {
                    diagnostics.push(type_diagnostic(&e, &models[i]));
                    column = next;
                }
                None => return false,
            },
        }
    }
    false
}

/// A model read a relaxed schema: its own unknown columns are reported (and relaxed in turn);
/// other errors are not, since a NULL standing in for an upstream column may cause them. It
/// keeps no schema (an upstream has errors); its schema is registered for its readers.
fn typed_against_relaxed(
    i: usize,
    planned: Planned,
    models: &mut [Arc<CompiledModel>],
    ctx: &SessionContext,
    diagnostics: &mut Diagnostics,
) -> bool {
    match planned {
        Planned::Typed(typed) => {
            register(ctx, models[i].name.as_str(), typed.schema);
            true
        }
        Planned::Unplannable(e) => match relax::unknown_column(&e) {
            Some(column) => {
                diagnostics.push(type_diagnostic(&e, &models[i]));
                Arc::make_mut(&mut models[i]).has_errors = true;
                relax_model(i, column, models, ctx, diagnostics)
            }
            None => false,
        },
        Planned::Rejected(_) => false,
    }
}

/// The unoptimized plan of typed model `i`, planned again against the inferred schemas of
/// its inputs (compiling keeps no plans). `None` when the model is not typed.
pub(crate) fn plan_model(
    models: &[Arc<CompiledModel>],
    catalog: &CatalogSnapshot,
    dialect: &Dialect,
    i: usize,
) -> Option<LogicalPlan> {
    models[i].plan_fingerprint.as_ref()?;
    let ctx = typing_session(&dialect.semantics);
    dialect.register(&ctx);
    for r in &models[i].relations {
        match r.target.as_ref()? {
            Target::Source(s) => {
                if let SourceSchema::Known(schema) = &catalog.sources.get(s)?.schema {
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
fn levels(models: &[Arc<CompiledModel>], order: &[usize]) -> Vec<Vec<usize>> {
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

/// What planning and analysing one model gave.
enum Planned {
    Typed(Box<Typed>),
    /// The SQL planner failed.
    Unplannable(DataFusionError),
    /// The planner accepted the query; the analyzer rejected it.
    Rejected(Box<Rejection>),
}

/// Plans the models on up to `available_parallelism` threads, one session state each, and
/// reads the schema, fingerprint and column lineage off each plan there. Each query is
/// parsed again on its thread (compiling keeps no ASTs). A model whose typing is in the
/// cache (and not in `uncached`: typed against a relaxed schema) is not planned; the flag
/// says which were cache hits.
fn plan_in_parallel(
    ctx: &SessionContext,
    semantics: &Semantics,
    models: &[Arc<CompiledModel>],
    work: Vec<usize>,
    datasets: &HashSet<String>,
    (cache, uncached): (&TypingCache<'_>, &HashSet<usize>),
) -> Vec<(usize, Planned, bool)> {
    let dotted = |t: &Target| match t {
        Target::Model(u) => models[*u].name.to_string(),
        Target::Source(s) => s.clone(),
    };
    crate::par::map_with(
        work,
        crate::PARALLEL_MIN_MODELS,
        || ctx.state(),
        |state, i| {
            let key = if uncached.contains(&i) {
                None
            } else {
                cache.key(models, i)
            };
            if let Some(typed) = key.as_ref().and_then(|k| cache.get(k, datasets)) {
                return Some((i, Planned::Typed(Box::new(typed)), true));
            }
            // What lineage asks about datasets, stored with the entry.
            let asked = std::sync::Mutex::new(Vec::new());
            let is_dataset = |name: &str| {
                let is = datasets.contains(name);
                if let Ok(mut asked) = asked.lock() {
                    asked.push((name.to_string(), is));
                }
                is
            };
            let query = typing_query(models, i, &dotted)?;
            let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query))));
            let planned = match futures::executor::block_on(state.statement_to_plan(statement)) {
                Err(e) => Planned::Unplannable(e),
                Ok(plan) => {
                    // The target's semantics where a rewrite is exact: the types it reports.
                    let target = semantics.rewrite(plan.clone());
                    match target
                        .map_err(Planned::Unplannable)
                        .and_then(|target| analyse(state, &target).map_err(Planned::Rejected))
                        .map(crate::output::folded)
                    {
                        Ok(analysed) => Planned::Typed(Box::new(Typed {
                            schema: Arc::new(analysed.schema().as_arrow().clone()),
                            fingerprint: plan_fingerprint(
                                &plan.display_indent_schema().to_string(),
                            ),
                            lineage: column_lineage(&plan, &is_dataset),
                            divergences: semantics.divergences(&plan),
                        })),
                        Err(failed) => failed,
                    }
                }
            };
            if let (Some(key), Planned::Typed(typed)) = (&key, &planned) {
                let asked = asked.into_inner().unwrap_or_default();
                cache.put(key, typed, asked);
            }
            Some((i, planned, false))
        },
    )
    .into_iter()
    .flatten()
    .collect()
}

/// Stores a planned model's schema, or turns its planning error into a diagnostic.
fn record(
    i: usize,
    planned: Planned,
    models: &mut [Arc<CompiledModel>],
    workspace: &Workspace,
    ctx: &SessionContext,
    diagnostics: &mut Diagnostics,
) {
    let mut d = match planned {
        Planned::Typed(typed) => {
            let Typed {
                schema,
                fingerprint,
                lineage,
                divergences,
            } = *typed;
            for d in divergences {
                diagnostics.push(divergence_warning(&d, &models[i]));
            }
            register(ctx, models[i].name.as_str(), schema.clone());
            Arc::make_mut(&mut models[i]).schema = Some(ModelSchema::known(schema));
            Arc::make_mut(&mut models[i]).plan_fingerprint = Some(fingerprint);
            Arc::make_mut(&mut models[i]).column_lineage = Some(lineage);
            return;
        }
        Planned::Unplannable(e) => type_diagnostic(&e, &models[i]),
        Planned::Rejected(r) => rejection_diagnostic(&r, &models[i]),
    };
    if d.code == codes::UNKNOWN_FUNCTION {
        suggest_functions(&mut d, ctx);
    }
    // Baseline: what DataFusion cannot type is not the user's error.
    let baseline = workspace.models[i].config.analysis.value == AnalysisMode::Baseline;
    if baseline && matches!(d.code, codes::UNKNOWN_FUNCTION | codes::UNTYPEABLE) {
        d.severity = phlo_transform_core::Severity::Warning;
        d = d.with_note("analysis is `baseline`: the model's schema is unknown");
        Arc::make_mut(&mut models[i]).schema = Some(ModelSchema::Unknown {
            reason: d.message.clone(),
        });
    } else {
        Arc::make_mut(&mut models[i]).has_errors = true;
    }
    diagnostics.push(d);
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
fn unknown_input(
    models: &[Arc<CompiledModel>],
    i: usize,
    catalog: &CatalogSnapshot,
) -> Option<String> {
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

/// T012: a construct the local engine may compute differently from the target dialect.
fn divergence_warning(d: &Divergence, model: &CompiledModel) -> Diagnostic {
    let w = Diagnostic::warning(
        codes::DIALECT_DIFFERENCE,
        format!(
            "`{}` may differ from the target dialect on the local engine",
            d.construct
        ),
    )
    .in_file(&model.path)
    .with_help(d.reason.clone());
    let span = model.query().and_then(|q| {
        expression_span(
            &q,
            &d.anchors,
            &crate::analysis::Shape::Function(d.function.clone()),
        )
    });
    match span {
        Some(span) => w.with_span(span),
        None => w.at(1, 1),
    }
}

/// An analyzer rejection as a T diagnostic at the rejected expression.
fn rejection_diagnostic(r: &Rejection, model: &CompiledModel) -> Diagnostic {
    let d = Diagnostic::error(r.code, r.message.clone())
        .in_file(&model.path)
        .with_help(r.help.clone());
    let span = model
        .query()
        .and_then(|q| expression_span(&q, &r.anchors, &r.shape));
    match span {
        Some(span) => d.with_span(span),
        None => d.at(1, 1),
    }
}

/// A DataFusion planning error as a T diagnostic at the model's line and column.
fn type_diagnostic(e: &DataFusionError, model: &CompiledModel) -> Diagnostic {
    let text = e.strip_backtrace();
    let diag = e.diagnostic();
    if diag.is_none() {
        if let Some(name) = signature_failure(&text) {
            return signature_diagnostic(&name, model);
        }
    }
    let message = diag
        .map(|d| d.message.clone())
        .unwrap_or_else(|| first_line(&text));
    let code = crate::type_error::classify(e, &text, &message);
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
            // "possible column s.region" is a suggestion, shown once as "did you mean".
            match n.message.strip_prefix("possible column ") {
                Some(column) => d.suggestions.push(column.to_string()),
                None => d = d.with_note(n.message.clone()),
            }
        }
        helps.extend(dd.helps.iter().map(|h| h.message.clone()));
    }
    if diag.is_some() && first_line(&text) != d.message {
        if let Some(note) = engine_note(&first_line(&text), code) {
            d = d.with_note(note);
        }
    }
    let help = if helps.is_empty() {
        default_help(code).to_string()
    } else {
        helps.join("; ")
    };
    d.with_help(help)
}

/// The function a signature failure names. DataFusion reports an aggregate call whose
/// argument types match no signature only as text, with no span and no expression: the
/// name is the only handle to locate the call by.
fn signature_failure(text: &str) -> Option<String> {
    const PATTERNS: [(&str, &str); 4] = [
        ("Function '", "' failed to match any signature"),
        ("to satisfy a call to '", "' function"),
        ("Function '", "' user-defined coercion failed"),
        (
            "No function matches the given name and argument types '",
            "(",
        ),
    ];
    PATTERNS.iter().find_map(|(before, after)| {
        let start = text.find(before)? + before.len();
        let len = text[start..].find(after)?;
        let name = &text[start..start + len];
        (!name.is_empty() && !name.contains(char::is_whitespace)).then(|| name.to_string())
    })
}

/// T010 at the first call of `name`.
fn signature_diagnostic(name: &str, model: &CompiledModel) -> Diagnostic {
    let d = Diagnostic::error(
        codes::ARGUMENT_TYPES,
        format!("no signature of `{name}` accepts the types of its arguments"),
    )
    .in_file(&model.path)
    .with_help(format!("cast the arguments to types `{name}` accepts"));
    let span = model.query().and_then(|q| {
        expression_span(&q, &[], &crate::analysis::Shape::Function(name.to_string()))
    });
    match span {
        Some(span) => d.with_span(span),
        None => d.at(1, 1),
    }
}

/// DataFusion's own wording of an error, as a note when it adds to the message: without its
/// "Did you mean '…'?" (the suggestion is shown once, as "did you mean"), and for an unknown
/// column only when it lists the valid fields.
fn engine_note(line: &str, code: phlo_transform_core::Code) -> Option<String> {
    let line = match line.find(" Did you mean") {
        Some(at) => line[..at].trim_end(),
        None => line,
    };
    if code == codes::UNKNOWN_COLUMN && !line.contains("Valid fields") {
        return None;
    }
    Some(line.to_string())
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or(text).trim().to_string()
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
