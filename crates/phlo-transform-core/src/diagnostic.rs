//! Diagnostics are data (decision 9): a stable code, a severity, a location, a message, a help
//! line and suggestions. People get a rustc-like rendering, machines the same fields as JSON.

use annotate_snippets::{
    normalize_untrusted_str, AnnotationKind, Group, Level, Origin, Renderer, Snippet,
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A stable diagnostic code: one category letter and three digits (`R001`); the daemon's
/// HTTP API codes are `API` and three digits (`API015`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(pub &'static str);

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

/// Every code the tool emits, with its summary, help and explanation.
pub mod codes;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A 1-based line and column (columns count characters, as sqlparser does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Span {
    pub start: Location,
    pub end: Location,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    /// Workspace-relative path of the file concerned, when there is one.
    pub file: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub span: Option<Span>,
    /// A label for the span ("not found in this workspace").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub help: Option<String>,
    pub suggestions: Vec<String>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Error, message)
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Warning, message)
    }

    fn new(code: Code, severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity,
            message: message.into(),
            file: None,
            line: None,
            column: None,
            span: None,
            label: None,
            help: None,
            suggestions: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    pub fn with_span(mut self, span: Span) -> Self {
        self.line = Some(span.start.line);
        self.column = Some(span.start.column);
        self.span = Some(span);
        self
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn with_suggestions(mut self, suggestions: Vec<String>) -> Self {
        self.suggestions = suggestions;
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders like rustc. `source` is the text of `self.file`, when it could be read.
    ///
    /// The source, the message and every note are untrusted text (a model file, a name from
    /// it): annotate-snippets shows control characters as visible symbols (`␋`), so they
    /// neither reach the terminal nor skew the column arithmetic (0.11 underflowed on a long
    /// run of vertical tabs before the span: `fuzz/regressions/`).
    pub fn render(&self, source: Option<&str>) -> String {
        let level = match self.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
        };
        let mut group =
            Group::with_title(level.clone().primary_title(&self.message).id(self.code.0));
        let range = match (source, self.line, self.column) {
            (Some(src), Some(line), Some(column)) => {
                let start = byte_offset(src, line, column);
                let end = self
                    .span
                    .map(|s| byte_offset(src, s.end.line, s.end.column))
                    .filter(|&e| e > start)
                    .unwrap_or_else(|| point_end(src, start));
                Some(start..end)
            }
            _ => None,
        };
        match (source, &self.file, range) {
            (Some(src), Some(file), Some(range)) => {
                let annotation = AnnotationKind::Primary
                    .span(range)
                    .label(self.label.as_deref());
                group = group.element(
                    Snippet::source(src)
                        .line_start(1)
                        .path(file.as_str())
                        .fold(true)
                        .annotation(annotation),
                );
            }
            // Without a snippet, still say where (file or file:line:column).
            (_, Some(file), _) => {
                let mut origin = Origin::path(file.as_str());
                if let Some(line) = self.line {
                    origin = origin.line(line);
                    if let Some(column) = self.column {
                        origin = origin.char_column(column);
                    }
                }
                group = group.element(origin);
            }
            _ => {}
        }
        let footers = self
            .notes
            .iter()
            .map(|n| (Level::NOTE, n.clone()))
            .chain(
                (!self.suggestions.is_empty())
                    .then(|| format!("did you mean: {}", self.suggestions.join(", ")))
                    .map(|s| (Level::HELP, s)),
            )
            .chain(self.help.iter().map(|h| (Level::HELP, h.clone())));
        for (level, text) in footers {
            group = group.element(level.message(normalize_untrusted_str(&text)));
        }
        Renderer::plain().render(&[group])
    }
}

/// Byte offset of a 1-based line/column (columns in characters), clamped to the text.
fn byte_offset(src: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in src.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let chars = column.saturating_sub(1);
            return offset
                + l.char_indices()
                    .nth(chars)
                    .map(|(b, _)| b)
                    .unwrap_or(l.trim_end_matches('\n').len());
        }
        offset += l.len();
    }
    src.len()
}

/// The end of a one-character span at `start`; empty at a line end, so that pointing just past
/// a line's last character stays on that line instead of spanning into the next one.
fn point_end(src: &str, start: usize) -> usize {
    match src[start..].chars().next() {
        Some('\n' | '\r') | None => start,
        Some(c) => start + c.len_utf8(),
    }
}

/// An ordered collection of diagnostics with error counting.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(transparent)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn extend(&mut self, other: impl IntoIterator<Item = Diagnostic>) {
        self.0.extend(other);
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    pub fn error_count(&self) -> usize {
        self.0.iter().filter(|d| d.is_error()).count()
    }

    pub fn warning_count(&self) -> usize {
        self.0.len() - self.error_count()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// Stable order: by file, line, column, code.
    pub fn sort(&mut self) {
        self.0.sort_by(|a, b| {
            (&a.file, a.line, a.column, a.code, &a.message)
                .cmp(&(&b.file, b.line, b.column, b.code, &b.message))
        });
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_rustc_with_snippet_and_help() {
        let src = "select *\nfrom assay.reslts\n";
        let d = Diagnostic::error(
            codes::UNRESOLVED_RELATION,
            "unresolved relation `assay.reslts`",
        )
        .in_file("workflows/reporting/transforms/monthly.sql")
        .with_span(Span {
            start: Location { line: 2, column: 6 },
            end: Location {
                line: 2,
                column: 18,
            },
        })
        .with_label("no model or source has this name")
        .with_suggestions(vec!["assay.results".into()]);
        insta::assert_snapshot!(d.render(Some(src)));
    }

    /// annotate-snippets 0.11 counted a vertical tab as one column of leading whitespace but
    /// zero columns before the span, and underflowed on a line wider than the terminal.
    #[test]
    fn control_characters_before_a_span_render_visibly_without_panicking() {
        let src = format!(
            "{}-- @tabel {}\nselect 1\n",
            "\u{b}".repeat(70),
            "x".repeat(150)
        );
        let d = Diagnostic::error(codes::UNKNOWN_DIRECTIVE, "unknown directive `@tabel`")
            .in_file("m.sql")
            .with_span(Span {
                start: Location {
                    line: 1,
                    column: 74,
                },
                end: Location {
                    line: 1,
                    column: 80,
                },
            });
        let out = d.render(Some(&src));
        assert!(out.contains("-- @tabel"), "{out}");
        assert!(out.contains('\u{240b}'), "{out}");
        assert!(!out.contains('\u{b}'), "{out}");
    }

    #[test]
    fn a_point_at_a_line_end_stays_on_that_line() {
        let d = Diagnostic::error(codes::MALFORMED_TOML, "bad toml")
            .in_file("phlo.toml")
            .at(1, 11);
        let out = d.render(Some("[transform\nx = 1\n"));
        assert!(out.contains("1 | [transform\n  |           ^"), "{out}");
        assert!(!out.contains("x = 1"), "{out}");
    }

    #[test]
    fn renders_location_without_source() {
        let d = Diagnostic::error(codes::MALFORMED_TOML, "bad toml")
            .in_file("phlo.toml")
            .at(3, 1)
            .with_help("fix it");
        let out = d.render(None);
        assert!(out.contains("--> phlo.toml:3:1"), "{out}");
        assert!(out.starts_with("error[C001]: bad toml"), "{out}");
    }
}
