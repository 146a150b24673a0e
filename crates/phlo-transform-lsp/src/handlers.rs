//! One function per request: decode the position, ask the live workspace, encode the answer.

use lsp_server::{ErrorCode, Request, Response};
use lsp_types::request::{
    CodeActionRequest, Completion, ExecuteCommand, GotoDefinition, HoverRequest, References,
    Rename, Request as _,
};
use lsp_types::*;
use phlo_transform_live::{CompletionKind, FileRange};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;

use crate::context::Context;
use crate::convert::{self, Text};

pub(crate) fn handle(server: &Context, request: Request) -> Response {
    let id = request.id.clone();
    let answer = match request.method.as_str() {
        HoverRequest::METHOD => with(request, |p: HoverParams| hover(server, p)),
        GotoDefinition::METHOD => with(request, |p: GotoDefinitionParams| definition(server, p)),
        References::METHOD => with(request, |p: ReferenceParams| references(server, p)),
        Completion::METHOD => with(request, |p: CompletionParams| completion(server, p)),
        Rename::METHOD => with(request, |p: RenameParams| rename(server, p)),
        CodeActionRequest::METHOD => with(request, |p: CodeActionParams| code_actions(p)),
        ExecuteCommand::METHOD => with(request, |p: ExecuteCommandParams| execute(server, p)),
        _ => Err((
            ErrorCode::MethodNotFound,
            format!("unknown request `{}`", request.method),
        )),
    };
    match answer {
        Ok(value) => Response::new_ok(id, value),
        Err((code, message)) => Response::new_err(id, code as i32, message),
    }
}

type Answer = Result<serde_json::Value, (ErrorCode, String)>;

fn with<P: DeserializeOwned, R: Serialize>(
    request: Request,
    f: impl FnOnce(P) -> Result<R, (ErrorCode, String)>,
) -> Answer {
    let params: P = serde_json::from_value(request.params)
        .map_err(|e| (ErrorCode::InvalidParams, format!("{}: {e}", request.method)))?;
    let result = f(params)?;
    serde_json::to_value(result).map_err(|e| (ErrorCode::InternalError, e.to_string()))
}

/// The workspace-relative file and character position of a request's position.
fn at(
    server: &Context,
    p: &TextDocumentPositionParams,
) -> Option<(String, phlo_transform_live::Position)> {
    let rel = server.relative(&p.text_document.uri)?;
    let text = Text::of(&server.live, &rel);
    let position = text.decode(server.encoding, p.position);
    Some((rel, position))
}

fn hover(server: &Context, p: HoverParams) -> Result<Option<Hover>, (ErrorCode, String)> {
    let Some((rel, position)) = at(server, &p.text_document_position_params) else {
        return Ok(None);
    };
    let snapshot = server.live.snapshot();
    let Some((markdown, range)) = phlo_transform_live::hover(&snapshot.compilation, &rel, position)
    else {
        return Ok(None);
    };
    let text = Text::of(&server.live, &rel);
    Ok(Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: markdown,
        }),
        range: Some(text.range(server.encoding, range)),
    }))
}

fn locations(server: &Context, ranges: Vec<FileRange>) -> Vec<Location> {
    ranges
        .iter()
        .filter_map(|f| convert::location(&server.live, server.encoding, f))
        .collect()
}

fn definition(
    server: &Context,
    p: GotoDefinitionParams,
) -> Result<Option<GotoDefinitionResponse>, (ErrorCode, String)> {
    let Some((rel, position)) = at(server, &p.text_document_position_params) else {
        return Ok(None);
    };
    let snapshot = server.live.snapshot();
    let found = phlo_transform_live::definition(&snapshot.compilation, &rel, position);
    let found = locations(server, found);
    Ok((!found.is_empty()).then_some(GotoDefinitionResponse::Array(found)))
}

fn references(
    server: &Context,
    p: ReferenceParams,
) -> Result<Option<Vec<Location>>, (ErrorCode, String)> {
    let Some((rel, position)) = at(server, &p.text_document_position) else {
        return Ok(None);
    };
    let snapshot = server.live.snapshot();
    let found = phlo_transform_live::references(&snapshot.compilation, &rel, position);
    Ok(Some(locations(server, found)))
}

fn completion(
    server: &Context,
    p: CompletionParams,
) -> Result<Option<CompletionResponse>, (ErrorCode, String)> {
    let Some((rel, position)) = at(server, &p.text_document_position) else {
        return Ok(None);
    };
    let snapshot = server.live.snapshot();
    let text = Text::of(&server.live, &rel);
    let (items, cut) =
        phlo_transform_live::completions(&snapshot.compilation, &rel, text.as_str(), position);
    let items = items
        .into_iter()
        .map(|c| CompletionItem {
            label: c.label,
            kind: Some(match c.kind {
                CompletionKind::Model => CompletionItemKind::MODULE,
                CompletionKind::Source => CompletionItemKind::FILE,
                CompletionKind::Column => CompletionItemKind::FIELD,
            }),
            detail: Some(c.detail),
            ..Default::default()
        })
        .collect();
    Ok(Some(CompletionResponse::List(CompletionList {
        is_incomplete: cut,
        items,
    })))
}

