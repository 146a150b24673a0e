//! Planning (SPEC §36–40): for every materialised model, compare the desired version with the
//! version recorded for the environment and decide build / skip, with structured reasons
//! whose `kind` codes are stable. Ephemeral models are inlined, never planned. Only the models
//! of a [`Selection`] are planned (SPEC §43, §82); the models it reads are planned as
//! dependencies, built only when missing.

pub mod as_of;
mod blocked;
mod freshness;
mod git;
mod git_command;
pub mod git_tree;
pub mod lineage_scope;
pub mod list;
mod reasons;
mod rewrite;
pub mod schema_change;
mod selector;
mod stored;

pub use as_of::Advanced;
pub use blocked::BlockedPlan;
pub use freshness::{evaluate as evaluate_freshness, FreshnessStatus, SourceFreshness};
pub use git::{ChangedModel, ChangedPath, GitChanges};
pub use reasons::{Reason, ReasonKind};
pub use rewrite::{compile_error_blocking, for_tests, with_full_refresh, CompileErrorBlocking};
pub use selector::{closure, select, Membership, Selection, SelectorSpec, TermMatch};
pub use stored::{load_stored, read_stored, staleness, store_plan};

use phlo_transform_compiler::{Compilation, SqlChange};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Fingerprint};
use phlo_transform_project::config::BreakingChanges;
use phlo_transform_project::{strategy_label, Materialization};
use phlo_transform_state::MaterializedVersion;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The format of stored plans. Raise it when [`Plan`]'s meaning changes, so that `apply`
/// refuses a plan written by another version instead of misreading it.
pub const PLAN_FORMAT: u32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Build,
    Skip,
    Cached,
    Blocked,
}

