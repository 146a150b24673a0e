//! `phlo-transform mcp` (SPEC §84): the agents' questions as Model Context Protocol tools
//! over stdio. One process holds the live compilation (reloaded when the files change, as
//! the daemon's is) and answers each tool with the daemon's read of the same question, so a
//! tool's result is the document `--json` prints.

mod stdio;
mod tools;

use crate::context::Context;
use crate::watch;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::target::WorkspaceFiles;
use phlo_transform_live::LiveWorkspace;
use rmcp::ServiceExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How the MCP server is started.
pub struct McpConfig {
    pub files: WorkspaceFiles,
    /// `--adapter`.
    pub adapter: Option<String>,
    /// How often the workspace's files are checked for changes.
    pub poll: Duration,
}

/// Serves MCP on stdin/stdout until the client closes stdin. Must be called outside the
/// runtime's async context (the command line calls it in `spawn_blocking`).
pub fn serve_mcp(config: McpConfig, runtime: tokio::runtime::Handle) -> Result<(), Diagnostic> {
    let live = LiveWorkspace::open(&config.files.root, config.adapter.as_deref())?;
    let cx = Arc::new(Context::new(
        config.files,
        config.adapter,
        live,
        runtime.clone(),
    ));
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        Diagnostic::error(codes::INVALID_CONFIG, format!("{what}: {e}"))
            .with_help("the machine is out of threads or memory, or the client closed the pipe")
    };
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch::spawn(cx.clone(), config.poll, stop.clone())
        .map_err(|e| failed("cannot start the file watcher", &e))?;
    let (transport, output) =
        stdio::bridge(runtime.clone()).map_err(|e| failed("cannot bridge stdio", &e))?;
    let served = runtime.block_on(async {
        let service = tools::Agent::new(cx)
            .serve(transport)
            .await
            .map_err(|e| failed("the MCP handshake failed", &e))?;
        service
            .waiting()
            .await
            .map_err(|e| failed("the MCP session ended abnormally", &e))
    });
    stop.store(true, Ordering::Relaxed);
    let _ = output.join();
    let _ = watcher.join();
    served.map(|_| ())
}
