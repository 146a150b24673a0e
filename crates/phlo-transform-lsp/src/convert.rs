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

/// The byte offset in `text` of the protocol's position `p`: a character past its line's end
/// is the line's end, a line past the text's end is the text's end (what clients expect of
/// a position the server cannot place).
fn byte_offset(text: &str, encoding: Encoding, p: lsp_types::Position) -> usize {
    let mut start = 0;
    for _ in 0..p.line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let line = &text[start..];
    let line = &line[..line.find('\n').unwrap_or(line.len())];
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut units = 0;
    for (i, ch) in line.char_indices() {
        if units >= p.character as usize {
            return start + i;
        }
        units += match encoding {
            Encoding::Utf16 => ch.len_utf16(),
            Encoding::Utf32 => 1,
        };
    }
    start + line.len()
}

/// Applies one `textDocument/didChange` change to `text`: a range replaced, or (no range)
/// the whole text.
pub(crate) fn apply_change(
    text: &mut String,
    encoding: Encoding,
    change: lsp_types::TextDocumentContentChangeEvent,
) {
    match change.range {
        None => *text = change.text,
        Some(range) => {
            let start = byte_offset(text, encoding, range.start);
            let end = byte_offset(text, encoding, range.end).max(start);
            text.replace_range(start..end, &change.text);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position as P, Range as R, TextDocumentContentChangeEvent as Change};

    fn edit(text: &str, encoding: Encoding, range: (u32, u32, u32, u32), new: &str) -> String {
        let mut text = text.to_string();
        let range = R::new(P::new(range.0, range.1), P::new(range.2, range.3));
        apply_change(
            &mut text,
            encoding,
            Change {
                range: Some(range),
                range_length: None,
                text: new.into(),
            },
        );
        text
    }

    #[test]
    fn range_changes_count_in_the_negotiated_encoding() {
        let text = "select 'é😀' as a,\r\n  b\nfrom t\n";
        // After `'é😀` the UTF-16 column is 11 (the emoji is two units), the UTF-32 one 10.
        assert_eq!(
            edit(text, Encoding::Utf16, (0, 11, 0, 12), "!"),
            "select 'é😀! as a,\r\n  b\nfrom t\n"
        );
        assert_eq!(
            edit(text, Encoding::Utf32, (0, 10, 0, 11), "!"),
            "select 'é😀! as a,\r\n  b\nfrom t\n"
        );
        // Across lines, an insertion, and positions past a line's or the text's end.
        assert_eq!(
            edit(text, Encoding::Utf16, (1, 2, 2, 4), "c\nfrom u"),
            "select 'é😀' as a,\r\n  c\nfrom u t\n"
        );
        assert_eq!(edit("ab\n", Encoding::Utf16, (0, 1, 0, 1), "x"), "axb\n");
        assert_eq!(edit("ab\n", Encoding::Utf16, (0, 9, 0, 9), "c"), "abc\n");
        assert_eq!(edit("ab\n", Encoding::Utf16, (7, 0, 7, 0), "z"), "ab\nz");
    }
}
