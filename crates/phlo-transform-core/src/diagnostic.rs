//! Diagnostics are data (decision 9): a stable code, a severity, a location, a message, a help
//! line and suggestions. People get a rustc-like rendering, machines the same fields as JSON.

use annotate_snippets::{Level, Renderer, Snippet};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A stable diagnostic code: one category letter and three digits (`R001`).
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
    pub fn render(&self, source: Option<&str>) -> String {
        let level = match self.severity {
            Severity::Error => Level::Error,
            Severity::Warning => Level::Warning,
        };
        let suggestions = (!self.suggestions.is_empty())
            .then(|| format!("did you mean: {}", self.suggestions.join(", ")));
        let mut message = level.title(&self.message).id(self.code.0);
        let range = match (source, self.line, self.column) {
            (Some(src), Some(line), Some(column)) => {
                let start = byte_offset(src, line, column);
                let end = self
                    .span
                    .map(|s| byte_offset(src, s.end.line, s.end.column))
                    .filter(|&e| e > start)
                    .unwrap_or_else(|| next_char_boundary(src, start));
                Some(start..end)
            }
            _ => None,
        };
        if let (Some(src), Some(file), Some(range)) = (source, &self.file, range) {
            let annotation = level
                .span(range)
                .label(self.label.as_deref().unwrap_or_default());
            message = message.snippet(
                Snippet::source(src)
                    .line_start(1)
                    .origin(file)
                    .fold(true)
                    .annotation(annotation),
            );
        }
        for note in &self.notes {
            message = message.footer(Level::Note.title(note));
        }
        if let Some(s) = &suggestions {
            message = message.footer(Level::Help.title(s));
        }
        if let Some(help) = &self.help {
            message = message.footer(Level::Help.title(help));
        }
        let mut out = Renderer::plain().render(message).to_string();
        // Without a snippet, still say where (file or file:line:column).
        if source.is_none() || self.line.is_none() {
            if let Some(file) = &self.file {
                let loc = match (self.line, self.column) {
                    (Some(l), Some(c)) => format!("{file}:{l}:{c}"),
                    _ => file.clone(),
                };
                let mut lines: Vec<&str> = out.lines().collect();
                let arrow = format!(" --> {loc}");
                lines.insert(1.min(lines.len()), &arrow);
                out = lines.join("\n");
            }
        }
        out
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

fn next_char_boundary(src: &str, start: usize) -> usize {
    src[start..]
        .chars()
        .next()
        .map(|c| start + c.len_utf8())
        .unwrap_or(start)
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
