//! `phlo-transform daemon` (SPEC §85, docs/daemon.md): one long-running process over one
//! live compilation ([`phlo_transform_live::LiveWorkspace`], reloaded when the files change)
//! and the state store, serving a local HTTP API:
//!
//! - reads (`GET /v1/...`, [`reads`]): the documents the commands print with `--json`;
//! - operations (`POST /v1/operations`, [`operations`]): run, test, resume, retry_failed and
//!   reload, journaled, one at a time, cancellable;
//! - `phlo-transform mcp` ([`mcp`]): the agents' questions as MCP tools over stdio, each
//!   answered by one of the reads;
//! - `docs --serve` ([`site`]): the generated documentation site served read-only.
//!
//! Every answer comes from the library call the command line makes; this crate decodes,
//! routes and encodes. Bound to 127.0.0.1 unless told otherwise; `--token` guards all but
//! `/status`.

mod api_error;
mod context;
mod document;
mod http;
pub mod mcp;
mod openapi;
mod operations;
mod reads;
mod routes;
pub mod site;
mod watch;

pub use routes::{Route, ROUTES};

use context::Context;
use operations::{Operations, Worker};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::target::WorkspaceFiles;
use phlo_transform_live::LiveWorkspace;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Request threads: reads run at once; operations run on their own thread.
const REQUEST_THREADS: usize = 4;

/// How the daemon is started.
pub struct DaemonConfig {
    pub files: WorkspaceFiles,
    /// `--adapter`.
    pub adapter: Option<String>,
    /// `host:port` to listen on (port 0: any free port, printed at start).
    pub listen: String,
    /// Required as `Authorization: Bearer` on everything but `/status`.
    pub token: Option<String>,
    /// How often the workspace's files are checked for changes.
    pub poll: Duration,
}

/// Serves until `shutdown` resolves (Ctrl-C or SIGTERM for the command line): operations
/// still queued or running are then failed as interrupted (API009) and journaled so. Prints
/// `listening on http://<addr>` on stdout once it accepts requests. Must be called outside
/// the runtime's async context (the command line calls it in `spawn_blocking`).
pub fn serve(
    config: DaemonConfig,
    runtime: tokio::runtime::Handle,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), Diagnostic> {
    let live = LiveWorkspace::open(&config.files.root, config.adapter.as_deref())?;
    let (queue, queued) = std::sync::mpsc::channel();
    let journal = config.files.artifacts.join("operations.jsonl");
    let operations = Arc::new(Operations::open(&journal, queue)?);
    let server = tiny_http::Server::http(&config.listen).map_err(|e| {
        Diagnostic::error(
            codes::INVALID_CONFIG,
            format!("cannot listen on {}: {e}", config.listen),
        )
        .with_help("pass a free address with --listen (port 0 picks one)")
    })?;
    let server = Arc::new(server);
    let cx = Arc::new(Context::new(
        config.files,
        config.adapter,
        live,
        runtime.clone(),
    ));
    let daemon = Arc::new(routes::Daemon {
        cx: cx.clone(),
        operations: operations.clone(),
        token: config.token,
    });
    let spawn_failed = |e: std::io::Error| {
        Diagnostic::error(
            codes::INVALID_CONFIG,
            format!("cannot start the daemon's threads: {e}"),
        )
        .with_help("the machine is out of threads or memory")
    };
    let worker = Worker::spawn(cx.clone(), operations.clone(), queued).map_err(spawn_failed)?;
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch::spawn(cx.clone(), config.poll, stop.clone()).map_err(spawn_failed)?;
    let mut threads = Vec::new();
    for n in 0..REQUEST_THREADS {
        let (server, daemon) = (server.clone(), daemon.clone());
        let thread = std::thread::Builder::new()
            .name(format!("phlo-daemon-http-{n}"))
            .spawn(move || serve_requests(&server, &daemon))
            .map_err(spawn_failed)?;
        threads.push(thread);
    }
    if let Some(addr) = server.server_addr().to_ip() {
        println!("listening on http://{addr}");
        let _ = std::io::stdout().flush();
    }
    runtime.block_on(shutdown);
    stop.store(true, Ordering::Relaxed);
    operations.interrupt_all();
    for _ in 0..REQUEST_THREADS {
        server.unblock();
    }
    for thread in threads {
        let _ = thread.join();
    }
    let _ = watcher.join();
    // The worker may be inside a run being cancelled; the process ends without waiting
    // for it, its operation already journaled as interrupted.
    drop(worker);
    Ok(())
}

fn serve_requests(server: &tiny_http::Server, daemon: &routes::Daemon) {
    while let Ok(mut request) = server.recv() {
        let reply = match http::Call::read(&mut request) {
            Ok(call) => daemon.handle(&call),
            Err(e) => http::Reply::error(&e),
        };
        reply.send(request);
    }
}
