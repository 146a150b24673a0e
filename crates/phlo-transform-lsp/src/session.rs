//! One client's session: the message loop, buffer changes debounced and compiled, the
//! diagnostics published after each compile.

use lsp_server::{Connection, Message, Notification, Request};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument, Notification as _,
};
use phlo_transform_live::BufferChange;
use std::collections::HashMap;
use std::time::Duration;

use crate::context::Context;
use crate::{handlers, publish};

/// How long edits wait for more edits before the workspace is compiled again: long enough to
/// gather the notifications an editor sends together (a paste, several cursors), short beside
/// the ≤ 50 ms an edit's diagnostics may take, now that an edit of a model's body compiles
/// only that model and its readers.
pub const DEBOUNCE: Duration = Duration::from_millis(10);

/// One client's session.
pub(crate) struct Session<'c> {
    connection: &'c Connection,
    context: Context,
    /// The diagnostics last sent, by workspace-relative file.
    published: publish::Sent,
    /// Buffer changes not compiled yet.
    pending: Vec<BufferChange>,
    /// Files changed on disk since the last compile.
    reload: bool,
    /// The text of every open document, changes applied as they arrive (the editor sends
    /// ranges, `TextDocumentSyncKind::INCREMENTAL`), by workspace-relative file.
    open: HashMap<String, String>,
}

impl<'c> Session<'c> {
    pub(crate) fn new(connection: &'c Connection, context: Context) -> Self {
        Session {
            connection,
            context,
            published: Default::default(),
            pending: Vec::new(),
            reload: false,
            open: HashMap::new(),
        }
    }

    pub(crate) fn run(&mut self) -> Result<(), lsp_server::ProtocolError> {
        loop {
            let waiting = !self.pending.is_empty() || self.reload;
            let message = if waiting {
                match self.connection.receiver.recv_timeout(DEBOUNCE) {
                    Ok(m) => m,
                    Err(crossbeam_timeout) if crossbeam_timeout.is_timeout() => {
                        self.flush();
                        continue;
                    }
                    Err(_) => return Ok(()),
                }
            } else {
                match self.connection.receiver.recv() {
                    Ok(m) => m,
                    Err(_) => return Ok(()),
                }
            };
            match message {
                Message::Request(request) => {
                    if self.connection.handle_shutdown(&request)? {
                        return Ok(());
                    }
                    self.flush();
                    self.respond(request);
                }
                Message::Notification(n) if n.method == "exit" => return Ok(()),
                Message::Notification(n) => self.notified(n),
                Message::Response(_) => {}
            }
        }
    }

    fn respond(&mut self, request: Request) {
        let response = handlers::handle(&self.context, request);
        let _ = self.connection.sender.send(Message::Response(response));
    }

    fn notified(&mut self, n: Notification) {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params)
                {
                    if let Some(path) = self.context.relative(&p.text_document.uri) {
                        self.open.insert(path.clone(), p.text_document.text);
                        self.set(path);
                    }
                }
            }
            DidChangeTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params)
                {
                    let Some(path) = self.context.relative(&p.text_document.uri) else {
                        return;
                    };
                    let encoding = self.context.encoding;
                    let text = self.open.entry(path.clone()).or_default();
                    for change in p.content_changes {
                        crate::convert::apply_change(text, encoding, change);
                    }
                    self.set(path);
                }
            }
            DidCloseTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params)
                {
                    if let Some(path) = self.context.relative(&p.text_document.uri) {
                        self.open.remove(&path);
                        self.pending.push(BufferChange::Close { path });
                    }
                }
            }
            DidSaveTextDocument::METHOD | DidChangeWatchedFiles::METHOD => self.reload = true,
            _ => {}
        }
    }

    /// The open document `path`'s text, to compile.
    fn set(&mut self, path: String) {
        let text = self.open.get(&path).cloned().unwrap_or_default();
        self.pending.push(BufferChange::Set { path, text });
    }

    /// Compiles the changes received, and publishes what changed.
    fn flush(&mut self) {
        if self.pending.is_empty() && !self.reload {
            return;
        }
        let changes = std::mem::take(&mut self.pending);
        if std::mem::take(&mut self.reload) {
            self.context.live.apply_and_reload(changes);
        } else {
            self.context.live.apply(changes);
        }
        self.publish();
    }

    pub(crate) fn publish(&mut self) {
        let c = &self.context;
        let snapshot = c.live.snapshot();
        publish::diagnostics(
            self.connection,
            &c.live,
            c.encoding,
            &snapshot,
            &mut self.published,
        );
    }
}