fn rename(server: &Context, p: RenameParams) -> Result<Option<WorkspaceEdit>, (ErrorCode, String)> {
    let Some((rel, position)) = at(server, &p.text_document_position) else {
        return Ok(None);
    };
    let snapshot = server.live.snapshot();
    let edits = phlo_transform_live::rename_at(&snapshot.compilation, &rel, position, &p.new_name)
        .map_err(|reason| (ErrorCode::RequestFailed, reason))?;
    let uri = |path: &str| {
        convert::uri(&server.live, path)
            .ok_or_else(|| (ErrorCode::InternalError, format!("no URI for `{path}`")))
    };
    let mut by_file: std::collections::BTreeMap<String, Vec<OneOf<TextEdit, AnnotatedTextEdit>>> =
        Default::default();
    for (f, new_text) in &edits.edits {
        let text = Text::of(&server.live, &f.path);
        by_file
            .entry(f.path.clone())
            .or_default()
            .push(OneOf::Left(TextEdit {
                range: text.range(server.encoding, f.range),
                new_text: new_text.clone(),
            }));
    }
    let mut operations = Vec::new();
    for (path, edits) in by_file {
        operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier {
                uri: uri(&path)?,
                version: None,
            },
            edits,
        }));
    }
    operations.push(DocumentChangeOperation::Op(ResourceOp::Rename(
        RenameFile {
            old_uri: uri(&edits.from)?,
            new_uri: uri(&edits.to)?,
            options: None,
            annotation_id: None,
        },
    )));
    Ok(Some(WorkspaceEdit {
        document_changes: Some(DocumentChanges::Operations(operations)),
        ..Default::default()
    }))
}

/// A quick fix per suggestion a diagnostic carries (did-you-mean): its range replaced by it.
fn code_actions(p: CodeActionParams) -> Result<Option<CodeActionResponse>, (ErrorCode, String)> {
    let mut actions = Vec::new();
    for d in &p.context.diagnostics {
        let suggestions = d
            .data
            .as_ref()
            .and_then(|data| data.get("suggestions"))
            .and_then(|s| s.as_array())
            .cloned()
            .unwrap_or_default();
        for s in suggestions.iter().filter_map(|s| s.as_str()) {
            let edit = TextEdit {
                range: d.range,
                new_text: s.to_string(),
            };
            let changes = HashMap::from([(p.text_document.uri.clone(), vec![edit])]);
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("Replace with `{s}`"),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![d.clone()]),
                edit: Some(WorkspaceEdit {
                    changes: Some(changes),
                    ..Default::default()
                }),
                ..Default::default()
            }));
        }
    }
    Ok(Some(actions))
}

/// `phlo-transform.plan` with the URI of a model's file (a string, or `{"uri": …}`): the plan
/// preview of that model, the document `plan -s <model> --json` prints. A plan that cannot
/// be made is an error response carrying the first diagnostic's code and message.
fn execute(
    server: &Context,
    p: ExecuteCommandParams,
) -> Result<serde_json::Value, (ErrorCode, String)> {
    let invalid = |message: String| (ErrorCode::InvalidParams, message);
    if p.command != crate::commands::PLAN_COMMAND {
        return Err(invalid(format!(
            "unknown command `{}`; the server runs `{}`",
            p.command,
            crate::commands::PLAN_COMMAND
        )));
    }
    let uri = p
        .arguments
        .first()
        .and_then(|a| a.as_str().or_else(|| a.get("uri")?.as_str()))
        .and_then(|u| Url::parse(u).ok())
        .ok_or_else(|| invalid(format!("{}: pass the URI of a model's file", p.command)))?;
    let rel = server
        .relative(&uri)
        .ok_or_else(|| invalid(format!("{uri} is not in the workspace")))?;
    let published = server.live.snapshot();
    let c = &published.compilation;
    let model = c
        .models
        .iter()
        .find(|m| m.path == rel)
        .ok_or_else(|| invalid(format!("{rel} is not a model's file")))?;
    server
        .commands
        .plan(server.live.root(), c, model.name.as_str())
        .map_err(|diagnostics| {
            let first = diagnostics
                .iter()
                .find(|d| d.is_error())
                .or(diagnostics.first());
            let message = first.map_or_else(
                || "the plan could not be made".to_string(),
                |d| format!("error[{}]: {}", d.code, d.message),
            );
            (ErrorCode::RequestFailed, message)
        })
}
