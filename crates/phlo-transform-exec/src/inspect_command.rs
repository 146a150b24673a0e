//! `inspect <name> [--config] [--sql]` (SPEC §78): which report a name gets, and what an
//! unreachable warehouse or an unreadable state costs it. Every front end calls [`inspect`]
//! and renders the [`Inspected`] report.
//!
//! Inspecting is for looking around, so it degrades instead of failing: a warehouse that
//! cannot be reached only costs the model's relation, and a state that cannot be read shows
//! as nothing recorded. `--sql` is the exception: the statements are the adapter's, so
//! without an engine there is nothing to show, and a model that is never sent to a warehouse
//! (ephemeral, or with compile errors) is refused.

use phlo_transform_adapter::{Adapter, AdapterError, Purpose};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::Materialization;

use phlo_transform_state::StateStore;
use std::sync::Arc;

use crate::environments::{Binding, MAIN_ENVIRONMENT};
use crate::inspect::{ModelInspection, ModelSql, SourceInspection};
use crate::target::CommandTarget;

/// What `inspect` was asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct InspectOptions {
    /// `--config`: the effective configuration and where each value came from.
    pub config: bool,
    /// `--sql`: the statements the adapter sends to materialise the model.
    pub sql: bool,
}

/// The report `inspect` shows.
pub enum Inspected<'c> {
    Model(Box<ModelInspection<'c>>),
    Source(SourceInspection<'c>),
    Sql(ModelSql<'c>),
}

impl Inspected<'_> {
    /// The diagnostics that belong with the report: a model's are those of its file, a
    /// source's those that name it; the SQL has none.
    pub fn diagnostics(&self, c: &Compilation) -> Vec<Diagnostic> {
        match self {
            Inspected::Model(m) => c
                .diagnostics
                .iter()
                .filter(|d| d.file.as_deref() == Some(m.path))
                .cloned()
                .collect(),
            Inspected::Source(s) => {
                let named = format!("`{}`", s.name);
                c.diagnostics
                    .iter()
                    .filter(|d| d.message.contains(&named))
                    .cloned()
                    .collect()
            }
            Inspected::Sql(_) => Vec::new(),
        }
    }
}

/// What inspecting a model opens where a target runs: the state (when it can be read), the
/// environment's binding, and the engine (when it opens), which only names relations. Opened
/// once, it serves any number of inspections of one compilation: the daemon keeps one per
/// generation, since naming follows the configuration and every record is read afresh from
/// the store at each inspection.
pub struct InspectContext {
    store: Option<Arc<dyn StateStore>>,
    binding: Option<Binding>,
    engine: Result<Arc<dyn Adapter>, Diagnostic>,
}

impl InspectContext {
    /// Opens what [`inspect_with`] reads for `c` where `target` runs. Only a binding that
    /// cannot be made fails it; an unreadable state or an engine that does not open degrade.
    pub async fn open(
        c: &Compilation,
        target: &CommandTarget<'_>,
    ) -> Result<InspectContext, Diagnostic> {
        // Naming needs the adapter, and the adapter's environment needs the state.
        let store = target.open_state_read_only().await.ok();
        let binding = match &store {
            Some(store) => target.bind(c, store.clone()).await?,
            None => None,
        };
        let engine = target
            .open_engine(c, binding.as_ref(), Purpose::Plan)
            .await
            .map(|(engine, _)| engine);
        Ok(InspectContext {
            store,
            binding,
            engine,
        })
    }
}

/// Inspects the model or source `name` of `c` where `target` runs (see the module's
/// documentation for what degrades and what fails). A name that is no model's but a source's
/// shows the source; neither is P008 (or L006 for a name several models end with).
pub async fn inspect<'c>(
    c: &'c Compilation,
    target: &CommandTarget<'_>,
    name: &str,
    options: InspectOptions,
) -> Result<Inspected<'c>, Diagnostic> {
    if let Err(not_a_model) = c.resolve_model(name) {
        // A source, or P008: nothing to open.
        return inspect_source(c, name, not_a_model);
    }
    let opened = InspectContext::open(c, target).await?;
    inspect_with(c, &opened, name, options).await
}

/// The source `name`, else `not_a_model` (why it names no model).
fn inspect_source<'c>(
    c: &'c Compilation,
    name: &str,
    not_a_model: Diagnostic,
) -> Result<Inspected<'c>, Diagnostic> {
    SourceInspection::new(c, name)
        .map(Inspected::Source)
        .ok_or(not_a_model)
}

/// [`inspect`] with what it opens already opened.
pub async fn inspect_with<'c>(
    c: &'c Compilation,
    opened: &InspectContext,
    name: &str,
    options: InspectOptions,
) -> Result<Inspected<'c>, Diagnostic> {
    let i = match c.resolve_model(name) {
        Ok(i) => i,
        Err(not_a_model) => return inspect_source(c, name, not_a_model),
    };
    let m = &c.models[i];
    let engine = match (&opened.engine, options.sql) {
        (Ok(engine), true) => return model_sql(c, i, engine.as_ref()).map(Inspected::Sql),
        (Ok(engine), false) => Some(engine),
        (Err(d), true) => return Err(d.clone()),
        (Err(_), false) => None,
    };
    let recorded = match &opened.store {
        Some(store) => crate::explain::recorded(
            opened.binding.as_ref(),
            MAIN_ENVIRONMENT,
            store.as_ref(),
            &m.id,
        )
        .await
        .ok()
        .flatten(),
        None => None,
    };
    let adapter = engine.map(|e| (e.name().to_string(), e.model_relation(m.name.as_str())));
    let report = ModelInspection::new(c, i, adapter, recorded.as_ref(), options.config);
    Ok(Inspected::Model(Box::new(report)))
}

/// The statements `engine` sends to materialise model `i` (as for a first build; an
/// incremental model shows its incremental statements). A model never sent to a warehouse is
/// refused with P008.
pub fn model_sql<'c>(
    c: &'c Compilation,
    i: usize,
    engine: &dyn Adapter,
) -> Result<ModelSql<'c>, Diagnostic> {
    let m = &c.models[i];
    if m.materialization == Materialization::Ephemeral || m.has_errors {
        let why = if m.has_errors {
            "it has compile errors"
        } else {
            "it is ephemeral: its SQL is inlined into the models that read it"
        };
        return Err(Diagnostic::error(
            codes::UNKNOWN_MODEL,
            format!("`{}` is never sent to the warehouse: {why}", m.name),
        )
        .with_help("`phlo-transform check` lists the errors; inspect a model that reads it"));
    }
    let statements = crate::model_job(c, i, engine, false)
        .ok_or_else(|| {
            AdapterError::new(
                codes::QUERY_FAILED,
                "the model's executable SQL could not be built",
            )
        })
        .and_then(|job| engine.statements(&job))
        .map_err(|e| Diagnostic::error(e.code, e.message))?;
    Ok(ModelSql {
        name: m.name.as_str(),
        adapter: engine.name().to_string(),
        relation: engine.model_relation(m.name.as_str()).to_string(),
        statements,
    })
}
