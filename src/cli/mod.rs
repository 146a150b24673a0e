//! Argument parsing and the shared steps every command takes (load, compile, open state).

mod commands;
mod diff;
mod environments;
mod execute;
mod explain;
mod explain_code;
mod lineage;
mod openlineage;
mod progress;
mod render;
mod selection;
mod state;

use selection::SelectionArgs;

use clap::{Parser, Subcommand};
use phlo_transform_adapter::{Adapter, Purpose, SchemaRead};
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::Workspace;
use phlo_transform_state::{StateLocation, StateStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Exit codes: 0 success, 1 model or test failures, 2 usage or compile errors.
pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILURES: u8 = 1;
pub const EXIT_ERRORS: u8 = 2;

/// Environment name of the embedded local engine.
pub const LOCAL_ENVIRONMENT: &str = "local";

#[derive(Parser)]
#[command(
    name = "phlo-transform",
    version,
    about = "A workspace-native SQL build system: plain SQL models, compiled, planned against state and built locally on DataFusion + Delta Lake."
)]
pub struct Cli {
    /// Workspace directory (default: the nearest ancestor with a phlo.toml, else the current directory).
    #[arg(short = 'C', long = "project-dir", global = true, value_name = "DIR")]
    pub project_dir: Option<PathBuf>,
    /// Print the report as JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// State store: a SQLite file path (default .phlo/transform/state.db) or a
    /// postgres:// / postgresql:// URL (the shared PostgreSQL store).
    #[arg(long, global = true, env = "PHLO_STATE_URL", value_name = "PATH|URL")]
    pub state: Option<String>,
    /// The target to compile for and build on: a name from `[adapters.<name>]` in phlo.toml,
    /// or `local` (default: `[adapter]`, else the embedded local engine).
    #[arg(long, global = true, env = "PHLO_ADAPTER", value_name = "NAME")]
    pub adapter: Option<String>,
    /// The environment (reference) to plan, run, test or roll back (default: main). Create it
    /// first with `ref create <name> --from main`.
    #[arg(long = "ref", global = true, value_name = "REF")]
    pub reference: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Compile and validate the whole workspace; report every problem.
    Check,
    /// List the workspace's models (or the selected ones).
    List {
        #[command(flatten)]
        selection: SelectionArgs,
    },
    /// Show one model: identity, dependencies, consumers, tests, version and state.
    Inspect {
        /// Model name (`assay.results`) or URI (`model://assay/results`).
        model: String,
        /// Show the effective configuration and where each value came from.
        #[arg(long)]
        config: bool,
        /// Print the exact SQL the adapter sends to materialise the model.
        #[arg(long)]
        sql: bool,
    },
    /// Why a model would (or would not) be built: identity, recorded state, decision, reasons.
    Explain {
        /// Model name (`assay.results`) or URI (`model://assay/results`).
        model: String,
    },
    /// Show what a run would do and why, without changing anything.
    Plan {
        #[command(flatten)]
        selection: SelectionArgs,
    },
    /// Execute exactly a stored plan; rejected as stale if planning again gives another plan.
    Apply {
        /// The id `plan` printed.
        plan_id: String,
        #[command(flatten)]
        execution: execute::ExecutionArgs,
        /// Default: the selection the plan was made with.
        #[command(flatten)]
        selection: SelectionArgs,
    },
    /// Plan, then build what changed in dependency order, then run the tests.
    Run {
        #[command(flatten)]
        execution: execute::ExecutionArgs,
        /// Rebuild the selected incremental models in full instead of incrementally.
        #[arg(long)]
        full_refresh: bool,
        /// Continue an interrupted run (still running, or cancelled) under its own id: its
        /// verified passed work is reused, everything else planned again. A run id or a
        /// unique prefix; selection flags do not apply.
        #[arg(long, value_name = "RUN", conflicts_with = "retry_failed")]
        resume: Option<String>,
        /// Start a new run over a finished run's failed, blocked and cancelled models and
        /// failed tests. A run id or a unique prefix; selection flags do not apply.
        #[arg(long, value_name = "RUN")]
        retry_failed: Option<String>,
        #[command(flatten)]
        selection: SelectionArgs,
    },
    /// Run the data tests against the relations that exist.
    Test {
        #[command(flatten)]
        selection: SelectionArgs,
    },
    /// Where a model or column comes from and where it goes (column-level lineage).
    Lineage {
        /// A model or source (`shared.orders`, `model://shared/orders`) or a column
        /// (`shared.orders.amount`); without it, every model and its inputs.
        target: Option<String>,
        /// `text` (a readable chain; the report with --json), `graph` (the canonical document)
        /// or `openlineage` (design-time JobEvents and DatasetEvents).
        #[arg(long, value_enum, default_value_t)]
        format: lineage::LineageFormat,
        #[command(flatten)]
        scope: selection::ScopeArgs,
    },
    /// What changing a model, source or column reaches: columns, models, tests, workflows.
    Impact {
        /// A model or source (`raw.orders`) or a column (`raw.orders.amount`).
        target: Option<String>,
        /// Selected models are targets too (`-s changed --since main`: a diff's blast radius).
        #[command(flatten)]
        scope: selection::ScopeArgs,
    },
    /// Query the state database: recent runs, one run's nodes, one model's history.
    State {
        #[command(subcommand)]
        command: state::StateCommand,
    },
    /// Compare a model's data: its workspace definition against its last materialisation
    /// (or any two sides with --from/--to); exit 1 when the model's diff policy is violated.
    Diff {
        #[command(flatten)]
        args: diff::DiffCliArgs,
    },
    /// What a diagnostic code means and what to do about it (without a code: every code).
    ExplainCode {
        /// A code such as `T003` (case-insensitive).
        code: Option<String>,
    },
    /// Environments (references): list, show, create from a base, delete.
    Ref {
        #[command(subcommand)]
        command: environments::RefCommand,
    },
    /// Publish a candidate environment into its base once every gate passes (write-audit-publish).
    Promote {
        /// The candidate reference.
        #[arg(value_name = "REF", required_unless_present = "from")]
        candidate: Option<String>,
        /// The candidate reference (the same as the positional argument).
        #[arg(long, value_name = "REF", conflicts_with = "candidate")]
        from: Option<String>,
        /// The reference published into.
        #[arg(long, value_name = "REF", default_value = "main")]
        to: String,
        /// Evaluate the gates only; publish nothing.
        #[arg(long)]
        check: bool,
    },
    /// Roll an environment back to before a promotion (`--ref main --to <promotion>`), or one
    /// model's table to an earlier Delta version (`<model> --to <version>`).
    Rollback {
        /// The model whose table is rolled back (without it: the whole environment).
        model: Option<String>,
        /// A promotion id (or unique prefix), or with a model, a Delta version.
        #[arg(long, value_name = "PROMOTION|VERSION")]
        to: String,
    },
    /// Remove the local warehouse and artifacts (and with --all, the SQLite state database).
    Clean {
        /// Also remove the SQLite state database (a PostgreSQL state is shared: never dropped).
        #[arg(long = "all")]
        all: bool,
    },
}

