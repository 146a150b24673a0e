//! `diff <model>`: resolves the two sides on the local engine, the key and the model's diff
//! policy, then runs the data diff (`phlo_transform_diff`).
//!
//! Sides (`--from` is the base, `--to` the candidate):
//! - `workspace` (default candidate): the model's SQL as the workspace defines it now,
//!   executed by the local engine over the upstream relations as materialised. It is
//!   streamed into the comparison and written nowhere: the warehouse is only read.
//! - `materialized` (default base): the model's relation as last materialised.
//! - `delta:<n>` / `delta:<RFC 3339 timestamp>`: the model's Delta table at that version
//!   or time (Delta time travel).
//! - `<model version>` (a prefix of at least 6 hex digits): the Delta version whose
//!   commit recorded that model version (`phlo.model_version`).
//! - `ref:<name>`: the model's dataset as reference `name` points at it — on the embedded
//!   engine a Delta version, on Trino + Nessie the Iceberg snapshot at the branch's head.
//! - `iceberg:<snapshot id>` (Trino + Nessie): that snapshot of the model's Iceberg table as
//!   the `--ref` branch (else main) has it at its head (Iceberg time travel).
//!
//! The other sides are read by the embedded engine. On a Trino + Nessie target its tables
//! live in Iceberg on branches: there `materialized` (the default base) is `ref:<--ref, else
//! main>`, `workspace` is the model's SQL run by Trino over that branch's tables and fetched
//! as Arrow, and Delta versions are refused (D001).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::DataType;
use datafusion::datasource::MemTable;
use datafusion::prelude::{cast, ident, DataFrame, Expr, SessionContext};
use datafusion::sql::sqlparser::ast::{Query, Statement};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::TableReference;
use phlo_transform_adapter::field_marks::{JSON_TEXT, SCALE_FROM_VALUES};
use phlo_transform_adapter::snapshot::{DeltaAt, TableVersion};
use phlo_transform_adapter::{Adapter, InFlight, LocalEngine, ModelStorage, Purpose};
use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_diff::{
    DiffOptions, DiffPolicy, DiffReport, DiffRequest, KeyChoice, KeySource, NanSemantics,
    PushdownEngine, SideInput, Strategy,
};
use phlo_transform_project::{AdapterKind, DiffSection, Materialization};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use crate::cancel::CancelHandle;
use crate::environments::{Environments, MAIN};
use crate::jobs::physical_parts;
use crate::target::CommandTarget;

/// What `diff` was asked.
#[derive(Clone, Debug, Default)]
pub struct DiffArgs {
    pub model: String,
    /// Base side (default `materialized`).
    pub from: Option<String>,
    /// Candidate side (default `workspace`).
    pub to: Option<String>,
    /// `--key`; empty: the model's `@key`, else the plan's grain.
    pub key: Vec<String>,
    /// `None`: chosen by size and key.
    pub strategy: Option<Strategy>,
    pub options: DiffOptions,
    pub output: Option<PathBuf>,
    /// Ctrl-C: the warehouse's queries of the diff are cancelled there, and the diff ends
    /// with E004.
    pub cancel: CancelHandle,
}

/// A parsed side.
#[derive(Clone, Debug, PartialEq)]
enum SideSpec {
    /// The model's own: its SQL or its stored data, read where its tables live (the embedded
    /// engine or the warehouse).
    Model(ModelSide),
    /// `ref:<name>`: what the reference points at.
    Reference(String),
    /// `iceberg:<snapshot id>`: a snapshot of the model's table on the `--ref` branch.
    Snapshot(i64),
}

/// A side of the model's own (`SideSpec::Model`).
#[derive(Clone, Debug, PartialEq)]
enum ModelSide {
    Workspace,
    Materialized,
    Delta(DeltaAt),
    Recorded(String),
}

impl SideSpec {
    /// Read where the model's tables live (not through the environments).
    fn is_model(&self) -> bool {
        matches!(self, SideSpec::Model(_))
    }
}

