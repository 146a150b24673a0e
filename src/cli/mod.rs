//! Argument parsing and the shared steps every command takes (load, compile, open state).

mod commands;
mod render;

use clap::{Parser, Subcommand};
use phlo_transform_adapter::LocalEngine;
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics};
use phlo_transform_project::Workspace;
use phlo_transform_state::SqliteStateStore;
use std::path::{Path, PathBuf};

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
    /// State store: a SQLite file path (default .phlo/transform/state.db).
    #[arg(long, global = true, env = "PHLO_STATE_URL", value_name = "PATH")]
    pub state: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Compile and validate the whole workspace; report every problem.
    Check,
    /// List the workspace's models.
    List,
    /// Show one model: identity, dependencies, consumers, tests, version and state.
    Inspect {
        /// Model name (`assay.results`) or URI (`model://assay/results`).
        model: String,
        /// Show the effective configuration and where each value came from.
        #[arg(long)]
        config: bool,
    },
    /// Show what a run would do and why, without changing anything.
    Plan,
    /// Execute exactly a stored plan; rejected as stale if planning again gives another plan.
    Apply {
        /// The id `plan` printed.
        plan_id: String,
        /// Models built at once (default: [transform.execution] max_concurrency, else 4).
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
    /// Plan, then build what changed in dependency order, then run the tests.
    Run {
        /// Models built at once (default: [transform.execution] max_concurrency, else 4).
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
    /// Run the data tests against the relations that exist.
    Test,
    /// Remove the local warehouse and artifacts (and with --state, the state database).
    Clean {
        /// Also remove the state database.
        #[arg(long = "all")]
        all: bool,
    },
}

/// Paths of one workspace's local files.
pub struct Paths {
    pub root: PathBuf,
    pub artifacts: PathBuf,
    pub warehouse: PathBuf,
    pub state: PathBuf,
}

impl Paths {
    fn new(root: &Path, state: Option<&str>) -> Self {
        let artifacts = root.join(".phlo").join("transform");
        Paths {
            root: root.to_path_buf(),
            state: state
                .map(PathBuf::from)
                .unwrap_or_else(|| artifacts.join("state.db")),
            warehouse: root.join(".phlo").join("warehouse"),
            artifacts,
        }
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
    if let Some(url) = cli
        .state
        .as_deref()
        .filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
    {
        let d = Diagnostic::error(codes::STATE_UNAVAILABLE, format!("state backend `{}` is not available yet", redact(url)))
            .with_help("use a SQLite file path for --state / PHLO_STATE_URL; the PostgreSQL backend is planned");
        render::diagnostics(&Diagnostics(vec![d]), None, cli.json);
        return EXIT_ERRORS;
    }
    let paths = Paths::new(&root, cli.state.as_deref());
    let json = cli.json;
    match cli.command {
        Command::Check => commands::check(&paths, json).await,
        Command::List => commands::list(&paths, json).await,
        Command::Inspect { model, config } => commands::inspect(&paths, &model, config, json).await,
        Command::Plan => commands::plan(&paths, json).await,
        Command::Apply { plan_id, jobs } => commands::apply(&paths, &plan_id, jobs, json).await,
        Command::Run { jobs } => commands::run(&paths, jobs, json).await,
        Command::Test => commands::test(&paths, json).await,
        Command::Clean { all } => commands::clean(&paths, all, json),
    }
}

/// Never print credentials: `postgres://user:secret@host` → `postgres://user:***@host`.
fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Loads and compiles the workspace at `paths.root`.
///
/// A command compiles once and exits, so the compilation is leaked on purpose: freeing every
/// AST, plan and schema at exit costs about 0.4 s at 10,000 models and buys nothing.
pub fn compile(paths: &Paths) -> Result<&'static Compilation, Diagnostic> {
    let ws = Workspace::load(&paths.root)?;
    let (catalog, diags) = CatalogSnapshot::load(&ws);
    Ok(Box::leak(Box::new(Compilation::compile(
        ws, catalog, diags,
    ))))
}

pub async fn open_state(paths: &Paths) -> Result<SqliteStateStore, Diagnostic> {
    SqliteStateStore::open(&paths.state).await.map_err(|e| {
        Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
            .with_help("check that the state path is writable, or pass another with --state")
    })
}

pub async fn open_engine(paths: &Paths, c: &Compilation) -> (LocalEngine, Vec<Diagnostic>) {
    let (engine, problems) = LocalEngine::open(&paths.warehouse, c).await;
    let diags = problems
        .into_iter()
        .map(|p| {
            Diagnostic::warning(p.code, p.message)
                .with_help("models reading this relation will fail until it can be read")
        })
        .collect();
    (engine, diags)
}
