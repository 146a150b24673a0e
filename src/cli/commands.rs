//! One function per command. Each builds its report, prints it (text or JSON) and returns
//! the exit code.

use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::{ArtifactDir, Compilation};
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::command::{PlanCommand, PlanRequest};
use phlo_transform_exec::inspect_command::{self, InspectOptions, Inspected};
use phlo_transform_exec::plan_command::{self, Planned};
use phlo_transform_plan::{CompileErrorBlocking, SelectorSpec};

use super::execute::{CommandLine, Execution, ExecutionArgs};
use super::render::{Output, Report};
use super::{
    compile, compile_refreshed, open_state, render, Paths, EXIT_ERRORS, EXIT_FAILURES, EXIT_OK,
};

pub(super) use super::render::{fatal, fatal_all};

/// The workspace's artifact directory (`.phlo/transform/`).
fn artifacts(paths: &Paths) -> ArtifactDir {
    ArtifactDir::new(&paths.artifacts)
}

/// manifest.json and graph.json, and the lineage documents when `lineage` says so.
fn write_compile_artifacts(
    paths: &Paths,
    c: &Compilation,
    lineage: LineageArtifacts,
) -> Result<(), Diagnostic> {
    phlo_transform_openlineage::write_compile_artifacts(
        &artifacts(paths),
        c,
        &paths.warehouse,
        lineage,
    )
}

/// lineage.json and openlineage.json, unless they are current or `wanted` says not to create
/// them.
pub(super) fn write_lineage_artifacts(
    paths: &Paths,
    c: &Compilation,
    wanted: LineageArtifacts,
) -> Result<(), Diagnostic> {
    phlo_transform_openlineage::write_lineage_artifacts(
        &artifacts(paths),
        c,
        &paths.warehouse,
        wanted,
    )
}

/// Compiles, shows the diagnostics, and returns the compilation (with the output holding
/// its warnings for the report) if it has no errors.
pub(super) fn compile_or_report(
    paths: &Paths,
    json: bool,
) -> Result<(&'static Compilation, Output<'static>), u8> {
    let c = compile(paths).map_err(|d| fatal(d, json))?;
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    if c.has_errors() {
        return Err(compile_failed(c, out));
    }
    Ok((c, out))
}

/// A command a compile error stopped (its diagnostics already given to `out`): `--json`
/// prints the `check` report with them.
fn compile_failed(c: &Compilation, out: Output) -> u8 {
    if out.json() {
        out.report(&c.check_report());
    } else {
        eprintln!(
            "error: compilation failed: {}",
            render::summary_line(&c.counts())
        );
    }
    EXIT_ERRORS
}

/// The language server, until the editor exits. What goes wrong before it can serve is on
/// stderr (stdout is the protocol's).
pub async fn lsp(paths: &Paths) -> u8 {
    let commands = LspCommands {
        files: workspace_files(paths),
        adapter: paths.adapter.clone(),
        runtime: tokio::runtime::Handle::current(),
    };
    let (root, adapter) = (paths.root.clone(), paths.adapter.clone());
    let served = tokio::task::spawn_blocking(move || {
        phlo_transform_lsp::serve_stdio(&root, adapter.as_deref(), Box::new(commands))
    })
    .await;
    match served {
        Ok(Ok(())) => EXIT_OK,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            EXIT_ERRORS
        }
        Err(e) => {
            eprintln!("error: the language server stopped unexpectedly: {e}");
            EXIT_ERRORS
        }
    }
}

/// The language server's commands, over the library's plan preview.
struct LspCommands {
    files: phlo_transform_exec::target::WorkspaceFiles,
    adapter: Option<String>,
    runtime: tokio::runtime::Handle,
}