fn parse_side(text: &str) -> Result<SideSpec, Diagnostic> {
    let t = text.trim();
    if t == "workspace" || t == "current" {
        return Ok(SideSpec::Model(ModelSide::Workspace));
    }
    if t == "materialized" || t == "materialised" || t == "last" {
        return Ok(SideSpec::Model(ModelSide::Materialized));
    }
    if let Some(at) = t.strip_prefix("delta:") {
        return Ok(SideSpec::Model(ModelSide::Delta(match at.parse::<u64>() {
            Ok(v) => DeltaAt::Version(v),
            _ if chrono::DateTime::parse_from_rfc3339(at).is_ok() => {
                DeltaAt::Timestamp(at.to_string())
            }
            _ => {
                return Err(Diagnostic::error(
                    codes::DIFF_UNKNOWN_SIDE,
                    format!("`{t}` is neither a Delta version nor an RFC 3339 timestamp"),
                )
                .with_help("write delta:3 or delta:2026-11-30T20:00:00Z"))
            }
        })));
    }
    if let Some(name) = t.strip_prefix("ref:") {
        if name.trim().is_empty() {
            return Err(Diagnostic::error(
                codes::DIFF_UNKNOWN_SIDE,
                format!("`{t}` names no reference"),
            )
            .with_help("write ref:main or ref:<candidate>; `phlo-transform ref list` lists them"));
        }
        return Ok(SideSpec::Reference(name.trim().to_string()));
    }
    if let Some(id) = t.strip_prefix("iceberg:") {
        return id.parse::<i64>().map(SideSpec::Snapshot).map_err(|_| {
            Diagnostic::error(
                codes::DIFF_UNKNOWN_SIDE,
                format!("`{t}` names no Iceberg snapshot"),
            )
            .with_help("write iceberg:<snapshot id>, a number the table's metadata lists")
        });
    }
    if t.len() >= 6 && t.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(SideSpec::Model(ModelSide::Recorded(t.to_ascii_lowercase())));
    }
    Err(Diagnostic::error(
        codes::DIFF_UNKNOWN_SIDE,
        format!("`{t}` names no diff side"),
    )
    .with_help(format!(
        "a side is `workspace`, `materialized`, `delta:<version>`, `delta:<RFC 3339 time>`, a recorded model version (6+ hex digits), `ref:<reference>` (ref:{t} if `{t}` is an environment) or `iceberg:<snapshot id>`"
    )))
}

fn unreadable(model: &str, what: &str, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        codes::DIFF_UNREADABLE_SIDE,
        format!("{what} of `{model}` cannot be read: {e}"),
    )
    .with_help(format!(
        "`phlo-transform run -s {model}` builds the model and its upstream models"
    ))
}

fn no_executable_sql(model: &str) -> Diagnostic {
    Diagnostic::error(
        codes::DIFF_UNREADABLE_SIDE,
        format!("`{model}` has no executable SQL (it, or a model upstream, does not compile)"),
    )
    .with_help("`phlo-transform check` shows the errors")
}

fn ephemeral(model: &str) -> Diagnostic {
    Diagnostic::error(
        codes::DIFF_UNKNOWN_SIDE,
        format!("`{model}` is ephemeral: it is never materialised"),
    )
    .with_help("diff a model downstream of it, or compare two workspace states with --from/--to")
}

/// The model's `[model."x".diff]` section (same matching as contracts: full name, a
/// unique suffix, or the name with `_` for `.`).
fn policy_section<'a>(c: &'a Compilation, model: &str) -> Option<&'a DiffSection> {
    c.workspace
        .config
        .model
        .iter()
        .filter(|(key, _)| {
            model == key.as_str()
                || model.ends_with(&format!(".{key}"))
                || model.replace('.', "_") == **key
        })
        .find_map(|(_, s)| s.diff.as_ref())
}