/// Paths of one workspace's local files.
pub struct Paths {
    pub root: PathBuf,
    pub artifacts: PathBuf,
    pub warehouse: PathBuf,
    pub state: StateLocation,
    /// `--adapter <name>`.
    pub adapter: Option<String>,
    /// `--ref <name>`: the environment.
    pub reference: Option<String>,
}

impl Paths {
    fn new(root: &Path, state: Option<&str>, adapter: Option<String>) -> Result<Self, Diagnostic> {
        let artifacts = root.join(".phlo").join("transform");
        let state = match state.map(StateLocation::parse) {
            Some(Ok(location)) => location,
            Some(Err(message)) => {
                return Err(Diagnostic::error(codes::INVALID_CONFIG, message).with_help(
                    "--state / PHLO_STATE_URL is a postgres:// or postgresql:// URL, sqlite://<path> or a file path",
                ))
            }
            None => StateLocation::Sqlite(artifacts.join("state.db")),
        };
        Ok(Paths {
            root: root.to_path_buf(),
            state,
            warehouse: root.join(".phlo").join("warehouse"),
            artifacts,
            adapter,
            reference: None,
        })
    }
}

pub async fn dispatch(cli: Cli) -> u8 {
    let start = cli
        .project_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    let root = if cli.project_dir.is_some() {
        start.clone()
    } else {
        Workspace::find_root(&start)
    };
    let json = cli.json;
    let mut paths = match Paths::new(&root, cli.state.as_deref(), cli.adapter.clone()) {
        Ok(paths) => paths,
        Err(d) => return commands::fatal(d, json),
    };
    if let Some(reference) = cli.reference.clone() {
        let takes_ref = matches!(
            cli.command,
            Command::Plan { .. }
                | Command::List { .. }
                | Command::Inspect { .. }
                | Command::Explain { .. }
                | Command::Diff { .. }
                | Command::Run { .. }
                | Command::Test { .. }
                | Command::Apply { .. }
                | Command::Rollback { .. }
        );
        if !takes_ref {
            return commands::fatal(
                Diagnostic::error(
                    codes::ENVIRONMENTS_UNSUPPORTED,
                    format!("--ref {reference}: this command does not take an environment"),
                )
                .with_help(
                    "--ref applies to plan, run, test, apply, list, inspect, explain, diff and rollback",
                ),
                json,
            );
        }
        paths.reference = Some(reference);
    }
    match cli.command {
        Command::Check => commands::check(&paths, json).await,
        Command::List { selection } => commands::list(&paths, &selection.spec(), json).await,
        Command::Inspect { model, config, sql } => {
            commands::inspect(&paths, &model, config, sql, json).await
        }
        Command::Explain { model } => explain::explain(&paths, &model, json).await,
        Command::Plan { selection } => commands::plan(&paths, &selection.spec(), json).await,
        Command::Apply {
            plan_id,
            execution,
            selection,
        } => {
            let spec = (!selection.is_empty()).then(|| selection.spec());
            let exec = execute::Execution::new(execution);
            commands::apply(&paths, &plan_id, exec, spec, json).await
        }
        Command::Run {
            execution,
            full_refresh,
            resume,
            retry_failed,
            selection,
        } => {
            let continued = resume
                .map(|r| (r, true))
                .or(retry_failed.map(|r| (r, false)));
            let prepared = match continued {
                None => Ok((selection.spec(), execute::Execution::new(execution))),
                Some(_) if !selection.is_empty() || full_refresh => Err(commands::fatal(
                    Diagnostic::error(
                        codes::INVALID_SELECTOR,
                        "selection flags do not apply to --resume / --retry-failed: the earlier run defines the work",
                    )
                    .with_help("drop the selection, or start a new run with it"),
                    json,
                )),
                Some((run, resume)) => {
                    execute::continuation(&paths, execution, &run, resume, json).await
                }
            };
            match prepared {
                Ok((spec, exec)) => commands::run(&paths, exec, &spec, full_refresh, json).await,
                Err(code) => code,
            }
        }
        Command::Test { selection } => commands::test(&paths, &selection.spec(), json).await,
        Command::Lineage {
            target,
            format,
            scope,
        } => lineage::lineage(&paths, target.as_deref(), format, &scope, json).await,
        Command::Impact { target, scope } => {
            lineage::impact(&paths, target.as_deref(), &scope, json).await
        }
        Command::State { command } => state::dispatch(&paths, command, json).await,
        Command::Diff { args } => diff::diff(&paths, &args, json).await,
        Command::ExplainCode { code } => explain_code::explain_code(code.as_deref(), json),
        Command::Ref { command } => environments::reference(&paths, command, json).await,
        Command::Promote {
            candidate,
            from,
            to,
            check,
        } => {
            let from = candidate.or(from).unwrap_or_default();
            environments::promote(&paths, &from, &to, check, json).await
        }
        Command::Rollback { model, to } => {
            environments::rollback(&paths, model.as_deref(), &to, json).await
        }
        Command::Clean { all } => commands::clean(&paths, all, json),
    }
}