impl phlo_transform_lsp::Commands for LspCommands {
    fn plan(
        &self,
        root: &std::path::Path,
        c: &phlo_transform_compiler::Compilation,
        model: &str,
    ) -> Result<serde_json::Value, Vec<phlo_transform_core::Diagnostic>> {
        // The editor's workspace folder, when it is not `-C`'s, keeps its own default state.
        let other;
        let files = if root == self.files.root {
            &self.files
        } else {
            other = phlo_transform_exec::target::WorkspaceFiles::new(root, None)
                .map_err(|d| vec![d])?;
            &other
        };
        let target = files.target(self.adapter.as_deref(), None);
        self.runtime
            .block_on(phlo_transform_exec::plan_command::preview_model(
                c, &target, model,
            ))
    }
}

/// The daemon, until Ctrl-C or SIGTERM. What stops it from starting is on stderr (stdout
/// carries the address it listens on).
pub async fn daemon(
    paths: &Paths,
    listen: String,
    token: Option<String>,
    poll: std::time::Duration,
) -> u8 {
    let config = phlo_transform_daemon::DaemonConfig {
        files: workspace_files(paths),
        adapter: paths.adapter.clone(),
        listen,
        token,
        poll,
    };
    let runtime = tokio::runtime::Handle::current();
    let stopped = async {
        if let Some(mut signals) = super::execute::Signals::new() {
            signals.next().await;
        }
    };
    served(
        "daemon",
        tokio::task::spawn_blocking(move || phlo_transform_daemon::serve(config, runtime, stopped))
            .await,
    )
}

/// The MCP server, until the client closes stdin. stdout is the protocol's; what stops it
/// from starting is on stderr.
pub async fn mcp(paths: &Paths, poll: std::time::Duration) -> u8 {
    let config = phlo_transform_daemon::mcp::McpConfig {
        files: workspace_files(paths),
        adapter: paths.adapter.clone(),
        poll,
    };
    let runtime = tokio::runtime::Handle::current();
    served(
        "MCP server",
        tokio::task::spawn_blocking(move || phlo_transform_daemon::mcp::serve_mcp(config, runtime))
            .await,
    )
}

fn workspace_files(paths: &Paths) -> phlo_transform_exec::target::WorkspaceFiles {
    phlo_transform_exec::target::WorkspaceFiles {
        root: paths.root.clone(),
        artifacts: paths.artifacts.clone(),
        warehouse: paths.warehouse.clone(),
        state: paths.state.clone(),
    }
}

/// The exit code of a server that ran on a blocking thread.
fn served(
    what: &str,
    result: Result<Result<(), phlo_transform_core::Diagnostic>, tokio::task::JoinError>,
) -> u8 {
    match result {
        Ok(Ok(())) => EXIT_OK,
        Ok(Err(d)) => {
            eprintln!("error[{}]: {}", d.code, d.message);
            EXIT_ERRORS
        }
        Err(e) => {
            eprintln!("error: the {what} stopped unexpectedly: {e}");
            EXIT_ERRORS
        }
    }
}

