//! Argument parsing and the shared steps every command takes (load, compile, open state).

mod commands;
mod context;
mod diff;
mod environments;
mod execute;
mod explain;
mod explain_code;
mod gates;
mod lineage;
mod progress;
mod render;
mod review;
mod selection;
mod state;
mod watch;

pub use context::{
    compile, compile_refreshed, open_state, open_state_read_only, Paths, EXIT_ERRORS,
    EXIT_FAILURES, EXIT_OK,
};
use selection::SelectionArgs;

use clap::{Parser, Subcommand};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::Workspace;
use std::path::PathBuf;

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

impl Cli {
    /// `diff` keeps transparent huge pages: it probes a key index of millions of rows at
    /// random, where they spare TLB misses, and issue 15's figures were measured with them.
    /// Every other command allocates many short-lived buffers, where they cost more zeroing
    /// than they save (see `disable_transparent_huge_pages`).
    pub fn wants_huge_pages(&self) -> bool {
        matches!(self.command, Command::Diff { .. })
    }
}

#[derive(Subcommand)]
pub enum Command {
    /// Write a new workspace (a source, two models, a data test, a README) that `run` builds
    /// at once; refuses a directory that is not empty.
    Init {
        /// Where to write it, created when missing; relative to -C when given (default: -C,
        /// else the current directory).
        dir: Option<PathBuf>,
    },
    /// Convert another tool's project into a new workspace (`import dbt <dbt-project-dir>`).
    Import {
        #[command(subcommand)]
        from: ImportFrom,
    },
    /// Compile and validate the whole workspace; report every problem.
    Check,
    /// Serve editors over the Language Server Protocol on stdin/stdout: diagnostics as you
    /// type, hover with types and column lineage, go to definition, references, completion,
    /// rename of a model, quick fixes (docs/editors.md).
    Lsp,
    /// Serve a local HTTP API over one live compilation and the state store: the reads of
    /// `--json` (`GET /v1/...`) and operations (run, test, resume, retry_failed, reload),
    /// journaled and cancellable (docs/daemon.md).
    Daemon {
        /// The address to listen on (port 0: any free port; the address is printed).
        #[arg(long, default_value = "127.0.0.1:7878", value_name = "HOST:PORT")]
        listen: String,
        /// Require `Authorization: Bearer <TOKEN>` on every endpoint but /status.
        #[arg(
            long,
            env = "PHLO_DAEMON_TOKEN",
            value_name = "TOKEN",
            hide_env_values = true
        )]
        token: Option<String>,
        /// How often the workspace's files are checked for changes, in milliseconds.
        #[arg(long, default_value_t = 500, value_name = "MS")]
        poll_ms: u64,
    },
    /// Serve the agents' questions (depends on, column origin, what breaks, what changed, why
    /// rebuild, what a pull request changes, failures, schema, consumers, gates) as Model
    /// Context Protocol tools on stdin/stdout, over one live compilation (docs/daemon.md).
    Mcp {
        /// How often the workspace's files are checked for changes, in milliseconds.
        #[arg(long, default_value_t = 500, value_name = "MS")]
        poll_ms: u64,
    },
    /// Format model and test files in place (directives and comments kept; a file is only
    /// rewritten when it stays the same query). `--check` writes nothing and exits 1 when a
    /// file would change.
    Fmt {
        /// Write nothing; list the files formatting would change and exit 1 if there are any.
        #[arg(long)]
        check: bool,
        /// Files or folders (relative to the current directory, else to the workspace), model
        /// or test names, or globs over names (`shop.*`); default: every model and test.
        #[arg(value_name = "PATH|NAME")]
        targets: Vec<String>,
    },
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
    /// Keep the workspace built: run what is out of date, then on every edit compile again
    /// (fresh diagnostics) and on every change of a model or a source rebuild only what it
    /// reaches, then its tests. Ctrl-C stops (docs/cli.md#watch).
    Watch {
        #[command(flatten)]
        build: execute::BuildArgs,
        /// How often the workspace's files (and sources in files outside it) are checked
        /// for changes, in milliseconds (50 to 60000).
        #[arg(long, default_value_t = phlo_transform_exec::watch::Intervals::DEFAULT_FILES_MS, value_name = "MS")]
        poll_ms: u64,
        /// How often sources no file shows (Iceberg REST catalog tables, warehouse
        /// relations) are read again, in milliseconds (50 to 60000; never more often than
        /// --poll-ms).
        #[arg(long, default_value_t = phlo_transform_exec::watch::Intervals::DEFAULT_SOURCES_MS, value_name = "MS")]
        source_poll_ms: u64,
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
        /// Compare the workspace's lineage with the workspace at merge-base(GIT_REF, HEAD),
        /// read from Git: models, columns and edges added, removed, renamed and retyped.
        #[arg(
            long,
            value_name = "GIT_REF",
            conflicts_with_all = ["target", "format", "select", "exclude", "tag", "workflow", "since"]
        )]
        diff: Option<String>,
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
    /// The quality gates: every data test with its newest result, the contracts and the
    /// source freshness requirements (of one model when named).
    Gates {
        /// A model (`shared.orders`): only the gates on it.
        model: Option<String>,
    },
    /// Query the state database: recent runs, one run's nodes, one model's history, failures.
    State {
        #[command(subcommand)]
        command: state::StateCommand,
    },
    /// Compare a model's data: its workspace definition against its last materialisation
    /// (or any two sides with --from/--to); without a model, two environments dataset by
    /// dataset (`--from <ref> --to <ref>`); exit 1 when a diff policy is violated.
    Diff {
        #[command(flatten)]
        args: diff::DiffCliArgs,
    },
    /// One report of the change against a Git ref for a pull request: models and their plan
    /// reasons, schema changes and the readers they break, the lineage delta, data diffs,
    /// tests and, with --ref, the promotion gates (Markdown or JSON).
    Review {
        #[command(flatten)]
        args: review::ReviewArgs,
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
        /// The `data_diff` gate requires a `--full` branch diff of the target and the
        /// candidate at their current hashes (`diff --from <target> --to <candidate> --full`).
        #[arg(long)]
        require_diff: bool,
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
    /// Write a static documentation site (index with search, a page per model and source,
    /// the graph) that opens from the file system: docs/docs-site.md.
    Docs {
        /// The site's folder (default: .phlo/transform/docs/ in the workspace); an earlier
        /// site there is replaced, a folder holding anything else is refused.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Then serve the site over local HTTP until Ctrl-C (the first stdout line says where).
        #[arg(long)]
        serve: bool,
        /// Where `--serve` listens (port 0: any free port).
        #[arg(
            long,
            default_value = "127.0.0.1:8700",
            value_name = "HOST:PORT",
            requires = "serve"
        )]
        listen: String,
    },
    /// Remove the local warehouse and artifacts (and with --all, the SQLite state database).
    Clean {
        /// Also remove the SQLite state database (a PostgreSQL state is shared: never dropped).
        #[arg(long = "all")]
        all: bool,
    },
}