/// Loads and compiles the workspace at `paths.root`.
///
/// A command compiles once and exits, so the compilation is leaked on purpose: freeing every
/// AST, plan and schema at exit costs about 0.4 s at 10,000 models and buys nothing.
pub fn compile(paths: &Paths) -> Result<&'static Compilation, Diagnostic> {
    compile_reading(paths, SchemaRead::Cached)
}

/// [`compile`] for `plan` and `run`: the warehouse relations the models read are typed from
/// the warehouse's catalog, refreshing the schema cache.
pub fn compile_refreshed(paths: &Paths) -> Result<&'static Compilation, Diagnostic> {
    compile_reading(paths, SchemaRead::Refresh)
}

fn compile_reading(paths: &Paths, read: SchemaRead) -> Result<&'static Compilation, Diagnostic> {
    let mut ws = Workspace::load(&paths.root)?;
    // The target's dialect types the models (its functions, its type names).
    let target = ws.adapter_target(paths.adapter.as_deref())?;
    if let Some(dialect) = target.dialect() {
        ws.config.transform.dialect = Some(dialect.to_string());
    }
    // Trino: `catalog.schema.table` relations are warehouse sources typed from its metadata.
    if target.kind() == "trino" {
        phlo_transform_adapter::trino::add_warehouse_sources(&mut ws, &target, &paths.root)?;
    }
    // PostgreSQL, DuckDB: relations only the warehouse has, typed from its catalog (cached).
    let warnings =
        phlo_transform_adapter::add_warehouse_sources(&mut ws, &target, &paths.root, read);
    let (catalog, mut diags) = CatalogSnapshot::load(&ws);
    diags.extend(warnings);
    diags.extend(phlo_transform_adapter::reserved_names(&ws, &target));
    Ok(Box::leak(Box::new(Compilation::compile(
        ws, catalog, diags,
    ))))
}