/// The model's Delta table at `at`, and the version read.
pub(crate) async fn delta_frame(
    engine: &LocalEngine,
    name: &str,
    at: DeltaAt,
    label: &str,
) -> Result<(DataFrame, u64), Diagnostic> {
    if !engine.has_table(name) {
        return Err(Diagnostic::error(
            codes::DIFF_UNKNOWN_SIDE,
            format!("`{name}` has no Delta table to read {label} from"),
        )
        .with_help(format!(
            "only `@table` and `@incremental` models keep versions; `phlo-transform run -s {name}` builds it"
        )));
    }
    if let DeltaAt::Timestamp(ts) = &at {
        let wanted = chrono::DateTime::parse_from_rfc3339(ts)
            .map(|t| t.timestamp_millis())
            .unwrap_or(i64::MIN);
        let first = engine
            .table_versions(name)
            .ok()
            .and_then(|vs| vs.first().and_then(|v| v.timestamp));
        if let Some(first) = first.filter(|first| wanted < *first) {
            let created = chrono::DateTime::from_timestamp_millis(first)
                .map(|t| t.to_rfc3339())
                .unwrap_or_default();
            return Err(Diagnostic::error(
                codes::DIFF_UNKNOWN_SIDE,
                format!("`{name}` did not exist at {ts}: its first commit is from {created}"),
            )
            .with_help("pick a time after the table was created, or a delta:<version>"));
        }
    }
    let (provider, version) = engine.table_at(name, &at).await.map_err(|e| {
        Diagnostic::error(codes::DIFF_UNKNOWN_SIDE, e.message).with_help(format!(
            "the table's log lists its versions: {}",
            engine
                .table_versions(name)
                .map(|vs| vs
                    .iter()
                    .map(|v| format!("delta:{}", v.delta_version))
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default()
        ))
    })?;
    let df = engine
        .session()
        .read_table(provider)
        .map_err(|e| unreadable(name, "the table", e.strip_backtrace()))?;
    Ok((df, version))
}

async fn side_frame(
    c: &Compilation,
    engine: &LocalEngine,
    index: usize,
    spec: &ModelSide,
) -> Result<(DataFrame, String), Diagnostic> {
    let m = &c.models[index];
    let name = m.name.as_str();
    let ctx = engine.session();
    match spec {
        ModelSide::Workspace => {
            let physical = |t: &Target| match t {
                Target::Model(i) => vec![engine.relation_name(c.models[*i].name.as_str())],
                Target::Source(s) => vec![s.clone()],
            };
            let query = c
                .executable_query(index, &physical)
                .ok_or_else(|| no_executable_sql(name))?;
            let df = ctx
                .sql(&query.to_string())
                .await
                .map_err(|e| unreadable(name, "the workspace definition", e.strip_backtrace()))?;
            Ok((
                df,
                format!(
                    "{name} as the workspace defines it, over the materialised upstream relations"
                ),
            ))
        }
        ModelSide::Materialized => match m.materialization {
            Materialization::Ephemeral => Err(ephemeral(name)),
            Materialization::View => {
                let df = ctx
                    .table(TableReference::bare(engine.relation_name(name)))
                    .await
                    .map_err(|_| {
                        unreadable(name, "the materialised view", "it has not been built")
                    })?;
                Ok((df, format!("{name} as last materialised (view)")))
            }
            Materialization::Table | Materialization::Incremental => {
                if !engine.has_table(name) {
                    return Err(unreadable(
                        name,
                        "the materialised table",
                        "it has not been built",
                    ));
                }
                let (df, version) =
                    delta_frame(engine, name, DeltaAt::Latest, "its last materialisation").await?;
                let recorded = engine
                    .table_versions(name)
                    .ok()
                    .and_then(|vs| vs.into_iter().rev().find_map(|v| v.model_version))
                    .map(|v| format!(", model version {}", short(&v)))
                    .unwrap_or_default();
                Ok((
                    df,
                    format!("{name} as last materialised (Delta version {version}{recorded})"),
                ))
            }
        },
        ModelSide::Delta(at) => {
            let label = match at {
                DeltaAt::Version(v) => format!("Delta version {v}"),
                DeltaAt::Timestamp(t) => format!("Delta as of {t}"),
                DeltaAt::Latest => "the latest Delta version".into(),
            };
            let (df, version) = delta_frame(engine, name, at.clone(), &label).await?;
            let description = match at {
                DeltaAt::Timestamp(_) => format!("{name} at {label} (Delta version {version})"),
                _ => format!("{name} at {label}"),
            };
            Ok((df, description))
        }
        ModelSide::Recorded(prefix) => {
            let versions: Vec<TableVersion> = if engine.has_table(name) {
                engine
                    .table_versions(name)
                    .map_err(|e| unreadable(name, "the table log", e.message))?
            } else {
                Vec::new()
            };
            let matching: Vec<&TableVersion> = versions
                .iter()
                .filter(|v| {
                    v.model_version
                        .as_deref()
                        .is_some_and(|mv| mv.starts_with(prefix))
                })
                .collect();
            let distinct: std::collections::BTreeSet<&str> = matching
                .iter()
                .filter_map(|v| v.model_version.as_deref())
                .collect();
            let recorded = || {
                versions
                    .iter()
                    .rev()
                    .filter_map(|v| {
                        v.model_version
                            .as_ref()
                            .map(|mv| format!("{} (delta:{})", short(mv), v.delta_version))
                    })
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            match distinct.len() {
                0 => Err(Diagnostic::error(
                    codes::DIFF_UNKNOWN_SIDE,
                    format!("`{name}` has no recorded version starting with `{prefix}`"),
                )
                .with_help(if versions.iter().any(|v| v.model_version.is_some()) {
                    format!("recorded versions, newest first: {}", recorded())
                } else {
                    format!("`{name}` has no recorded table versions; `phlo-transform run -s {name}` builds it")
                })),
                1 => {
                    // The newest commit that wrote this model version.
                    let v = matching.last().expect("one match");
                    let (df, _) = delta_frame(engine, name, DeltaAt::Version(v.delta_version), "a recorded version").await?;
                    Ok((
                        df,
                        format!(
                            "{name} at model version {} (Delta version {})",
                            short(v.model_version.as_deref().unwrap_or_default()),
                            v.delta_version
                        ),
                    ))
                }
                _ => Err(Diagnostic::error(
                    codes::DIFF_UNKNOWN_SIDE,
                    format!("`{prefix}` matches several recorded versions of `{name}`"),
                )
                .with_suggestions(distinct.iter().map(|s| s.to_string()).collect())
                .with_help("give more digits of the version")),
            }
        }
    }
}

/// The key of model `index`'s diff: `given` (`--key`), else its `@key`, else the grain
/// inferred from its plan, else none.
pub(crate) fn key_for(c: &Compilation, index: usize, given: &[String]) -> KeyChoice {
    if !given.is_empty() {
        KeyChoice {
            columns: given.to_vec(),
            source: KeySource::Option,
            from: None,
        }
    } else if !c.config(index).key.value.is_empty() {
        KeyChoice {
            columns: c.config(index).key.value.clone(),
            source: KeySource::Model,
            from: None,
        }
    } else if let Some(k) = c
        .logical_plan(index)
        .as_ref()
        .and_then(phlo_transform_diff::infer_key)
    {
        KeyChoice {
            columns: k.columns,
            source: KeySource::Inferred,
            from: Some(k.from.to_string()),
        }
    } else {
        KeyChoice {
            columns: Vec::new(),
            source: KeySource::None,
            from: None,
        }
    }
}

/// Model `model`'s `[model."x".diff]` policy, and `options` with its column tolerances.
pub(crate) fn policy_for(
    c: &Compilation,
    model: &str,
    mut options: DiffOptions,
) -> Result<(DiffOptions, DiffPolicy), Diagnostic> {
    let mut policy = DiffPolicy::default();
    let Some(section) = policy_section(c, model) else {
        return Ok((options, policy));
    };
    policy.max_removed_rows = section.max_removed_rows;
    policy.max_added_rows = section.max_added_rows;
    policy.max_changed_fraction = section.max_changed_fraction;
    for (column, col) in &section.columns {
        if let Some(t) = col.tolerance {
            if t.is_nan() || t < 0.0 {
                return Err(Diagnostic::error(
                    codes::DIFF_INVALID_OPTION,
                    format!(
                        "[model.\"{model}\".diff.columns.{column}] tolerance = {t} is negative"
                    ),
                )
                .with_help("a tolerance is an absolute difference, 0 or more"));
            }
            options.tolerances.entry(column.clone()).or_insert(t);
        }
        if let Some(max) = col.max_changed_values {
            policy.max_changed_values.insert(column.clone(), max);
        }
    }
    if let Some(f) = section
        .max_changed_fraction
        .filter(|f| !(0.0..=1.0).contains(f))
    {
        return Err(Diagnostic::error(
            codes::DIFF_INVALID_OPTION,
            format!("[model.\"{model}\".diff] max_changed_fraction = {f} is not between 0 and 1"),
        )
        .with_help("write e.g. max_changed_fraction = 0.05 for 5%"));
    }
    Ok((options, policy))
}

fn short(version: &str) -> &str {
    &version[..version.len().min(12)]
}

/// Runs `diff` for one model of the workspace at `target`: the embedded engine (bound to
/// `--ref`) or the warehouse is opened only when a side of the model's own is read, the
/// environments only for `ref:<name>` and `iceberg:<id>` sides. The warnings of opening them
/// (relations that could not be registered) go to `warnings`, whether the diff then runs or
/// fails.
pub async fn diff_model(
    c: &Compilation,
    target: &CommandTarget<'_>,
    args: DiffArgs,
    warnings: &mut Vec<Diagnostic>,
) -> Result<DiffReport, Diagnostic> {
    let index = c.model_index(&args.model).ok_or_else(|| {
        let names = c.models.iter().map(|m| m.name.as_str());
        Diagnostic::error(
            codes::UNKNOWN_MODEL,
            format!("no model named `{}`", args.model),
        )
        .with_suggestions(phlo_transform_core::did_you_mean(&args.model, names))
        .with_help("`phlo-transform list` shows every model")
    })?;
    let model = c.models[index].name.as_str().to_string();
    let kind = c.workspace.adapter_target(target.adapter)?.kind();
    let engine = phlo_transform_adapter::driver(kind).storage();
    let reference = target.reference.unwrap_or(MAIN);
    let base_spec = parse_side(args.from.as_deref().unwrap_or("materialized"))?;
    let cand_spec = parse_side(args.to.as_deref().unwrap_or("workspace"))?;
    for (flag, text, spec) in [
        ("--from", args.from.as_deref(), &base_spec),
        ("--to", args.to.as_deref(), &cand_spec),
    ] {
        let side = match text {
            Some(t) => format!("{flag} {t}"),
            None => format!("{flag} (default {})", default_name(spec)),
        };
        accepts(engine, kind, &model, &side, spec)?;
    }
    // On branches the model's table as last materialised is the one its reference reads.
    let on_branch = |spec: SideSpec| match spec {
        SideSpec::Model(ModelSide::Materialized) if engine == ModelStorage::Branches => {
            SideSpec::Reference(reference.to_string())
        }
        other => other,
    };
    let (base_spec, cand_spec) = (on_branch(base_spec), on_branch(cand_spec));
    if let (ModelStorage::Warehouse, Some(r)) = (engine, target.reference) {
        return Err(Diagnostic::error(
            codes::ENVIRONMENTS_UNSUPPORTED,
            format!("--ref {r}: the {kind} adapter has no environments"),
        )
        .with_help(
            "drop --ref: `diff` compares the model's SQL with its relation in the warehouse",
        ));
    }
    let any = |f: fn(&SideSpec) -> bool| f(&base_spec) || f(&cand_spec);
    let local = if engine == ModelStorage::Embedded && any(SideSpec::is_model) {
        let (engine, problems) = target.open_local(c).await?;
        warnings.extend(problems);
        Some(engine)
    } else {
        None
    };
    let on_other_branch = engine == ModelStorage::Branches && reference != MAIN;
    let envs = if any(|s| !s.is_model()) || on_other_branch {
        Some(target.environments().await?)
    } else {
        None
    };
    let warehouse = if engine == ModelStorage::Warehouse
        || (engine == ModelStorage::Branches && any(SideSpec::is_model))
    {
        // On branches, the adapter bound to the `--ref` branch: the model's SQL reads its
        // tables there. `Plan`: one connection, and no DuckDB file created where none is.
        let binding = match &envs {
            Some(envs) if on_other_branch => Some(envs.bind(Some(reference), None).await?),
            _ => None,
        };
        let (adapter, problems) = target
            .open_engine(c, binding.as_ref(), Purpose::Plan)
            .await?;
        warnings.extend(problems);
        Some(adapter)
    } else {
        None
    };
    // Every warehouse query of the diff registers here while it runs, so an interrupt can
    // cancel it in the warehouse (a Trino or PostgreSQL query outlives a killed client).
    let inflight = InFlight::default();
    let opened = Opened {
        local: local.as_ref(),
        warehouse: warehouse.as_deref(),
        envs: envs.as_ref(),
        reference,
        on_branches: engine == ModelStorage::Branches,
        inflight: &inflight,
    };
    let cancel = args.cancel.clone();
    let compared = async {
        let key = key_for(c, index, &args.key);
        // A large warehouse table is compared where it lives, by one query, not fetched. On
        // branches the reference the adapter is bound to is the model's table there.
        let in_warehouse = |spec: &SideSpec| match spec {
            SideSpec::Model(side) => Some(side.clone()),
            SideSpec::Reference(r) if engine == ModelStorage::Branches && r == reference => {
                Some(ModelSide::Materialized)
            }
            _ => None,
        };
        let pushdown = match (
            &warehouse,
            in_warehouse(&base_spec),
            in_warehouse(&cand_spec),
        ) {
            (Some(adapter), Some(b), Some(c_side))
                if !key.columns.is_empty()
                    && matches!(args.strategy, None | Some(Strategy::Full)) =>
            {
                let large = args.options.large_table_rows;
                pushed_down(c, adapter, index, (&b, &c_side), large, &inflight).await?
            }
            _ => None,
        };
        let (sides, pushdown) = match pushdown {
            Some((Sides { base, candidate }, engine)) => {
                let sides = Sides {
                    base: (base.0, opened.in_warehouse(base.1)),
                    candidate: (candidate.0, opened.in_warehouse(candidate.1)),
                };
                (sides, Some(engine))
            }
            None => (
                Sides {
                    base: opened.read(c, index, &base_spec, warnings).await?,
                    candidate: opened.read(c, index, &cand_spec, warnings).await?,
                },
                None,
            ),
        };
        let ((mut base, base_description), (mut candidate, cand_description)) =
            (sides.base, sides.candidate);
        if engine == ModelStorage::Warehouse {
            (base, candidate) = common_scales(base, candidate)?;
        }
        let (options, policy) = policy_for(c, &model, args.options.clone())?;
        // The workspace side is a query: its declared guarantees stand for what its table would
        // enforce, as the materialised side's table does. A warehouse's sides are both fetched
        // as nullable columns (the rows carry no constraints), so neither takes them there.
        let config = c.config(index);
        let declared = |spec: &SideSpec| match spec {
            SideSpec::Model(ModelSide::Workspace) if engine == ModelStorage::Embedded => config
                .key
                .value
                .iter()
                .chain(&config.not_null.value)
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        phlo_transform_diff::diff(DiffRequest {
            model,
            base: SideInput {
                description: base_description,
                frame: base,
                not_null: declared(&base_spec),
            },
            candidate: SideInput {
                description: cand_description,
                frame: candidate,
                not_null: declared(&cand_spec),
            },
            key,
            strategy: args.strategy,
            options,
            policy,
            output: args.output,
            pushdown,
        })
        .await
    };
    tokio::pin!(compared);
    tokio::select! {
        report = &mut compared => report,
        _ = cancel.cancelled() => {
            // Cancelled while the comparison still holds its queries' registrations.
            if let Some(adapter) = &warehouse {
                for query in inflight.running() {
                    let _ = adapter.cancel(&query).await;
                }
            }
            Err(Diagnostic::error(codes::CANCELLED, "diff interrupted: its queries were cancelled")
                .with_help("nothing was written; run the diff again"))
        }
    }
}

/// What an omitted `--from`/`--to` stands for, for messages.
fn default_name(spec: &SideSpec) -> String {
    match spec {
        SideSpec::Model(ModelSide::Workspace) => "workspace".into(),
        SideSpec::Model(_) => "materialized".into(),
        SideSpec::Reference(name) => format!("ref:{name}"),
        SideSpec::Snapshot(id) => format!("iceberg:{id}"),
    }
}

/// The two warehouse sides with their decimal columns read at a scale taken from their
/// values (PostgreSQL `numeric`, [`SCALE_FROM_VALUES`]) cast to the larger of the two sides'
/// scales: such a scale is no type, and two reads of one column must not differ in it.
fn common_scales(
    base: DataFrame,
    candidate: DataFrame,
) -> Result<(DataFrame, DataFrame), Diagnostic> {
    let scale = |frame: &DataFrame, name: &str| {
        let field = frame.schema().as_arrow().field_with_name(name).ok()?;
        match field.data_type() {
            DataType::Decimal128(38, s) if field.metadata().contains_key(SCALE_FROM_VALUES) => {
                Some(*s)
            }
            _ => None,
        }
    };
    let widest: HashMap<String, i8> = base
        .schema()
        .as_arrow()
        .fields()
        .iter()
        .filter_map(|f| {
            let (b, c) = (scale(&base, f.name()), scale(&candidate, f.name()));
            let s = b.max(c)?;
            (b != Some(s) || c != Some(s)).then(|| (f.name().clone(), s))
        })
        .collect();
    if widest.is_empty() {
        return Ok((base, candidate));
    }
    let widen = |frame: DataFrame| {
        let columns: Vec<Expr> = frame
            .schema()
            .as_arrow()
            .fields()
            .iter()
            .map(|f| match widest.get(f.name()) {
                Some(s) => cast(ident(f.name()), DataType::Decimal128(38, *s)).alias(f.name()),
                None => ident(f.name()),
            })
            .collect();
        frame.select(columns).map_err(|e| {
            Diagnostic::error(
                codes::DIFF_UNREADABLE_SIDE,
                format!(
                    "the sides' decimal columns cannot be read at one scale: {}",
                    e.strip_backtrace()
                ),
            )
            .with_help("exclude the column (--exclude) or give it a declared scale (numeric(p,s))")
        })
    };
    Ok((widen(base)?, widen(candidate)?))
}

/// D001 for a side (`side`: the option as given) that an engine of kind `kind`, its models
/// kept as `storage` says, has no way to read, with the sides it has.
fn accepts(
    storage: ModelStorage,
    kind: AdapterKind,
    model: &str,
    side: &str,
    spec: &SideSpec,
) -> Result<(), Diagnostic> {
    let refuse = |why: String, help: String| {
        Err(Diagnostic::error(codes::DIFF_UNKNOWN_SIDE, format!("{side}: {why}")).with_help(help))
    };
    match (storage, spec) {
        (ModelStorage::Branches, SideSpec::Model(ModelSide::Delta(_) | ModelSide::Recorded(_))) => refuse(
            "Delta versions are the embedded engine's, and this workspace's tables are Iceberg tables on Nessie branches (Trino)".into(),
            format!("name an Iceberg snapshot (iceberg:<id>) or a reference: `phlo-transform diff {model} --from ref:main --to ref:<candidate>`"),
        ),
        (ModelStorage::Embedded, SideSpec::Snapshot(_)) => refuse(
            format!("`{model}` is a Delta table of the embedded engine, not an Iceberg table"),
            "name a Delta version (delta:<n>) or time (delta:<RFC 3339 time>) instead".into(),
        ),
        (ModelStorage::Warehouse, SideSpec::Model(ModelSide::Workspace | ModelSide::Materialized)) => Ok(()),
        (ModelStorage::Warehouse, _) => refuse(
            format!("the {kind} warehouse keeps no versions or environments phlo-transform can read"),
            format!("on {kind} a side is `workspace` (the model's SQL, run there) or `materialized` (its relation)"),
        ),
        _ => Ok(()),
    }
}

/// What `diff_model` opened to read its sides: the embedded engine or the warehouse's
/// adapter (on Trino bound to the `--ref` branch) for the model's own sides, the environments for references and snapshots, and
/// the reference `--ref` names (else main).
struct Opened<'a> {
    local: Option<&'a LocalEngine>,
    warehouse: Option<&'a dyn Adapter>,
    envs: Option<&'a Environments>,
    reference: &'a str,
    /// Trino + Nessie: the warehouse reads the `reference` branch's tables.
    on_branches: bool,
    /// The diff's warehouse queries while they run.
    inflight: &'a InFlight,
}

impl Opened<'_> {
    /// A description of a side the warehouse read: on branches, with the branch's reference.
    fn in_warehouse(&self, description: String) -> String {
        match self.on_branches {
            true => format!("{description} on `{}`", self.reference),
            false => description,
        }
    }

    /// One side as a frame and its description.
    async fn read(
        &self,
        c: &Compilation,
        index: usize,
        spec: &SideSpec,
        warnings: &mut Vec<Diagnostic>,
    ) -> Result<(DataFrame, String), Diagnostic> {
        let (name, snapshot) = match spec {
            SideSpec::Model(side) => {
                return match (self.warehouse, self.local) {
                    (Some(adapter), _) => {
                        let (frame, description) =
                            warehouse_frame(c, adapter, index, side, self.inflight).await?;
                        Ok((frame, self.in_warehouse(description)))
                    }
                    (None, Some(engine)) => side_frame(c, engine, index, side).await,
                    (None, None) => {
                        unreachable!("diff_model opens an engine for the model's sides")
                    }
                };
            }
            SideSpec::Reference(name) => (name.as_str(), None),
            SideSpec::Snapshot(id) => (self.reference, Some(*id)),
        };
        let envs = self.envs.expect("the environments are open for references");
        let (read, problems) = envs.read_model(c, index, name, snapshot).await?;
        warnings.extend(problems);
        Ok((read.frame, read.description))
    }
}

/// The query of the model's `workspace` or `materialized` side in a warehouse — the model's
/// SQL (physical names, printed as the adapter prints it) or `SELECT *` of its relation —
/// with what it reads (for errors) and its description.
fn warehouse_query(
    c: &Compilation,
    adapter: &dyn Adapter,
    index: usize,
    side: &ModelSide,
) -> Result<(Query, &'static str, String), Diagnostic> {
    let m = &c.models[index];
    let name = m.name.as_str();
    let kind = adapter.name();
    match side {
        ModelSide::Workspace => {
            let query = c
                .executable_query(index, &|t| physical_parts(c, adapter, t))
                .ok_or_else(|| no_executable_sql(name))?;
            Ok((
                query,
                "the workspace definition",
                format!("{name} as the workspace defines it, run by {kind} over the materialised upstream relations"),
            ))
        }
        ModelSide::Materialized if m.materialization == Materialization::Ephemeral => {
            Err(ephemeral(name))
        }
        ModelSide::Materialized => {
            let relation = adapter.model_relation(name);
            let what = "the materialised relation";
            let query = parsed(&format!("SELECT * FROM {}", relation.quoted()))
                .map_err(|e| unreadable(name, what, e))?;
            Ok((
                query,
                what,
                format!("{name} as last materialised ({kind} relation {relation})"),
            ))
        }
        ModelSide::Delta(_) | ModelSide::Recorded(_) => {
            unreachable!("`accepts` refuses versions on a warehouse")
        }
    }
}

/// `sql` (generated here) as a query AST, for `Adapter::fetch`.
fn parsed(sql: &str) -> Result<Query, String> {
    Parser::parse_sql(&GenericDialect {}, sql)
        .ok()
        .and_then(|mut statements| match statements.pop() {
            Some(Statement::Query(query)) => Some(*query),
            _ => None,
        })
        .ok_or_else(|| format!("`{sql}` does not parse"))
}

/// `query`'s rows, fetched through `adapter` into a table in memory, as a frame.
async fn fetched(
    adapter: &dyn Adapter,
    query: &Query,
    model: &str,
    what: &str,
    inflight: &InFlight,
) -> Result<DataFrame, Diagnostic> {
    let (schema, batches) = adapter
        .fetch(query, inflight)
        .await
        .map_err(|e| unreadable(model, what, e.message))?;
    let table = MemTable::try_new(schema, vec![batches])
        .map_err(|e| unreadable(model, what, e.strip_backtrace()))?;
    SessionContext::new()
        .read_table(Arc::new(table))
        .map_err(|e| unreadable(model, what, e.strip_backtrace()))
}

/// The model's `workspace` or `materialized` side in a warehouse, fetched whole.
async fn warehouse_frame(
    c: &Compilation,
    adapter: &dyn Adapter,
    index: usize,
    side: &ModelSide,
    inflight: &InFlight,
) -> Result<(DataFrame, String), Diagnostic> {
    let (query, what, description) = warehouse_query(c, adapter, index, side)?;
    let name = c.models[index].name.as_str();
    Ok((
        fetched(adapter, &query, name, what, inflight).await?,
        description,
    ))
}

/// Both sides of a keyed full diff in a warehouse whose base relation has more than
/// `large_rows` rows: compared there by one query ([`phlo_transform_diff::PushdownEngine`]),
/// the frames only the sides' schemas (`LIMIT 0`). `None` for a smaller table, which is
/// fetched (the full comparison in memory then also writes `--output`).
async fn pushed_down(
    c: &Compilation,
    adapter: &Arc<dyn Adapter>,
    index: usize,
    (base_side, cand_side): (&ModelSide, &ModelSide),
    large_rows: u64,
    inflight: &InFlight,
) -> Result<Option<(Sides, Box<dyn PushdownEngine>)>, Diagnostic> {
    let name = c.models[index].name.as_str();
    let (base, base_what, base_description) =
        warehouse_query(c, adapter.as_ref(), index, base_side)?;
    let rows = adapter
        .execute(&base, inflight)
        .await
        .map_err(|e| unreadable(name, base_what, e.message))?;
    if rows <= large_rows {
        return Ok(None);
    }
    let (candidate, cand_what, cand_description) =
        warehouse_query(c, adapter.as_ref(), index, cand_side)?;
    let empty = |query: &Query, what: &'static str| {
        let sql = format!("SELECT * FROM ({query}) AS phlo_side LIMIT 0");
        async move {
            let query = parsed(&sql).map_err(|e| unreadable(name, what, e))?;
            fetched(adapter.as_ref(), &query, name, what, inflight).await
        }
    };
    let sides = Sides {
        base: (empty(&base, base_what).await?, base_description),
        candidate: (empty(&candidate, cand_what).await?, cand_description),
    };
    // The query stacks columns compared as text cast to text, which Trino refuses for the
    // arrays, maps, rows and json read as their JSON text: such a table is fetched instead.
    let json_text = |frame: &DataFrame| {
        let fields = frame.schema().as_arrow().fields().clone();
        fields.iter().any(|f| f.metadata().contains_key(JSON_TEXT))
    };
    if json_text(&sides.base.0) || json_text(&sides.candidate.0) {
        return Ok(None);
    }
    let engine = WarehousePushdown {
        adapter: adapter.clone(),
        base_sql: base.to_string(),
        candidate_sql: candidate.to_string(),
        inflight: inflight.clone(),
    };
    Ok(Some((sides, Box::new(engine))))
}

