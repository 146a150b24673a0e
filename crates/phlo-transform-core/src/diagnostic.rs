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

/// Every code the tool emits. Codes are never reused for another meaning.
pub mod codes {
    use super::Code;
    // PROJECT
    pub const WORKSPACE_NOT_FOUND: Code = Code("P001");
    pub const MODEL_OUTSIDE_NAMESPACE: Code = Code("P002");
    pub const DUPLICATE_MODEL: Code = Code("P003");
    pub const UNKNOWN_DIRECTIVE: Code = Code("P004");
    pub const INVALID_DIRECTIVE_ARGUMENT: Code = Code("P005");
    pub const CONFLICTING_DIRECTIVES: Code = Code("P006");
    pub const UNREADABLE_MODEL: Code = Code("P007");
    pub const UNKNOWN_MODEL: Code = Code("P008");
    /// A namespace, schema, model, source or `@id` name breaks the identifier rule
    /// (`names::check_segment`): names are never paths.
    pub const INVALID_NAME: Code = Code("P009");
    /// A folder in the workspace could not be listed, so models in it would be missed.
    pub const UNREADABLE_FOLDER: Code = Code("P010");
    // CONFIG
    pub const MALFORMED_TOML: Code = Code("C001");
    pub const INVALID_CONFIG: Code = Code("C002");
    pub const INVALID_GLOB: Code = Code("C003");
    pub const INVALID_SOURCE: Code = Code("C004");
    pub const UNKNOWN_CONTRACT_MODEL: Code = Code("C005");
    /// A key or directive spelled the other way (`materialised`): accepted, with a warning.
    pub const SPELLING_ALIAS: Code = Code("C006");
    // PARSE
    pub const SYNTAX_ERROR: Code = Code("S001");
    pub const NOT_A_QUERY: Code = Code("S002");
    pub const TEMPLATE_ERROR: Code = Code("S003");
    /// A query nests deeper than the compiler walks (`phlo_transform_sql::depth`).
    pub const QUERY_TOO_DEEP: Code = Code("S004");
    // RESOLUTION
    pub const UNRESOLVED_RELATION: Code = Code("R001");
    pub const AMBIGUOUS_RELATION: Code = Code("R002");
    pub const UNREADABLE_SOURCE: Code = Code("R003");
    // TYPE
    pub const UNKNOWN_COLUMN: Code = Code("T001");
    pub const AMBIGUOUS_COLUMN: Code = Code("T002");
    pub const INCOMPATIBLE_TYPES: Code = Code("T003");
    pub const INVALID_CAST: Code = Code("T004");
    pub const UNKNOWN_FUNCTION: Code = Code("T005");
    pub const NOT_GROUPED: Code = Code("T006");
    pub const SET_OPERATION_MISMATCH: Code = Code("T007");
    pub const SUBQUERY_COLUMNS: Code = Code("T008");
    pub const UNTYPEABLE: Code = Code("T009");
    /// A function called with argument types it does not accept (`sum(a_date)`).
    pub const ARGUMENT_TYPES: Code = Code("T010");
    /// A condition (WHERE, HAVING, JOIN … ON, CASE WHEN, NOT) that is not boolean.
    pub const NOT_BOOLEAN: Code = Code("T011");
    /// (warning) The local engine may compute a construct differently from the target dialect.
    pub const DIALECT_DIFFERENCE: Code = Code("T012");
    // GRAPH
    pub const CYCLE: Code = Code("G001");
    // CONTRACT
    pub const CONTRACT_MISSING_COLUMN: Code = Code("K001");
    pub const CONTRACT_TYPE_MISMATCH: Code = Code("K002");
    pub const CONTRACT_EXTRA_COLUMN: Code = Code("K003");
    pub const CONTRACT_UNKNOWN_COLUMN: Code = Code("K004");
    pub const CONTRACT_UNCHECKED: Code = Code("K005");
    // PLAN (L001, "incremental built as a full table", is retired: incremental models run
    // incrementally)
    pub const STALE_PLAN: Code = Code("L002");
    pub const UNKNOWN_PLAN: Code = Code("L003");
    // SELECTION (SPEC §82)
    pub const EMPTY_SELECTION: Code = Code("L004");
    pub const UNMATCHED_SELECTOR: Code = Code("L005");
    pub const AMBIGUOUS_SELECTOR: Code = Code("L006");
    pub const INVALID_SELECTOR: Code = Code("L007");
    pub const EXCLUDED_DEPENDENCY_MISSING: Code = Code("L008");
    pub const EXCLUDED_DEPENDENCY: Code = Code("L009");
    pub const GIT_UNAVAILABLE: Code = Code("L010");
    /// A plan has a BREAKING schema change and `[schema] breaking_changes = "error"`.
    pub const BREAKING_SCHEMA_CHANGE: Code = Code("L011");
    // ADAPTER
    pub const QUERY_FAILED: Code = Code("A001");
    pub const WRITE_FAILED: Code = Code("A002");
    pub const RELATION_UNAVAILABLE: Code = Code("A003");
    /// A source's catalog (an Iceberg REST catalog) could not be read.
    pub const CATALOG_UNAVAILABLE: Code = Code("A004");
    /// The existing Delta table has CHECK constraints the model does not guarantee.
    pub const CONSTRAINT_NOT_GUARANTEED: Code = Code("A005");
    /// The engine failed running a query (resources exhausted, an internal error, something
    /// it does not implement): not the SQL's fault, and not retried.
    pub const ENGINE_FAILED: Code = Code("A006");
    /// A path the local engine would write or delete is not inside the warehouse root.
    pub const PATH_OUTSIDE_WAREHOUSE: Code = Code("A007");
    /// The warehouse cannot be reached or refuses the connection (server down, wrong
    /// password, missing database).
    pub const ADAPTER_UNAVAILABLE: Code = Code("A008");
    /// A model uses a construct the adapter's dialect cannot express (found at check time).
    pub const DIALECT_UNSUPPORTED: Code = Code("A009");
    /// `--adapter <name>` or `[adapter]` names no configured target, or the target's
    /// configuration is incomplete.
    pub const UNKNOWN_ADAPTER: Code = Code("A010");
    /// The warehouse cancelled a query (`--model-timeout`, `--fail-fast`, Ctrl-C, an operator).
    pub const QUERY_CANCELLED: Code = Code("A011");
    // EXECUTION
    pub const UPSTREAM_FAILED: Code = Code("E001");
    pub const TASK_PANICKED: Code = Code("E002");
    /// A model's attempt ran longer than `--model-timeout`.
    pub const MODEL_TIMEOUT: Code = Code("E003");
    /// Work stopped by `--fail-fast` or an interrupt (Ctrl-C) before it finished.
    pub const CANCELLED: Code = Code("E004");
    /// `run --resume` of a finished run, or `run --retry-failed` of one still in progress.
    pub const RUN_NOT_CONTINUABLE: Code = Code("E005");
    /// The model's SQL failed on its data while running (division by zero, overflow, a value
    /// a cast cannot convert).
    pub const SQL_RUNTIME_ERROR: Code = Code("E006");
    /// The model's rows break a NOT NULL or CHECK constraint of its table.
    pub const CONSTRAINT_VIOLATED: Code = Code("E007");
    /// The plan blocked a model before the run (a compile error in it or upstream, a source
    /// that cannot be read, a stale source under `block`): the message says which.
    pub const BLOCKED_BY_PLAN: Code = Code("E008");
    // TEST
    pub const TEST_FAILED: Code = Code("X001");
    pub const TEST_ERROR: Code = Code("X002");
    // DIFF
    /// A diff side names no recorded version, Delta version or timestamp that exists.
    pub const DIFF_UNKNOWN_SIDE: Code = Code("D001");
    /// A key (or mapped) column is missing on one side.
    pub const DIFF_KEY_MISSING: Code = Code("D002");
    /// A compared column's types on the two sides have no common type.
    pub const DIFF_INCOMPATIBLE_TYPES: Code = Code("D003");
    /// A side could not be read (missing table, unreadable files, query failure).
    pub const DIFF_UNREADABLE_SIDE: Code = Code("D004");
    /// Rows share a key on one side: reported with counts and samples, never collapsed.
    pub const DIFF_DUPLICATE_KEYS: Code = Code("D005");
    /// Invalid diff options or `[model."x".diff]` settings.
    pub const DIFF_INVALID_OPTION: Code = Code("D006");
    /// Policy: more removed rows than `max_removed_rows`.
    pub const DIFF_TOO_MANY_REMOVED: Code = Code("D010");
    /// Policy: more added rows than `max_added_rows`.
    pub const DIFF_TOO_MANY_ADDED: Code = Code("D011");
    /// Policy: a larger fraction of changed rows than `max_changed_fraction`.
    pub const DIFF_TOO_MANY_CHANGED: Code = Code("D012");
    /// Policy: a row threshold could not be measured (keyless, sampled, duplicate keys,
    /// aggregate-only): it fails rather than passing on unmeasured zeros (SPEC §54).
    pub const DIFF_UNMEASURED: Code = Code("D013");
    /// Policy: a column changed more values than its `max_changed_values`.
    pub const DIFF_COLUMN_CHANGED: Code = Code("D014");
    // STATE
    pub const STATE_UNAVAILABLE: Code = Code("Y001");
    pub const STATE_WRITE_FAILED: Code = Code("Y002");
    pub const UNKNOWN_RUN: Code = Code("Y003");
    pub const AMBIGUOUS_RUN: Code = Code("Y004");
    pub const NO_MODEL_STATE: Code = Code("Y005");
    /// Another live process holds the environment's writer lease (one writer at a time).
    pub const WRITER_BUSY: Code = Code("Y006");
}

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