impl Decision {
    pub fn label(self) -> &'static str {
        match self {
            Decision::Build => "BUILD",
            Decision::Skip => "SKIP",
            Decision::Cached => "CACHED",
            Decision::Blocked => "BLOCKED",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlannedModel {
    pub name: String,
    pub id: String,
    pub path: String,
    pub decision: Decision,
    pub materialization: Materialization,
    /// Physical relation the model is written to.
    pub relation: String,
    pub version: Option<String>,
    pub previous_version: Option<String>,
    pub reasons: Vec<Reason>,
    /// How the SQL changed since the recorded version (SPEC §99): none, text, ast, semantic.
    pub sql_change: Option<SqlChange>,
    /// Planned models this one waits for (ephemeral models looked through).
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub membership: Membership,
    /// Incremental models: rebuilt in full rather than incrementally (strategy change,
    /// `--full-refresh`). A missing table is always built in full.
    #[serde(default)]
    pub full_rebuild: bool,
    /// What the model's recorded materialisation is current as of (freshness clocks): the
    /// newest source state its data reflects; `None` when unknown or never built. A run that
    /// builds it records the new instant (`phlo_transform_plan::as_of::Clocks`).
    #[serde(default)]
    pub current_as_of: Option<as_of::AsOf>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlannedTest {
    pub name: String,
    pub targets: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PlanSummary {
    pub build: usize,
    pub skip: usize,
    pub cached: usize,
    pub blocked: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// The stored plan's format ([`PLAN_FORMAT`]); a plan stored in another format is refused
    /// by [`read_stored`] with a clear error instead of being misread.
    #[serde(default)]
    pub format: u32,
    pub plan_id: String,
    pub created_at: String,
    pub environment: String,
    pub adapter: String,
    pub summary: PlanSummary,
    /// In execution (topological) order.
    pub models: Vec<PlannedModel>,
    pub tests: Vec<PlannedTest>,
    /// Ephemeral models, inlined into their dependents.
    pub ephemeral: Vec<String>,
    #[serde(default)]
    pub selection: Selection,
    #[serde(default)]
    pub warnings: Vec<PlanWarning>,
    /// Freshness of the sources that declare a requirement (SPEC §34).
    #[serde(default)]
    pub sources: Vec<SourceFreshness>,
    /// Column changes of the models this plan builds, against what is materialised, with
    /// their downstream impact (SPEC §49–51).
    #[serde(default)]
    pub schema_changes: Vec<schema_change::SchemaChange>,
}

/// A problem the plan works around (an excluded dependency planned against as it is).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanWarning {
    pub code: String,
    pub message: String,
}

/// What the planner needs to know about the environment.
pub struct PlanInputs<'a> {
    pub environment: &'a str,
    pub adapter: &'a str,
    /// Recorded materialisations of the environment, by model id.
    pub materialized: &'a HashMap<String, MaterializedVersion>,
    /// Model ids whose physical relation exists right now.
    pub existing_relations: &'a HashSet<String>,
    /// Physical relation name of a model, as the adapter names it.
    pub relation_of: &'a dyn Fn(usize) -> String,
    /// The strategy label (`strategy_label`) each existing incremental table was built
    /// with, by model id, as the adapter reads it from the table.
    pub built_strategies: &'a HashMap<String, String>,
    /// Freshness of the sources that declare a requirement (SPEC §34).
    pub freshness: &'a [SourceFreshness],
    /// Records of `materialized` that another environment wrote and this one reads (a
    /// virtual environment's base tables), by model id: adopted only with an identity proof.
    pub adoptable: &'a HashMap<String, Adoptable>,
    /// The output identity each existing relation reports now, by model id, for the models
    /// whose own record carries one: another identity than the recorded one is
    /// `output_drift` (SPEC §39).
    pub output_identities: &'a HashMap<String, String>,
}

/// A materialisation this environment reads from another environment (SPEC §39).
#[derive(Clone, Debug)]
pub struct Adoptable {
    /// The environment whose run wrote it.
    pub environment: String,
    /// The proof that the physical relation still is what was recorded (what was compared),
    /// or why it is not.
    pub identity: Result<String, String>,
}

/// The state-derived `changed` set: materialised models the planner would build (desired
/// version differs from the recorded one, or never materialised, or the relation is missing).
pub fn changed_models(c: &Compilation, inputs: &PlanInputs<'_>) -> BTreeSet<usize> {
    let decided = HashMap::new();
    c.order
        .iter()
        .copied()
        .filter(|&i| {
            let m = &c.models[i];
            m.materialization != Materialization::Ephemeral
                && decide(c, i, inputs.materialized.get(&m.id), inputs, &decided).0
                    == Decision::Build
        })
        .collect()
}

/// Plans the models of `selection`. Rejected when an excluded dependency was never
/// materialised (nothing could stand in for it), and under `[schema] breaking_changes =
/// "error"` when it has a BREAKING schema change (L011).
pub fn plan(
    c: &Compilation,
    inputs: &PlanInputs<'_>,
    selection: &Selection,
) -> Result<Plan, Diagnostic> {
    let p = plan_reporting(c, inputs, selection)?;
    if c.workspace.config.schema.breaking_changes == BreakingChanges::Error {
        if let Some(d) = schema_change::breaking_error(&p.schema_changes) {
            return Err(d);
        }
    }
    Ok(p)
}

/// [`plan`] that reports BREAKING schema changes without refusing them whatever
/// `[schema] breaking_changes` says: for a report of a change (`review`), never a run.
pub fn plan_reporting(
    c: &Compilation,
    inputs: &PlanInputs<'_>,
    selection: &Selection,
) -> Result<Plan, Diagnostic> {
    let mut decided: HashMap<usize, Decision> = HashMap::new();
    let mut models = Vec::new();
    let mut ephemeral = Vec::new();
    let mut warnings = Vec::new();
    let mut missing_excluded = Vec::new();
    for &i in &c.order {
        let m = &c.models[i];
        let Some(membership) = selection.membership(i) else {
            continue;
        };
        if m.materialization == Materialization::Ephemeral {
            ephemeral.push(m.name.to_string());
            continue;
        }
        let recorded = inputs.materialized.get(&m.id);
        let (decision, reasons) = if selection.is_excluded(i) {
            if recorded.is_none() || !inputs.existing_relations.contains(&m.id) {
                missing_excluded.push(m.name.to_string());
                continue;
            }
            warnings.push(PlanWarning {
                code: codes::EXCLUDED_DEPENDENCY.0.to_string(),
                message: format!(
                    "`{}` is excluded but the selection reads it: its existing materialisation is used",
                    m.name
                ),
            });
            (
                Decision::Skip,
                vec![Reason::new(
                    ReasonKind::SelectedDependency,
                    "excluded (--exclude): the selection reads its existing materialisation",
                    None,
                )],
            )
        } else {
            let (decision, reasons) = decide(c, i, recorded, inputs, &decided);
            let (decision, reasons) = match (inputs.adoptable.get(&m.id), recorded) {
                (Some(from), Some(rec)) => adopt(c, i, rec, from, inputs, decision, reasons),
                _ => (decision, reasons),
            };
            let (decision, reasons) =
                for_membership(membership, selection.spec.force, decision, reasons);
            freshness_gate(c, i, inputs.freshness, &decided, decision, reasons)
        };
        let sql_change = match (recorded, &m.version) {
            (Some(r), Some(v)) => Some(SqlChange::classify(
                r.text_hash.as_deref(),
                &r.sql_hash,
                r.plan_hash.as_deref(),
                v,
            )),
            _ => None,
        };
        let (reasons, full_rebuild) = incremental_safety(c, i, inputs, decision, reasons);
        decided.insert(i, decision);
        models.push(PlannedModel {
            name: m.name.to_string(),
            id: m.id.clone(),
            path: m.path.clone(),
            decision,
            materialization: m.materialization,
            relation: (inputs.relation_of)(i),
            version: m.version.as_ref().map(|v| v.version.clone()),
            previous_version: recorded.map(|r| r.version.clone()),
            reasons,
            sql_change,
            depends_on: materialised_upstream(c, i)
                .into_iter()
                .map(|u| c.models[u].name.to_string())
                .collect(),
            membership,
            full_rebuild,
            current_as_of: recorded.and_then(|r| r.current_as_of),
        });
    }
    if !missing_excluded.is_empty() {
        return Err(Diagnostic::error(
            codes::EXCLUDED_DEPENDENCY_MISSING,
            format!(
                "the selection reads excluded model(s) that were never materialised: {}",
                missing_excluded.join(", ")
            ),
        )
        .with_help("stop excluding them, or build them first; an excluded model is never built"));
    }
    let planned: HashSet<usize> = decided.keys().copied().collect();
    let acted: HashSet<usize> = selection.acted_on().collect();
    let tests = c
        .tests
        .iter()
        .filter(|t| {
            t.targets.iter().any(|i| acted.contains(i))
                && t.targets.iter().all(|i| {
                    planned.contains(i)
                        || c.models[*i].materialization == Materialization::Ephemeral
                })
        })
        .map(|t| PlannedTest {
            name: t.name.clone(),
            targets: t
                .targets
                .iter()
                .map(|&i| c.models[i].name.to_string())
                .collect(),
        })
        .collect();
    let mut summary = PlanSummary::default();
    for m in &models {
        match m.decision {
            Decision::Build => summary.build += 1,
            Decision::Skip => summary.skip += 1,
            Decision::Cached => summary.cached += 1,
            Decision::Blocked => summary.blocked += 1,
        }
    }
    let plan_id = plan_id(inputs, &models);
    let building: HashSet<&str> = models
        .iter()
        .filter(|m| m.decision == Decision::Build)
        .map(|m| m.name.as_str())
        .collect();
    let policy = &c.workspace.config.schema;
    let schema_changes: Vec<_> = schema_change::schema_changes(c, inputs.materialized, policy)
        .into_iter()
        .filter(|s| building.contains(s.model.as_str()))
        .collect();
    Ok(Plan {
        format: PLAN_FORMAT,
        plan_id,
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        environment: inputs.environment.to_string(),
        adapter: inputs.adapter.to_string(),
        summary,
        models,
        tests,
        ephemeral,
        selection: selection.clone(),
        warnings,
        sources: inputs.freshness.to_vec(),
        schema_changes,
    })
}

/// The plan id: a fingerprint of what the plan would do, over stable labels only (never a
/// `Debug` rendering), so the same decisions give the same id across releases.
fn plan_id(inputs: &PlanInputs<'_>, models: &[PlannedModel]) -> String {
    let mut f = Fingerprint::new("phlo-transform/plan/2");
    f.field("environment", inputs.environment)
        .field("adapter", inputs.adapter);
    for m in models {
        f.field("model", &m.name)
            .field("membership", m.membership.label())
            .field("decision", m.decision.label())
            .field("version", m.version.as_deref().unwrap_or("-"))
            .field("previous", m.previous_version.as_deref().unwrap_or("-"));
    }
    for s in inputs.freshness {
        f.field("source", &s.source)
            .field("freshness", s.status.label());
    }
    f.finish()[..16].to_string()
}

/// Adjusts the state decision of a model to how it belongs to the selection: `--force`
/// rebuilds unchanged selected models; dependencies are built only when missing.
fn for_membership(
    membership: Membership,
    force: bool,
    decision: Decision,
    mut reasons: Vec<Reason>,
) -> (Decision, Vec<Reason>) {
    match (membership, decision) {
        (Membership::Selected | Membership::Expanded, Decision::Skip) if force => (
            Decision::Build,
            vec![Reason::new(
                ReasonKind::Forced,
                "rebuilt on request (--force); otherwise unchanged",
                None,
            )],
        ),
        (Membership::Dependency, Decision::Build) => {
            let missing = reasons
                .first()
                .is_some_and(|r| r.kind == ReasonKind::MissingRelation);
            let (decision, detail) = if missing {
                (
                    Decision::Build,
                    "not selected, but the selection reads it and it is missing: built",
                )
            } else {
                (Decision::Skip, "not selected: the selection reads its existing materialisation, which is out of date")
            };
            reasons.insert(0, Reason::new(ReasonKind::SelectedDependency, detail, None));
            (decision, reasons)
        }
        (Membership::Dependency, Decision::Skip) => {
            reasons.insert(
                0,
                Reason::new(
                    ReasonKind::SelectedDependency,
                    "not selected: the selection reads its existing materialisation",
                    None,
                ),
            );
            (decision, reasons)
        }
        _ => (decision, reasons),
    }
}

/// SPEC §29: an incremental model about to build on a table built with another strategy or
/// key is rebuilt in full, with an `incremental_change` reason first.
fn incremental_safety(
    c: &Compilation,
    i: usize,
    inputs: &PlanInputs<'_>,
    decision: Decision,
    mut reasons: Vec<Reason>,
) -> (Vec<Reason>, bool) {
    let m = &c.models[i];
    if decision != Decision::Build
        || m.materialization != Materialization::Incremental
        || !inputs.existing_relations.contains(&m.id)
    {
        return (reasons, false);
    }
    // Rows written behind the run's back are not the model's: the table is built again.
    if reasons.iter().any(|r| r.kind == ReasonKind::OutputDrift) {
        return (reasons, true);
    }
    let config = c.config(i);
    let desired = strategy_label(config.incremental.value.as_ref(), &config.key.value);
    match inputs.built_strategies.get(&m.id) {
        Some(built) if *built == desired => (reasons, false),
        built => {
            let old = built.map_or("none recorded", String::as_str);
            reasons.insert(
                0,
                Reason::new(
                    ReasonKind::IncrementalChange,
                    format!(
                        "incremental strategy changed: old: {old}, new: {desired} — FULL REBUILD"
                    ),
                    None,
                ),
            );
            (reasons, true)
        }
    }
}

/// SPEC §34: a model about to build on a source that blocks (stale under
/// `freshness_policy = "block"`), or on a model blocked for that reason, is BLOCKED.
fn freshness_gate(
    c: &Compilation,
    i: usize,
    freshness: &[SourceFreshness],
    decided: &HashMap<usize, Decision>,
    decision: Decision,
    reasons: Vec<Reason>,
) -> (Decision, Vec<Reason>) {
    if decision != Decision::Build {
        return (decision, reasons);
    }
    let mut blocking: Vec<Reason> = c.models[i]
        .sources
        .iter()
        .filter_map(|s| freshness.iter().find(|f| &f.source == s && f.blocks()))
        .map(|f| {
            Reason::new(
                ReasonKind::SourceStale,
                format!(
                    "source {} is not fresh ({}) and its policy is block",
                    f.source,
                    f.describe()
                ),
                Some(f.source.clone()),
            )
        })
        .collect();
    if blocking.is_empty() && !freshness.iter().any(SourceFreshness::blocks) {
        return (decision, reasons);
    }
    for u in materialised_upstream(c, i) {
        if decided.get(&u) == Some(&Decision::Blocked) {
            blocking.push(Reason::new(
                ReasonKind::SourceStale,
                format!("upstream {} is blocked", c.models[u].name),
                Some(c.models[u].name.to_string()),
            ));
        }
    }
    if blocking.is_empty() {
        (decision, reasons)
    } else {
        (Decision::Blocked, blocking)
    }
}

/// Upstream models that are materialised, looking through ephemeral models (nested too).
pub fn materialised_upstream(c: &Compilation, i: usize) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let mut stack = c.models[i].upstream.clone();
    let mut seen = HashSet::new();
    while let Some(u) = stack.pop() {
        if !seen.insert(u) {
            continue;
        }
        if c.models[u].materialization == Materialization::Ephemeral {
            stack.extend(c.models[u].upstream.iter().copied());
        } else {
            out.insert(u);
        }
    }
    out
}

/// Why a model has no version: its own compile error (code, place and message), an upstream
/// model's, or a source that cannot be read. The first cause found is given; `check` lists
/// them all.
fn why_unversioned(c: &Compilation, i: usize) -> Reason {
    let m = &c.models[i];
    let reason = |detail: String, subject: Option<String>| {
        Reason::new(ReasonKind::UnknownState, detail, subject)
    };
    if let Some(d) = c
        .diagnostics
        .iter()
        .find(|d| d.is_error() && d.file.as_deref() == Some(m.path.as_str()))
    {
        let place = match d.line {
            Some(line) => format!("{}:{line}", m.path),
            None => m.path.clone(),
        };
        return reason(
            format!(
                "does not compile: error[{}] at {place}: {}",
                d.code.0, d.message
            ),
            None,
        );
    }
    if let Some(s) = m
        .sources
        .iter()
        .find(|s| !c.catalog.sources.contains_key(*s))
    {
        return reason(
            format!("source {s} cannot be read (see `phlo-transform check`)"),
            Some(s.clone()),
        );
    }
    if let Some(&u) = m.upstream.iter().find(|&&u| c.models[u].version.is_none()) {
        let upstream = &c.models[u].name;
        return reason(
            format!("upstream {upstream} is blocked by a compile error"),
            Some(upstream.to_string()),
        );
    }
    reason("the model has compile errors".into(), None)
}

/// With compile errors in the workspace, a model that compiles is still blocked when a source
/// it reads had an error (its catalog could not load it) or an upstream model is blocked: the
/// rest of the selection runs (SPEC §63), these do not.
fn blocked_by_errors(
    c: &Compilation,
    i: usize,
    decided: &HashMap<usize, Decision>,
) -> Option<Reason> {
    let m = &c.models[i];
    for s in &m.sources {
        if let Some(why) = c
            .catalog
            .sources
            .get(s)
            .and_then(|st| st.unreadable_data.as_ref())
        {
            return Some(Reason::new(
                ReasonKind::UnknownState,
                format!("source {s} cannot be read: {why}"),
                Some(s.clone()),
            ));
        }
    }
    materialised_upstream(c, i)
        .into_iter()
        .find(|u| decided.get(u) == Some(&Decision::Blocked))
        .map(|u| {
            let upstream = &c.models[u].name;
            Reason::new(
                ReasonKind::UnknownState,
                format!("upstream {upstream} is blocked"),
                Some(upstream.to_string()),
            )
        })
}

/// What becomes of a model whose recorded materialisation another environment wrote: a
/// decision to skip adopts it (`cached`) when the adapter is the same and its identity still
/// holds, else it is built here (SPEC §39).
fn adopt(
    c: &Compilation,
    i: usize,
    rec: &MaterializedVersion,
    from: &Adoptable,
    inputs: &PlanInputs<'_>,
    decision: Decision,
    mut reasons: Vec<Reason>,
) -> (Decision, Vec<Reason>) {
    let short = |v: &str| v[..12.min(v.len())].to_string();
    let env = &from.environment;
    match decision {
        Decision::Skip => match &from.identity {
            Ok(proof) => (
                Decision::Cached,
                vec![Reason::new(
                    ReasonKind::CacheReuse,
                    format!(
                        "reuses `{}` built in environment `{env}` by run {}: same version {}, same adapter `{}`, {proof}",
                        (inputs.relation_of)(i),
                        short(&rec.run_id),
                        short(&rec.version),
                        inputs.adapter
                    ),
                    Some(env.clone()),
                )],
            ),
            Err(why) => (
                Decision::Build,
                vec![Reason::new(
                    ReasonKind::OutputDrift,
                    format!("environment `{env}`'s table cannot be reused: {why}"),
                    Some(env.clone()),
                )],
            ),
        },
        Decision::Build => {
            let detail = if reasons.iter().any(|r| r.kind == ReasonKind::AdapterChange) {
                reasons.retain(|r| r.kind != ReasonKind::AdapterChange);
                format!(
                    "environment `{env}`'s version was built by adapter `{}`: built by `{}` here",
                    rec.adapter.as_deref().unwrap_or("unknown"),
                    inputs.adapter
                )
            } else {
                let desired = c.models[i].version.as_ref().map(|v| v.version.as_str());
                format!(
                    "environment `{env}` holds version {}, this plan wants {}: built here",
                    short(&rec.version),
                    short(desired.unwrap_or("-"))
                )
            };
            reasons.push(Reason::new(ReasonKind::CacheMiss, detail, Some(env.clone())));
            (Decision::Build, reasons)
        }
        other => (other, reasons),
    }
}

fn decide(
    c: &Compilation,
    i: usize,
    recorded: Option<&MaterializedVersion>,
    inputs: &PlanInputs<'_>,
    decided: &HashMap<usize, Decision>,
) -> (Decision, Vec<Reason>) {
    let m = &c.models[i];
    let Some(desired) = &m.version else {
        return (Decision::Blocked, vec![why_unversioned(c, i)]);
    };
    if c.has_errors() {
        if let Some(reason) = blocked_by_errors(c, i, decided) {
            return (Decision::Blocked, vec![reason]);
        }
    }
    let Some(rec) = recorded else {
        return (
            Decision::Build,
            vec![Reason::new(
                ReasonKind::MissingRelation,
                format!("never materialised in environment `{}`", inputs.environment),
                None,
            )],
        );
    };
    if !inputs.existing_relations.contains(&m.id) {
        return (
            Decision::Build,
            vec![Reason::new(
                ReasonKind::MissingRelation,
                format!(
                    "recorded as materialised, but relation `{}` is missing",
                    (inputs.relation_of)(i)
                ),
                None,
            )],
        );
    }
    if rec.adapter.as_deref() != Some(inputs.adapter) {
        let detail = match &rec.adapter {
            Some(other) => format!(
                "built by adapter `{other}`; this plan's adapter is `{}`",
                inputs.adapter
            ),
            None => format!(
                "recorded before adapters were tracked; rebuilt by adapter `{}`",
                inputs.adapter
            ),
        };
        return (
            Decision::Build,
            vec![Reason::new(ReasonKind::AdapterChange, detail, None)],
        );
    }
    if let (Some(recorded), Some(live)) =
        (&rec.output_identity, inputs.output_identities.get(&m.id))
    {
        if recorded != live {
            return (
                Decision::Build,
                vec![Reason::new(
                    ReasonKind::OutputDrift,
                    format!(
                        "`{}` changed outside phlo-transform: recorded {recorded}, it reports {live} now — FULL REBUILD",
                        (inputs.relation_of)(i)
                    ),
                    None,
                )],
            );
        }
    }
    let change = SqlChange::classify(
        rec.text_hash.as_deref(),
        &rec.sql_hash,
        rec.plan_hash.as_deref(),
        desired,
    );
    if rec.version == desired.version {
        let detail = if change == SqlChange::Text {
            "SQL, config and inputs unchanged (the file changed in formatting or comments only)"
        } else {
            "SQL, config and inputs unchanged"
        };
        return (
            Decision::Skip,
            vec![Reason::new(ReasonKind::Unchanged, detail, None)],
        );
    }
    let mut reasons = Vec::new();
    match change {
        SqlChange::Semantic => reasons.push(Reason::new(
            ReasonKind::SqlSemanticChange,
            "SQL semantics changed",
            None,
        )),
        SqlChange::Ast => reasons.push(Reason::new(
            ReasonKind::SqlAstChange,
            "SQL changed at the AST level; the logical plan is the same (not a semantic change)",
            None,
        )),
        SqlChange::None | SqlChange::Text => {}
    }
    if rec.config_hash != desired.config_hash {
        let detail = if rec.materialization != m.materialization.as_str() {
            format!(
                "configuration changed: materialized {} → {}",
                rec.materialization, m.materialization
            )
        } else {
            "data-affecting configuration changed".to_string()
        };
        reasons.push(Reason::new(ReasonKind::ConfigChange, detail, None));
    }
    let old: BTreeSet<&String> = rec.upstream.keys().collect();
    let new: BTreeSet<&String> = desired.upstream.keys().collect();
    for added in new.difference(&old) {
        reasons.push(Reason::new(
            ReasonKind::DependencyChange,
            format!("new dependency: {added}"),
            Some(added.to_string()),
        ));
    }
    for removed in old.difference(&new) {
        reasons.push(Reason::new(
            ReasonKind::DependencyChange,
            format!("dependency removed: {removed}"),
            Some(removed.to_string()),
        ));
    }
    for &u in &m.upstream {
        let up = &c.models[u];
        let (Some(was), Some(now)) = (rec.upstream.get(&up.id), desired.upstream.get(&up.id))
        else {
            continue;
        };
        if was != now {
            reasons.push(Reason::new(
                ReasonKind::DependencyChange,
                format!("upstream version changed: {}", up.name),
                Some(up.name.to_string()),
            ));
            if decided.get(&u) == Some(&Decision::Build) {
                reasons.push(Reason::new(
                    ReasonKind::UpstreamRebuild,
                    format!("upstream {} will rebuild in this plan", up.name),
                    Some(up.name.to_string()),
                ));
            }
        }
    }
    for (source, now) in &desired.sources {
        match rec.sources.get(source) {
            Some(was) if was != now => {
                reasons.push(source_change(c, inputs, rec, source, was, now))
            }
            None => reasons.push(Reason::new(
                ReasonKind::DependencyChange,
                format!("new source: {source}"),
                Some(source.clone()),
            )),
            _ => {}
        }
    }
    for source in rec
        .sources
        .keys()
        .filter(|s| !desired.sources.contains_key(*s))
    {
        reasons.push(Reason::new(
            ReasonKind::DependencyChange,
            format!("source no longer read: {source}"),
            Some(source.clone()),
        ));
    }
    if reasons.is_empty() {
        reasons.push(Reason::new(
            ReasonKind::CompilerSemanticsChange,
            "the version format of the compiler changed",
            None,
        ));
    }
    (Decision::Build, reasons)
}

/// `source_change` for `source`, whose state went from `was` to `now`: with both instants when
/// it advanced past what the model's record is current as of.
fn source_change(
    c: &Compilation,
    inputs: &PlanInputs<'_>,
    rec: &MaterializedVersion,
    source: &str,
    was: &str,
    now: &str,
) -> Reason {
    let changed = format!(
        "source {source} changed ({} → {})",
        short_state(was),
        short_state(now)
    );
    let mut reason = Reason::new(ReasonKind::SourceChange, changed, Some(source.to_string()));
    reason.advanced = as_of::advanced(c, inputs.freshness, source, rec.current_as_of);
    if let Some(a) = reason.advanced {
        reason.detail = format!(
            "{}: stale, the source advanced to {} and the model is current as of {}",
            reason.detail,
            phlo_transform_state::as_of_text(a.source_as_of),
            phlo_transform_state::as_of_text(a.current_as_of)
        );
    }
    reason
}

/// `sha256:ab12…,size:10` → `sha256:ab12cd34`; other states as they are.
fn short_state(state: &str) -> String {
    match state.strip_prefix("sha256:") {
        Some(rest) => format!("sha256:{}", &rest[..8.min(rest.len())]),
        None => state.to_string(),
    }
}
