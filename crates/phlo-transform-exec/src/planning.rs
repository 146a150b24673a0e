//! Planning against an environment (SPEC §36–40): the recorded state and the relations the
//! engine sees, read into the planner's inputs, then selection and the plan. Every front end
//! (command line, daemon, tests) plans through [`make_plan`].

use phlo_transform_adapter::{Adapter, Purpose};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::list::ListReport;
use phlo_transform_plan::{BlockedPlan, CompileErrorBlocking, Plan, PlanInputs, SelectorSpec};
use phlo_transform_state::{MaterializedVersion, StateStore};
use std::collections::{BTreeSet, HashMap, HashSet};

use crate::environments::binding::Inherited;
use crate::environments::{Binding, MAIN_ENVIRONMENT};
use crate::target::CommandTarget;

/// The recorded state of the environment and the relations that exist, as the planner reads
/// them.
pub struct StateView {
    environment: String,
    materialized: HashMap<String, MaterializedVersion>,
    existing: HashSet<String>,
    /// Strategy labels of the existing incremental tables, by model id.
    strategies: HashMap<String, String>,
    /// Freshness of the sources with a requirement.
    freshness: Vec<phlo_transform_plan::SourceFreshness>,
    /// Records read from another environment's tables, with their identity proofs.
    adoptable: HashMap<String, phlo_transform_plan::Adoptable>,
    /// The output identity each existing relation with an identity on record reports now.
    identities: HashMap<String, String>,
}

impl StateView {
    pub fn inputs<'a>(
        &'a self,
        engine: &'a dyn Adapter,
        relation_of: &'a dyn Fn(usize) -> String,
    ) -> PlanInputs<'a> {
        PlanInputs {
            environment: &self.environment,
            adapter: engine.name(),
            materialized: &self.materialized,
            existing_relations: &self.existing,
            relation_of,
            built_strategies: &self.strategies,
            freshness: &self.freshness,
            adoptable: &self.adoptable,
            output_identities: &self.identities,
        }
    }

    /// The state-derived `changed` set.
    pub fn changed(&self, c: &Compilation, engine: &dyn Adapter) -> BTreeSet<usize> {
        let relation_of = |i: usize| engine.model_relation(c.models[i].name.as_str()).to_string();
        phlo_transform_plan::changed_models(c, &self.inputs(engine, &relation_of))
    }
}

pub async fn state_view(
    c: &Compilation,
    engine: &dyn Adapter,
    store: &dyn StateStore,
    environment: &str,
) -> Result<StateView, Diagnostic> {
    state_view_with(c, engine, store, environment, Inherited::default()).await
}

/// [`state_view`] of the environment `binding` names, with what it inherits.
pub async fn state_view_bound(
    c: &Compilation,
    binding: &Binding,
    engine: &dyn Adapter,
    store: &dyn StateStore,
) -> Result<StateView, Diagnostic> {
    state_view_with(c, engine, store, &binding.environment, binding.inherited()).await
}

/// [`state_view`] of an environment that also reads `inherited` records (another
/// environment's tables): its own records come first.
async fn state_view_with(
    c: &Compilation,
    engine: &dyn Adapter,
    store: &dyn StateStore,
    environment: &str,
    inherited: Inherited,
) -> Result<StateView, Diagnostic> {
    let mut materialized = store.materializations(environment).await.map_err(|e| {
        Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
            .with_help("the state database may be damaged; `phlo-transform clean --all` resets it")
    })?;
    let mut adoptable = inherited.adoptable;
    adoptable.retain(|id, _| !materialized.contains_key(id));
    for (id, record) in inherited.records {
        if adoptable.contains_key(&id) {
            materialized.insert(id, record);
        }
    }
    let unavailable = |e: phlo_transform_adapter::AdapterError| {
        Diagnostic::error(e.code, e.message)
            .with_help("check the adapter's configuration ([adapter] in phlo.toml) and that the warehouse is reachable")
    };
    let relations: Vec<_> = c
        .models
        .iter()
        .map(|m| engine.model_relation(m.name.as_str()))
        .collect();
    let found = engine
        .introspect_relations(&relations)
        .await
        .map_err(unavailable)?;
    let mut existing = HashSet::new();
    let mut strategies = HashMap::new();
    for ((m, relation), info) in c.models.iter().zip(&relations).zip(found) {
        use phlo_transform_adapter::RelationKind;
        use phlo_transform_project::Materialization;
        // A relation of the other kind (a view where a table is wanted) is missing.
        let recorded_strategy = info.as_ref().and_then(|i| i.strategy.clone());
        let exists = match (m.materialization, info.map(|i| i.kind)) {
            (Materialization::Ephemeral, _) => true,
            (Materialization::View, Some(kind)) => kind == RelationKind::View,
            (_, Some(kind)) => kind == RelationKind::Table,
            (_, None) => false,
        };
        if !exists {
            continue;
        }
        existing.insert(m.id.clone());
        if m.materialization == phlo_transform_project::Materialization::Incremental {
            let label = match recorded_strategy {
                Some(label) => Some(label),
                None => engine.built_strategy(relation).await.map_err(unavailable)?,
            };
            if let Some(label) = label {
                strategies.insert(m.id.clone(), label);
            }
        }
    }
    let identities = live_identities(c, engine, &materialized, &adoptable, &existing, &relations)
        .await
        .map_err(unavailable)?;
    let now = chrono::Utc::now();
    let mut freshness = Vec::new();
    for source in &c.workspace.sources {
        let Some(f) = &source.freshness else {
            continue;
        };
        let latest = engine
            .source_state(source, f.timestamp_column.as_deref())
            .await
            .map(|s| s.latest_timestamp)
            .map_err(|e| e.message);
        freshness.extend(phlo_transform_plan::evaluate_freshness(source, latest, now));
    }
    Ok(StateView {
        environment: environment.to_string(),
        materialized,
        existing,
        strategies,
        freshness,
        adoptable,
        identities,
    })
}