/// What `import` converts.
#[derive(Subcommand)]
pub enum ImportFrom {
    /// A dbt project: models, seeds, sources, descriptions and generic tests; what has no
    /// plain-SQL meaning (other Jinja, macros, Python models) is listed and left out.
    Dbt {
        /// The dbt project's folder (the one holding dbt_project.yml).
        project: PathBuf,
        /// The new workspace, created when missing and refused when not empty (default: -C,
        /// else the current directory).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
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
                | Command::Lineage { .. }
                | Command::Run { .. }
                | Command::Test { .. }
                | Command::Apply { .. }
                | Command::Rollback { .. }
                | Command::Review { .. }
        );
        if !takes_ref {
            return commands::fatal(
                Diagnostic::error(
                    codes::ENVIRONMENTS_UNSUPPORTED,
                    format!("--ref {reference}: this command does not take an environment"),
                )
                .with_help(
                    "--ref applies to plan, run, test, apply, list, inspect, explain, lineage, diff, rollback and review",
                ),
                json,
            );
        }
        paths.reference = Some(reference);
    }
    match cli.command {
        // Not the workspace found above `start`: a new one, at DIR (under -C, as `git -C`
        // reads paths) or `start` itself.
        Command::Init { dir } => {
            let dir = match (dir, cli.project_dir.is_some()) {
                (Some(d), true) => start.join(d),
                (Some(d), false) => d,
                (None, _) => start.clone(),
            };
            commands::init(&dir, json)
        }
        Command::Import {
            from: ImportFrom::Dbt { project, out },
        } => {
            let out = match (out, cli.project_dir.is_some()) {
                (Some(d), true) => start.join(d),
                (Some(d), false) => d,
                (None, _) => start.clone(),
            };
            commands::import_dbt(&project, &out, json)
        }
        Command::Check => commands::check(&paths, json).await,
        Command::Lsp => commands::lsp(&paths).await,
        Command::Daemon {
            listen,
            token,
            poll_ms,
        } => {
            let poll = std::time::Duration::from_millis(poll_ms.max(10));
            commands::daemon(&paths, listen, token, poll).await
        }
        Command::Mcp { poll_ms } => {
            let poll = std::time::Duration::from_millis(poll_ms.max(10));
            commands::mcp(&paths, poll).await
        }
        Command::Fmt { check, targets } => commands::fmt(&paths, &targets, check, json),
        Command::List { selection } => commands::list(&paths, &selection.spec(), json).await,
        Command::Inspect { model, config, sql } => {
            let options = phlo_transform_exec::inspect_command::InspectOptions { config, sql };
            commands::inspect(&paths, &model, options, json).await
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
        Command::Watch {
            build,
            poll_ms,
            source_poll_ms,
            selection,
        } => {
            let polls = (poll_ms, source_poll_ms);
            watch::watch(&paths, &build, &selection.spec(), polls, json).await
        }
        Command::Lineage {
            diff: Some(reference),
            ..
        } => lineage::lineage_diff(&paths, &reference, json).await,
        Command::Lineage {
            target,
            format,
            scope,
            diff: None,
        } => lineage::lineage(&paths, target.as_deref(), format, &scope, json).await,
        Command::Impact { target, scope } => {
            lineage::impact(&paths, target.as_deref(), &scope, json).await
        }
        Command::Gates { model } => gates::gates(&paths, model.as_deref(), json).await,
        Command::State { command } => state::dispatch(&paths, command, json).await,
        Command::Diff { args } => diff::diff(&paths, &args, json).await,
        Command::Review { args } => review::review(&paths, &args, json).await,
        Command::ExplainCode { code } => explain_code::explain_code(code.as_deref(), json),
        Command::Ref { command } => environments::reference(&paths, command, json).await,
        Command::Promote {
            candidate,
            from,
            to,
            check,
            require_diff,
        } => {
            let from = candidate.or(from).unwrap_or_default();
            let options = phlo_transform_exec::environments::promote::PromoteOptions {
                check,
                require_diff,
            };
            environments::promote(&paths, &from, &to, options, json).await
        }
        Command::Rollback { model, to } => {
            environments::rollback(&paths, model.as_deref(), &to, json).await
        }
        Command::Clean { all } => commands::clean(&paths, all, json),
        Command::Docs { out, serve, listen } => {
            let serve = serve.then_some(listen.as_str());
            commands::docs(&paths, out.as_deref(), serve, json).await
        }
    }
}