/// The two sides as read: a frame and a description each.
struct Sides {
    base: (DataFrame, String),
    candidate: (DataFrame, String),
}

/// A warehouse running a pushed-down comparison through its adapter.
struct WarehousePushdown {
    adapter: Arc<dyn Adapter>,
    base_sql: String,
    candidate_sql: String,
    inflight: InFlight,
}

impl PushdownEngine for WarehousePushdown {
    fn name(&self) -> &str {
        self.adapter.name()
    }

    fn base_sql(&self) -> &str {
        &self.base_sql
    }

    fn candidate_sql(&self) -> &str {
        &self.candidate_sql
    }

    fn nan(&self) -> NanSemantics {
        match phlo_transform_adapter::driver(self.adapter.kind()).nan_equals_nan() {
            true => NanSemantics::Ordered,
            false => NanSemantics::Unordered,
        }
    }

    fn materializes_with(&self) -> bool {
        phlo_transform_adapter::driver(self.adapter.kind()).materializes_with()
    }

    fn run(
        &self,
        sql: String,
    ) -> Pin<Box<dyn Future<Output = Result<RecordBatch, Diagnostic>> + Send + '_>> {
        Box::pin(async move {
            let failed = |e: String| {
                Diagnostic::error(
                    codes::DIFF_UNREADABLE_SIDE,
                    format!("the join diff in {} failed: {e}", self.adapter.name()),
                )
                .with_help("check both sides read in the warehouse; --strategy sampled fetches a sample instead")
            };
            let query = parsed(&sql).map_err(failed)?;
            let (schema, batches) = self
                .adapter
                .fetch(&query, &self.inflight)
                .await
                .map_err(|e| failed(e.message))?;
            concat_batches(&schema, &batches).map_err(|e| failed(e.to_string()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_parse() {
        let local = |side| Ok(SideSpec::Model(side));
        assert_eq!(parse_side("workspace"), local(ModelSide::Workspace));
        assert_eq!(parse_side("materialized"), local(ModelSide::Materialized));
        assert_eq!(
            parse_side("delta:3"),
            local(ModelSide::Delta(DeltaAt::Version(3)))
        );
        assert_eq!(
            parse_side("delta:2026-11-30T20:00:00Z"),
            local(ModelSide::Delta(DeltaAt::Timestamp(
                "2026-11-30T20:00:00Z".into()
            )))
        );
        assert_eq!(
            parse_side("ABCDEF12"),
            local(ModelSide::Recorded("abcdef12".into()))
        );
        assert_eq!(parse_side("ref:dev"), Ok(SideSpec::Reference("dev".into())));
        assert_eq!(
            parse_side("iceberg:6871533305516185234"),
            Ok(SideSpec::Snapshot(6871533305516185234))
        );
        let main = parse_side("main").unwrap_err();
        assert!(
            main.help.as_deref().unwrap_or("").contains("ref:main"),
            "{main:?}"
        );
        for bad in [
            "delta:yesterday",
            "main",
            "abc",
            "delta:-1",
            "ref:",
            "ref: ",
            "iceberg:",
            "iceberg:latest",
        ] {
            assert_eq!(
                parse_side(bad).unwrap_err().code,
                codes::DIFF_UNKNOWN_SIDE,
                "{bad}"
            );
        }
    }
}