/// Opens the state store `--state` / `PHLO_STATE_URL` names: SQLite or PostgreSQL, the same
/// trait object either way. Errors show a PostgreSQL URL without its password.
pub async fn open_state(paths: &Paths) -> Result<Arc<dyn StateStore>, Diagnostic> {
    phlo_transform_state::open(&paths.state)
        .await
        .map_err(|e| state_unavailable(paths, e))
}

/// Opens the state store for a command that only reads it (`inspect`, `explain`, `list`,
/// `state …`): nothing is created. A state that does not exist yet reads as empty, unless the
/// workspace directory does not exist either: then the same P001 every command gives.
pub async fn open_state_read_only(paths: &Paths) -> Result<Arc<dyn StateStore>, Diagnostic> {
    if matches!(&paths.state, StateLocation::Sqlite(p) if !p.exists()) && !paths.root.is_dir() {
        // Workspace::load fails at once, with P001, on a directory that does not exist.
        Workspace::load(&paths.root)?;
    }
    phlo_transform_state::open_existing(&paths.state)
        .await
        .map_err(|e| state_unavailable(paths, e))
}

/// Y001 for a state store that cannot be opened, with where to look.
fn state_unavailable(paths: &Paths, e: phlo_transform_state::StateError) -> Diagnostic {
    let help = match &paths.state {
        StateLocation::Sqlite(_) => {
            "check that the state path is writable, or pass another with --state"
        }
        StateLocation::Postgres(_) => {
            "check that PostgreSQL is running, reachable at that address and that the database exists; or pass a SQLite file path with --state / PHLO_STATE_URL"
        }
    };
    Diagnostic::error(codes::STATE_UNAVAILABLE, e.message).with_help(help)
}

