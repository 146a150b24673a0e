//! `textDocument/publishDiagnostics`: every file whose diagnostics changed since the last
//! publication, including the files whose diagnostics went away.

use lsp_server::{Connection, Message, Notification};
use lsp_types::notification::{Notification as _, PublishDiagnostics, ShowMessage};
use phlo_transform_core::Diagnostic;
use phlo_transform_live::{LiveWorkspace, Published};
use std::collections::BTreeMap;

use crate::convert::{self, Encoding, Text};

/// The diagnostics last sent, by workspace-relative file.
pub(crate) type Sent = BTreeMap<String, Vec<lsp_types::Diagnostic>>;

/// Where a diagnostic without a file is shown: the workspace's configuration.
const WORKSPACE_FILE: &str = "phlo.toml";

pub(crate) fn diagnostics(
    connection: &Connection,
    live: &LiveWorkspace,
    encoding: Encoding,
    published: &Published,
    sent: &mut Sent,
) {
    let mut by_file: BTreeMap<String, Vec<&Diagnostic>> = BTreeMap::new();
    for d in &published.diagnostics {
        let file = d.file.clone().unwrap_or_else(|| WORKSPACE_FILE.into());
        by_file.entry(file).or_default().push(d);
    }
    let mut now: Sent = BTreeMap::new();
    for (file, ds) in &by_file {
        let Some(uri) = convert::uri(live, file) else {
            continue;
        };
        let text = Text::of(live, file);
        let converted = ds
            .iter()
            .map(|d| convert::diagnostic(d, &uri, &text, encoding))
            .collect();
        now.insert(file.clone(), converted);
    }
    let gone: Vec<String> = sent
        .keys()
        .filter(|f| !now.contains_key(*f))
        .cloned()
        .collect();
    for file in gone {
        send(connection, live, &file, Vec::new());
    }
    for (file, ds) in &now {
        if sent.get(file) != Some(ds) {
            send(connection, live, file, ds.clone());
        }
    }
    *sent = now;
}

fn send(connection: &Connection, live: &LiveWorkspace, file: &str, ds: Vec<lsp_types::Diagnostic>) {
    let Some(uri) = convert::uri(live, file) else {
        return;
    };
    let params = lsp_types::PublishDiagnosticsParams::new(uri, ds, None);
    let n = Notification::new(PublishDiagnostics::METHOD.into(), params);
    let _ = connection.sender.send(Message::Notification(n));
}

/// A message the editor shows when the workspace cannot be served at all.
pub(crate) fn show_error(connection: &Connection, d: &Diagnostic) {
    let mut message = format!("phlo-transform: {}: {}", d.code.0, d.message);
    if let Some(help) = &d.help {
        message.push_str(&format!(" (help: {help})"));
    }
    let params = lsp_types::ShowMessageParams {
        typ: lsp_types::MessageType::ERROR,
        message,
    };
    let n = Notification::new(ShowMessage::METHOD.into(), params);
    let _ = connection.sender.send(Message::Notification(n));
}