/// The output identity the relation of each model reports now, for the existing relations
/// whose own record (not one inherited from another environment) carries an identity from
/// this adapter: what `output_drift` compares (SPEC §39).
async fn live_identities(
    c: &Compilation,
    engine: &dyn Adapter,
    materialized: &HashMap<String, MaterializedVersion>,
    adoptable: &HashMap<String, phlo_transform_plan::Adoptable>,
    existing: &HashSet<String>,
    relations: &[phlo_transform_adapter::Relation],
) -> Result<HashMap<String, String>, phlo_transform_adapter::AdapterError> {
    let mut identities = HashMap::new();
    for (m, relation) in c.models.iter().zip(relations) {
        let Some(record) = materialized.get(&m.id) else {
            continue;
        };
        if record.output_identity.is_none()
            || record.adapter.as_deref() != Some(engine.name())
            || adoptable.contains_key(&m.id)
            || !existing.contains(&m.id)
        {
            continue;
        }
        if let Some(identity) = engine.output_identity(relation).await? {
            identities.insert(m.id.clone(), identity);
        }
    }
    Ok(identities)
}

/// Selects with `spec` and plans the selection against the recorded state and the relations
/// the engine sees.
pub async fn make_plan(
    c: &Compilation,
    environment: &str,
    engine: &dyn Adapter,
    store: &dyn StateStore,
    spec: &SelectorSpec,
) -> Result<Plan, Vec<Diagnostic>> {
    let view = state_view(c, engine, store, environment)
        .await
        .map_err(|d| vec![d])?;
    plan_with(c, engine, &view, spec)
}

/// [`make_plan`] in the environment `binding` names: its records, plus the records its
/// pointers inherit from other environments, adopted only with an identity proof.
pub async fn make_plan_bound(
    c: &Compilation,
    binding: &Binding,
    engine: &dyn Adapter,
    store: &dyn StateStore,
    spec: &SelectorSpec,
) -> Result<Plan, Vec<Diagnostic>> {
    let view = state_view_with(c, engine, store, &binding.environment, binding.inherited())
        .await
        .map_err(|d| vec![d])?;
    plan_with(c, engine, &view, spec)
}

/// Plans in `binding`'s environment when there is one, else in the one environment of an
/// adapter without environments (recorded as the main environment's).
pub async fn make_plan_in(
    c: &Compilation,
    binding: Option<&Binding>,
    engine: &dyn Adapter,
    store: &dyn StateStore,
    spec: &SelectorSpec,
) -> Result<Plan, Vec<Diagnostic>> {
    match binding {
        Some(b) => make_plan_bound(c, b, engine, store, spec).await,
        None => make_plan(c, MAIN_ENVIRONMENT, engine, store, spec).await,
    }
}

/// [`make_plan_in`] for a report of a change (`review`): BREAKING schema changes are
/// reported, never refused (`phlo_transform_plan::plan_reporting`).
pub async fn make_plan_reporting_in(
    c: &Compilation,
    binding: Option<&Binding>,
    engine: &dyn Adapter,
    store: &dyn StateStore,
    spec: &SelectorSpec,
) -> Result<Plan, Vec<Diagnostic>> {
    let view = state_view_in(c, binding, engine, store)
        .await
        .map_err(|d| vec![d])?;
    select_and_plan(c, engine, &view, spec, phlo_transform_plan::plan_reporting)
}

/// [`state_view`] in `binding`'s environment when there is one, else in the adapter's one.
pub async fn state_view_in(
    c: &Compilation,
    binding: Option<&Binding>,
    engine: &dyn Adapter,
    store: &dyn StateStore,
) -> Result<StateView, Diagnostic> {
    match binding {
        Some(b) => state_view_bound(c, b, engine, store).await,
        None => state_view(c, engine, store, MAIN_ENVIRONMENT).await,
    }
}