/// Opens the adapter `--adapter` / `[adapter]` chooses for `c`. Problems that leave it usable
/// (a source the local engine cannot register) come back as warnings; a warehouse that
/// cannot be reached is an error.
pub async fn open_engine(
    paths: &Paths,
    c: &Compilation,
    purpose: Purpose,
) -> Result<(Arc<dyn Adapter>, Vec<Diagnostic>), Diagnostic> {
    let target = c.workspace.adapter_target(paths.adapter.as_deref())?;
    let (engine, problems) = phlo_transform_adapter::open(&target, &paths.root, c, purpose)
        .await
        .map_err(|e| {
            let help = phlo_transform_adapter::open_help(&target, &e);
            Diagnostic::error(e.code, e.message).with_help(help)
        })?;
    Ok((engine, unreadable_relations(problems)))
}

/// Warnings for what an engine opened without (a source it could not register): usable, but
/// the models reading those relations will fail.
fn unreadable_relations(problems: Vec<phlo_transform_adapter::AdapterError>) -> Vec<Diagnostic> {
    problems
        .into_iter()
        .map(|p| {
            Diagnostic::warning(p.code, p.message)
                .with_help("models reading this relation will fail until it can be read")
        })
        .collect()
}

/// `default_schema` of the embedded engine (`--adapter local`): where it places models.
pub fn local_default_schema(c: &Compilation) -> Option<String> {
    c.workspace
        .adapter_target(Some("local"))
        .ok()
        .and_then(|t| t.settings.default_schema)
}

/// The environment `--ref` names (default main) when the target has environments (the local
/// engine); `None` on other adapters without `--ref`.
pub async fn bind(
    paths: &Paths,
    c: &Compilation,
    store: Arc<dyn StateStore>,
) -> Result<Option<phlo_transform_exec::environments::Binding>, Diagnostic> {
    let target = c.workspace.adapter_target(paths.adapter.as_deref())?;
    phlo_transform_exec::environments::bind_target(
        store,
        &paths.warehouse,
        target.kind(),
        target.settings.default_schema.as_deref(),
        paths.reference.as_deref(),
    )
    .await
}

/// The engine of `binding` when there is one, else the one `--adapter` chooses.
pub async fn open_bound_engine(
    paths: &Paths,
    c: &Compilation,
    binding: Option<&phlo_transform_exec::environments::Binding>,
    purpose: Purpose,
) -> Result<(Arc<dyn Adapter>, Vec<Diagnostic>), Diagnostic> {
    let Some(binding) = binding else {
        return open_engine(paths, c, purpose).await;
    };
    let (engine, problems) = binding.open_engine(c, purpose).await;
    Ok((engine, unreadable_relations(problems)))
}

/// Plans in `binding`'s environment when there is one, else in the adapter's one environment.
pub async fn make_plan(
    c: &Compilation,
    binding: Option<&phlo_transform_exec::environments::Binding>,
    engine: &dyn Adapter,
    store: &dyn StateStore,
    spec: &phlo_transform_plan::SelectorSpec,
) -> Result<phlo_transform_plan::Plan, Vec<Diagnostic>> {
    match binding {
        Some(b) => phlo_transform_exec::planning::make_plan_bound(c, b, engine, store, spec).await,
        None => {
            phlo_transform_exec::planning::make_plan(c, LOCAL_ENVIRONMENT, engine, store, spec)
                .await
        }
    }
}

/// The embedded local engine over the workspace's warehouse with every source registered,
/// reading the environment `--ref` names (default main): what `diff` reads (it compares Delta
/// versions, which only the local engine has).
pub async fn open_local_engine(
    paths: &Paths,
    c: &Compilation,
) -> Result<(phlo_transform_adapter::LocalEngine, Vec<Diagnostic>), Diagnostic> {
    let store = open_state_read_only(paths).await?;
    let binding = phlo_transform_exec::environments::bind_target(
        store,
        &paths.warehouse,
        "local",
        local_default_schema(c).as_deref(),
        paths.reference.as_deref(),
    )
    .await?
    .expect("the local engine has environments");
    let (engine, problems) = binding.open_local(c).await;
    Ok((engine, unreadable_relations(problems)))
}
