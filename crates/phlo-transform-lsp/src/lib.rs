//! The language server (SPEC §85–88): the Language Server Protocol over stdio, every answer
//! read from one [`LiveWorkspace`]. Buffers are synchronised by ranges; changes are debounced
//! ([`DEBOUNCE`]) and always applied before a request is answered, so an answer never lags
//! an edit the client sent before it.

mod commands;
mod context;
mod convert;
mod handlers;
mod publish;
mod session;

use lsp_server::Connection;
use lsp_types::{InitializeParams, ServerCapabilities};
use phlo_transform_live::LiveWorkspace;
use std::path::{Path, PathBuf};

pub use commands::{Commands, PLAN_COMMAND};
use context::Context;
use convert::Encoding;
use session::Session;
pub use session::DEBOUNCE;

/// Serves one client over stdin/stdout until it exits. The workspace is the client's root
/// folder, else `root`.
pub fn serve_stdio(
    root: &Path,
    adapter: Option<&str>,
    commands: Box<dyn Commands>,
) -> Result<(), String> {
    let (connection, io) = Connection::stdio();
    serve(&connection, root, adapter, commands)?;
    drop(connection);
    io.join()
        .map_err(|e| format!("the language server's input/output failed: {e}"))
}

fn serve(
    connection: &Connection,
    root: &Path,
    adapter: Option<&str>,
    commands: Box<dyn Commands>,
) -> Result<(), String> {
    let protocol = |e: lsp_server::ProtocolError| format!("language server protocol: {e}");
    let (id, params) = connection.initialize_start().map_err(protocol)?;
    let params: InitializeParams =
        serde_json::from_value(params).map_err(|e| format!("initialize: {e}"))?;
    let encoding = Encoding::negotiate(&params);
    let root = client_root(&params).unwrap_or_else(|| root.to_path_buf());
    let result = serde_json::json!({
        "capabilities": capabilities(encoding),
        "serverInfo": {"name": "phlo-transform", "version": env!("CARGO_PKG_VERSION")},
    });
    connection.initialize_finish(id, result).map_err(protocol)?;
    let live = match LiveWorkspace::open(&root, adapter) {
        Ok(live) => live,
        Err(d) => {
            publish::show_error(connection, &d);
            return Err(format!("{}: {}", d.code.0, d.message));
        }
    };
    let context = Context {
        live,
        encoding,
        commands,
    };
    let mut session = Session::new(connection, context);
    session.publish();
    session.run().map_err(protocol)
}

/// The workspace folder the client opened.
fn client_root(params: &InitializeParams) -> Option<PathBuf> {
    let folder = params
        .workspace_folders
        .as_ref()
        .and_then(|f| f.first())
        .map(|f| f.uri.clone());
    #[allow(deprecated)]
    let uri = folder.or_else(|| params.root_uri.clone())?;
    uri.to_file_path().ok()
}

fn capabilities(encoding: Encoding) -> ServerCapabilities {
    use lsp_types::*;
    ServerCapabilities {
        position_encoding: Some(encoding.kind()),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                ..Default::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".into()]),
            ..Default::default()
        }),
        rename_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![PLAN_COMMAND.into()],
            ..Default::default()
        }),
        ..Default::default()
    }
}