pub async fn check(paths: &Paths, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let _ = write_compile_artifacts(paths, c, LineageArtifacts::RefreshExisting);
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    out.report(&c.check_report());
    if c.has_errors() {
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

pub async fn list(paths: &Paths, spec: &SelectorSpec, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let report = match phlo_transform_exec::planning::list(c, &paths.target(), spec).await {
        Ok(report) => report,
        Err(diags) => return fatal_all(diags, json),
    };
    // `list` shows the models; its diagnostics only travel in the JSON envelope.
    let mut out = Output::new(json);
    if json {
        out.diagnostics(c.diagnostics.iter().cloned());
    }
    out.report(&report);
    if c.has_errors() {
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

pub async fn inspect(paths: &Paths, name: &str, options: InspectOptions, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let inspected = match inspect_command::inspect(c, &paths.target(), name, options).await {
        Ok(inspected) => inspected,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    match &inspected {
        // A model's own diagnostics only travel in the JSON envelope; a source's are shown.
        Inspected::Model(report) => {
            if json {
                out.diagnostics(inspected.diagnostics(c));
            }
            out.report(report.as_ref());
        }
        Inspected::Source(report) => {
            out.diagnostics(inspected.diagnostics(c));
            out.report(report);
        }
        Inspected::Sql(report) => Output::new(json).report(report),
    }
    EXIT_OK
}

pub async fn plan(paths: &Paths, spec: &SelectorSpec, json: bool) -> u8 {
    let c = match compile_refreshed(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    let artifacts = artifacts(paths);
    let front = CommandLine::for_plan(paths, c, out);
    let request = plan_command::Request {
        compilation: c,
        target: paths.target(),
        artifacts: &artifacts,
        spec,
    };
    let planned = plan_command::plan(request, &front).await;
    let out = front.into_output();
    match planned {
        Ok(Planned::Plan(p)) => {
            out.report(p.as_ref());
            EXIT_OK
        }
        Ok(Planned::Blocked(blocked)) => {
            if out.json() {
                out.report(&blocked);
            } else {
                eprint!("{}", blocked.human());
                eprintln!(
                    "error: compilation failed: {}",
                    render::summary_line(&c.counts())
                );
            }
            EXIT_ERRORS
        }
        Err(diags) => out.fail(diags),
    }
}

pub async fn run(
    paths: &Paths,
    exec: Execution,
    spec: &SelectorSpec,
    full_refresh: bool,
    json: bool,
) -> u8 {
    // Compile errors block the models they reach; the rest of the selection still runs, and
    // the exit code is 2 when a selected model was blocked (SPEC §63).
    let c = match compile_refreshed(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    let blocking =
        phlo_transform_exec::planning::compile_error_blocking(c, &paths.target(), spec).await;
    let blocked = match blocking {
        // Nothing selected can run: refused, as for a workspace that does not compile.
        Ok(CompileErrorBlocking::All) => return compile_failed(c, out),
        Ok(blocking) => blocking == CompileErrorBlocking::Part,
        Err(diags) => return out.fail(diags),
    };
    let command = PlanCommand::Run { full_refresh };
    let code = execute_plan(paths, c, exec, out, command, spec).await;
    if blocked && code != EXIT_ERRORS {
        if !json {
            eprintln!(
                "error: compile errors blocked part of the selection: {}",
                render::summary_line(&c.counts())
            );
        }
        return EXIT_ERRORS;
    }
    code
}

/// Executes exactly the stored plan `plan_id`, or rejects it as stale when planning again now
/// gives a different plan (model files, configuration, dependencies, source states or recorded
/// versions changed since it was made). The plan is made again with the stored plan's
/// selection unless `spec` gives another.
pub async fn apply(
    paths: &Paths,
    plan_id: &str,
    exec: Execution,
    spec: Option<SelectorSpec>,
    json: bool,
) -> u8 {
    let (c, out) = match compile_or_report(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let stored = match open_state(paths).await {
        Ok(store) => PlanCommand::apply(store.as_ref(), plan_id).await,
        Err(d) => Err(d),
    };
    let (command, stored_spec) = match stored {
        Ok(stored) => stored,
        Err(d) => return out.fail([d]),
    };
    let spec = spec.unwrap_or(stored_spec);
    execute_plan(paths, c, exec, out, command, &spec).await
}

pub async fn test(paths: &Paths, spec: &SelectorSpec, json: bool) -> u8 {
    let (c, out) = match compile_or_report(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let exec = Execution::new(ExecutionArgs::default());
    execute_plan(paths, c, exec, out, PlanCommand::Test, spec).await
}

/// `run`, `apply`, `test`: one library call, shown as it goes by [`CommandLine`], then its
/// report.
async fn execute_plan(
    paths: &Paths,
    c: &'static Compilation,
    exec: Execution,
    out: Output<'_>,
    command: PlanCommand,
    spec: &SelectorSpec,
) -> u8 {
    let store = match open_state(paths).await {
        Ok(s) => s,
        Err(d) => return out.fail([d]),
    };
    let artifacts = artifacts(paths);
    let front = CommandLine::new(paths, c, &exec, command.builds(), out);
    let request = PlanRequest {
        compilation: c,
        target: paths.target(),
        store,
        artifacts: &artifacts,
        command,
        spec,
        options: exec.options(),
    };
    let executed = phlo_transform_exec::command::execute_plan(request, &front).await;
    let mut out = front.into_output();
    let executed = match executed {
        Ok(executed) => executed,
        Err(diags) => return out.fail(diags),
    };
    if let Some(d) = executed.artifacts {
        out.diagnostics([d]);
    }
    // With --events the `run_finished` event already carried the report.
    if !exec.args.events {
        out.report(&executed.report);
    }
    if executed.report.failed() {
        EXIT_FAILURES
    } else {
        EXIT_OK
    }
}

pub fn clean(paths: &Paths, all: bool, json: bool) -> u8 {
    let artifacts = artifacts(paths);
    let cleaned = phlo_transform_exec::clean::clean(
        &paths.root,
        &paths.warehouse,
        &artifacts,
        &paths.state,
        all,
    );
    match cleaned {
        Ok(report) => {
            Output::new(json).report(&report);
            EXIT_OK
        }
        Err(d) => fatal(d, json),
    }
}

pub fn init(dir: &std::path::Path, json: bool) -> u8 {
    match phlo_transform_project::init::init(dir) {
        Ok(report) => {
            Output::new(json).report(&report);
            EXIT_OK
        }
        Err(d) => fatal(d, json),
    }
}

/// `import dbt`: the report, every construct left out a warning (P017); exit 0 when the
/// workspace was written.
pub fn import_dbt(project: &std::path::Path, out_dir: &std::path::Path, json: bool) -> u8 {
    match phlo_transform_project::dbt_import::import(project, out_dir) {
        Ok(imported) => {
            let mut out = Output::new(json);
            out.diagnostics(imported.diagnostics);
            out.report(&imported.report);
            EXIT_OK
        }
        Err(d) => fatal(d, json),
    }
}

/// Exit 2 when a file does not parse or could not be written, else 1 when `--check` found a
/// file to change, else 0.
pub fn fmt(paths: &Paths, targets: &[String], check: bool, json: bool) -> u8 {
    let ws = match phlo_transform_project::Workspace::load(&paths.root) {
        Ok(ws) => ws,
        Err(d) => return fatal(d, json),
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| paths.root.clone());
    let request = phlo_transform_format::Request {
        workspace: &ws,
        targets,
        cwd: &cwd,
        check,
    };
    let (report, diagnostics) = match phlo_transform_format::format_workspace(request) {
        Ok(done) => done,
        Err(diags) => return fatal_all(diags, json),
    };
    let errors = diagnostics.iter().any(Diagnostic::is_error);
    let mut out = Output::new(json).with_workspace(&ws);
    out.diagnostics(diagnostics);
    out.report(&report);
    if errors {
        EXIT_ERRORS
    } else if report.would_change() {
        EXIT_FAILURES
    } else {
        EXIT_OK
    }
}

/// `docs [--out DIR]`: the site is written even when some models have errors (their pages
/// say so); the errors are shown.
/// `docs [--out DIR] [--serve [--listen HOST:PORT]]`: the site written, then served until
/// Ctrl-C when asked.
pub async fn docs(
    paths: &Paths,
    out_dir: Option<&std::path::Path>,
    serve: Option<&str>,
    json: bool,
) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    let dir = out_dir
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| phlo_transform_exec::docs::default_out(&paths.artifacts));
    match phlo_transform_exec::docs::docs(c, &paths.target(), &dir).await {
        Ok(report) => out.report(&report),
        Err(d) => return out.fail([d]),
    }
    let Some(listen) = serve else {
        return EXIT_OK;
    };
    let (listen, runtime) = (listen.to_string(), tokio::runtime::Handle::current());
    let stopped = async {
        if let Some(mut signals) = super::execute::Signals::new() {
            signals.next().await;
        }
    };
    served(
        "docs server",
        tokio::task::spawn_blocking(move || {
            phlo_transform_daemon::site::serve(&dir, &listen, runtime, stopped)
        })
        .await,
    )
}