/// What `list` shows of `spec` where `target` runs: every model without a selection, else the
/// models it selects. Only a selector that reads state (`state:modified`, …) opens the state
/// (read-only) and the engine; nothing is planned or written.
pub async fn list<'c>(
    c: &'c Compilation,
    target: &CommandTarget<'_>,
    spec: &SelectorSpec,
) -> Result<ListReport<'c>, Vec<Diagnostic>> {
    if *spec == SelectorSpec::default() {
        return Ok(ListReport::new(c, None));
    }
    let state = if spec.reads_state() {
        let store = target.open_state_read_only().await.map_err(|d| vec![d])?;
        let binding = target.bind(c, store.clone()).await.map_err(|d| vec![d])?;
        let (engine, _) = target
            .open_engine(c, binding.as_ref(), Purpose::Plan)
            .await
            .map_err(|d| vec![d])?;
        let view = state_view_in(c, binding.as_ref(), engine.as_ref(), store.as_ref())
            .await
            .map_err(|d| vec![d])?;
        Some((view, engine))
    } else {
        None
    };
    let changed = || match &state {
        Some((view, engine)) => view.changed(c, engine.as_ref()),
        None => BTreeSet::new(),
    };
    let selection = phlo_transform_plan::select(c, spec, &changed)?;
    Ok(ListReport::new(c, Some(selection)))
}

/// What compile errors leave of a run of `spec` over `c` where `target` runs (SPEC §63):
/// [`CompileErrorBlocking::None`] for a compilation without errors. Judged on the plan the
/// run would make: in the environment `--ref` binds, on the engine `--adapter` chooses
/// (opened for planning only), so a selector that reads state selects what the run would.
pub async fn compile_error_blocking(
    c: &Compilation,
    target: &CommandTarget<'_>,
    spec: &SelectorSpec,
) -> Result<CompileErrorBlocking, Vec<Diagnostic>> {
    if !c.has_errors() {
        return Ok(CompileErrorBlocking::None);
    }
    let store = target.open_state().await.map_err(|d| vec![d])?;
    let binding = target.bind(c, store.clone()).await.map_err(|d| vec![d])?;
    // The run opens the engine again and shows what it opened without.
    let (engine, _) = target
        .open_engine(c, binding.as_ref(), Purpose::Plan)
        .await
        .map_err(|d| vec![d])?;
    let p = make_plan_in(c, binding.as_ref(), engine.as_ref(), store.as_ref(), spec).await?;
    Ok(phlo_transform_plan::compile_error_blocking(&p))
}

/// What `plan` reports over compile errors (SPEC §51): every model's row and the schema
/// changes against what `binding`'s environment recorded (without one, the main
/// environment's), so a column removal that breaks a reader is named before anything runs.
/// Without a state (`None`: it cannot be read, or the environment cannot be bound) nothing
/// is recorded.
pub async fn blocked_plan<'c>(
    c: &'c Compilation,
    binding: Option<&Binding>,
    store: Option<&dyn StateStore>,
) -> BlockedPlan<'c> {
    let recorded = match (store, binding) {
        (None, _) => None,
        (Some(store), Some(b)) => b.materializations(store).await.ok(),
        (Some(store), None) => store.materializations(MAIN_ENVIRONMENT).await.ok(),
    };
    let schema_changes = recorded
        .map(|recorded| {
            phlo_transform_plan::schema_change::schema_changes(
                c,
                &recorded,
                &c.workspace.config.schema,
            )
        })
        .unwrap_or_default();
    BlockedPlan {
        models: c.model_rows(),
        schema_changes,
    }
}

/// How a selection is planned: `phlo_transform_plan::plan`, or `plan_reporting`.
type Planner =
    fn(&Compilation, &PlanInputs<'_>, &phlo_transform_plan::Selection) -> Result<Plan, Diagnostic>;

fn plan_with(
    c: &Compilation,
    engine: &dyn Adapter,
    view: &StateView,
    spec: &SelectorSpec,
) -> Result<Plan, Vec<Diagnostic>> {
    select_and_plan(c, engine, view, spec, phlo_transform_plan::plan)
}

fn select_and_plan(
    c: &Compilation,
    engine: &dyn Adapter,
    view: &StateView,
    spec: &SelectorSpec,
    planner: Planner,
) -> Result<Plan, Vec<Diagnostic>> {
    let relation_of = |i: usize| engine.model_relation(c.models[i].name.as_str()).to_string();
    let inputs = view.inputs(engine, &relation_of);
    let changed = || phlo_transform_plan::changed_models(c, &inputs);
    let selection = phlo_transform_plan::select(c, spec, &changed)?;
    planner(c, &inputs, &selection).map_err(|d| vec![d])
}
