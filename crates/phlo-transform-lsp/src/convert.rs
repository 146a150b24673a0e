//! Between the live workspace's terms and the protocol's: positions in the negotiated
//! encoding, file URIs, diagnostics.

use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, InitializeParams, Location, NumberOrString,
    PositionEncodingKind, Url,
};
use phlo_transform_core::{Diagnostic, Severity};
use phlo_transform_live::{FileRange, LiveWorkspace, Position, Range};

/// How the client counts a line's characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// UTF-16 code units: the protocol's default.
    Utf16,
    /// Characters, as the compiler counts them: chosen when the client offers it.
    Utf32,
}

impl Encoding {
    pub(crate) fn negotiate(params: &InitializeParams) -> Encoding {
        let offered = params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_ref());
        match offered {
            Some(kinds) if kinds.contains(&PositionEncodingKind::UTF32) => Encoding::Utf32,
            _ => Encoding::Utf16,
        }
    }

    pub(crate) fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }
}

/// A file's text, to count its characters: the editor's buffer, the compiled model's, else
/// the disk's.
pub(crate) struct Text(String);

impl Text {
    pub(crate) fn of(live: &LiveWorkspace, rel: &str) -> Text {
        let snapshot = live.snapshot();
        let text = snapshot
            .text(rel)
            .map(str::to_string)
            .or_else(|| std::fs::read_to_string(live.root().join(rel)).ok())
            .unwrap_or_default();
        Text(text)
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    fn line(&self, n: usize) -> &str {
        self.0.lines().nth(n).unwrap_or("")
    }

    /// The protocol's position of character position `p`.
    pub(crate) fn encode(&self, encoding: Encoding, p: Position) -> lsp_types::Position {
        let column = match encoding {
            Encoding::Utf32 => p.column,
            Encoding::Utf16 => self
                .line(p.line)
                .chars()
                .take(p.column)
                .map(char::len_utf16)
                .sum(),
        };
        lsp_types::Position::new(p.line as u32, column as u32)
    }

    /// The character position of the protocol's position `p`.
    pub(crate) fn decode(&self, encoding: Encoding, p: lsp_types::Position) -> Position {
        let (line, column) = (p.line as usize, p.character as usize);
        let column = match encoding {
            Encoding::Utf32 => column,
            Encoding::Utf16 => {
                let mut units = 0;
                self.line(line)
                    .chars()
                    .take_while(|ch| {
                        units += ch.len_utf16();
                        units <= column
                    })
                    .count()
            }
        };
        Position { line, column }
    }

    pub(crate) fn range(&self, encoding: Encoding, r: Range) -> lsp_types::Range {
        lsp_types::Range::new(self.encode(encoding, r.start), self.encode(encoding, r.end))
    }
}

pub(crate) fn uri(live: &LiveWorkspace, rel: &str) -> Option<Url> {
    Url::from_file_path(live.root().join(rel)).ok()
}

pub(crate) fn location(
    live: &LiveWorkspace,
    encoding: Encoding,
    f: &FileRange,
) -> Option<Location> {
    let text = Text::of(live, &f.path);
    Some(Location::new(
        uri(live, &f.path)?,
        text.range(encoding, f.range),
    ))
}

/// The range a diagnostic is about: its span, else its line and column, else the file's start.
pub(crate) fn diagnostic_range(d: &Diagnostic) -> Range {
    if let Some(span) = &d.span {
        return Range::of_span(span);
    }
    let start = Position {
        line: d.line.unwrap_or(1).saturating_sub(1),
        column: d.column.unwrap_or(1).saturating_sub(1),
    };
    Range { start, end: start }
}

/// `d` for the client: its code, range and message; its help and notes as related
/// information on the same range; its suggestions as `data` for code actions.
pub(crate) fn diagnostic(
    d: &Diagnostic,
    uri: &Url,
    text: &Text,
    encoding: Encoding,
) -> lsp_types::Diagnostic {
    let range = text.range(encoding, diagnostic_range(d));
    let related: Vec<DiagnosticRelatedInformation> = d
        .help
        .iter()
        .map(|h| format!("help: {h}"))
        .chain(d.notes.iter().map(|n| format!("note: {n}")))
        .map(|message| DiagnosticRelatedInformation {
            location: Location::new(uri.clone(), range),
            message,
        })
        .collect();
    let mut message = d.message.clone();
    if let Some(label) = &d.label {
        message.push_str(&format!(" ({label})"));
    }
    lsp_types::Diagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.0.to_string())),
        source: Some("phlo-transform".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        data: (!d.suggestions.is_empty())
            .then(|| serde_json::json!({ "suggestions": d.suggestions })),
        ..Default::default()
    }
}
