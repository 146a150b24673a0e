//! One file's text formatted: the header (the comment lines before the first SQL line, where
//! the directives are) kept as written, the SQL after it formatted by `sqlformat`, and the
//! result accepted only when it is provably the same model.
//!
//! `sqlformat` only moves whitespace, but it works on its own tokens, not on the parser's, so
//! every result is checked against what the compiler reads: the same canonical SQL (the
//! input of the model's version, so formatting never changes a version), the same directives,
//! the same comments in the same order, and stable (formatting the result again gives it back).
//! A text that fails a check is left alone and the check is named ([`Refusal`]).

use phlo_transform_core::Diagnostic;
use phlo_transform_project::Directives;
use phlo_transform_sql::canonical::canonical_text;
use phlo_transform_sql::parse::{default_dialect, parse_query};
use phlo_transform_sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};
use serde::Serialize;
use sqlformat::{FormatOptions, Indent, QueryParams};

/// What formatting one file's text gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Already formatted.
    Unchanged,
    /// The formatted text.
    Formatted(String),
    /// Left as it is, and why.
    Refused(Refusal),
}

/// Why a text is left as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// It uses templating (`{{ … }}`, `{% … %}`): the SQL is only known once rendered.
    Templated,
    /// The formatted text parses to another query (another canonical SQL), or not at all.
    ChangesQuery,
    /// The formatted text's directives differ.
    ChangesDirectives,
    /// The formatted text lost, gained or reordered a comment.
    ChangesComments,
    /// Formatting the formatted text again changes it: it would never settle.
    Unstable,
}

impl Refusal {
    /// The reason in words, for the report and the warning.
    pub fn describe(self) -> &'static str {
        match self {
            Refusal::Templated => "it is templated ({{ … }} or {% … %}): its SQL is only known once rendered",
            Refusal::ChangesQuery => "the formatted SQL would parse to another query, which would change the model's version",
            Refusal::ChangesDirectives => "the formatted header would declare other directives",
            Refusal::ChangesComments => "the formatted text would lose, add or reorder a comment",
            Refusal::Unstable => "formatting the result again would change it again",
        }
    }
}

/// How many times the formatter may run over its own output before the text settles: its
/// output is not always a fixed point on the first pass (a comment after a comma, say).
const MAX_PASSES: usize = 3;

/// Formats `text` (a model or test file's whole contents; `path` names it in diagnostics).
///
/// A text that does not parse is an error (S001/S002, as `check` reports it): there is no
/// query to keep.
pub fn format_text(text: &str, path: &str) -> Result<Outcome, Diagnostic> {
    if phlo_transform_sql::template::needs_rendering(text) {
        return Ok(Outcome::Refused(Refusal::Templated));
    }
    let before = Reading::of(text, path)?;
    let mut formatted = format_once(text);
    let mut passes = 1;
    loop {
        let again = format_once(&formatted);
        if again == formatted {
            break;
        }
        passes += 1;
        if passes > MAX_PASSES {
            return Ok(Outcome::Refused(Refusal::Unstable));
        }
        formatted = again;
    }
    if formatted == text {
        return Ok(Outcome::Unchanged);
    }
    let Ok(after) = Reading::of(&formatted, path) else {
        return Ok(Outcome::Refused(Refusal::ChangesQuery));
    };
    if let Some(refusal) = before.differs(&after) {
        return Ok(Outcome::Refused(refusal));
    }
    Ok(Outcome::Formatted(formatted))
}

/// One pass: the header as written (trailing spaces trimmed), then the formatted SQL, ending
/// in one newline. CRLF line ends stay CRLF.
fn format_once(text: &str) -> String {
    let crlf = text.contains("\r\n");
    let text = text.replace("\r\n", "\n");
    let (header, body) = split_header(&text);
    let mut out = String::with_capacity(text.len());
    for line in header.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let body = body.trim();
    if !body.is_empty() {
        let options = FormatOptions {
            indent: Indent::Spaces(4),
            // Keywords keep the case they are written in.
            uppercase: None,
            ..FormatOptions::default()
        };
        let formatted = sqlformat::format(body, &QueryParams::None, &options);
        for line in formatted.trim_end().lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    if crlf {
        out.replace('\n', "\r\n")
    } else {
        out
    }
}

/// The header — the lines before the first line that is neither blank nor a `--` comment, as
/// `Directives::parse` reads it — and the rest. Blank lines ending the header go with the
/// body, whose formatting drops them.
fn split_header(text: &str) -> (&str, &str) {
    let (mut read, mut header) = (0, 0);
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if !trimmed.is_empty() && !trimmed.starts_with("--") {
            break;
        }
        read += line.len();
        if !trimmed.is_empty() {
            header = read;
        }
    }
    text.split_at(header)
}

/// What the compiler reads of a text, for comparing two: its canonical SQL, its directives,
/// its comments.
struct Reading {
    canonical: String,
    directives: Directives,
    comments: Vec<String>,
}

impl Reading {
    fn of(text: &str, path: &str) -> Result<Reading, Diagnostic> {
        let query = parse_query(text, path, &default_dialect())?.query;
        let (directives, _) = Directives::parse(text, path);
        Ok(Reading {
            canonical: canonical_text(*query, |_| None),
            directives,
            comments: comments(text),
        })
    }

    /// The first check `after` fails against `self`.
    fn differs(&self, after: &Reading) -> Option<Refusal> {
        if self.canonical != after.canonical {
            Some(Refusal::ChangesQuery)
        } else if self.directives != after.directives {
            Some(Refusal::ChangesDirectives)
        } else if self.comments != after.comments {
            Some(Refusal::ChangesComments)
        } else {
            None
        }
    }
}

/// Every comment's words, in order (a block comment re-indented is the same comment).
fn comments(text: &str) -> Vec<String> {
    let Ok(tokens) = Tokenizer::new(&default_dialect(), text).tokenize() else {
        return Vec::new();
    };
    tokens
        .into_iter()
        .filter_map(|t| match t {
            Token::Whitespace(Whitespace::SingleLineComment { comment, prefix }) => {
                Some(format!("{prefix}{}", comment.trim_end()))
            }
            Token::Whitespace(Whitespace::MultiLineComment(c)) => Some(format!(
                "/*{}*/",
                c.split_whitespace().collect::<Vec<_>>().join(" ")
            )),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn formatted(text: &str) -> String {
        match format_text(text, "m.sql").unwrap() {
            Outcome::Formatted(f) => f,
            Outcome::Unchanged => text.to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_header_is_kept_and_the_query_laid_out() {
        let text = "-- @table\n--   @key id   \n-- One row per id.\n\nSELECT id,  name FROM raw.t   WHERE id > 1";
        let out = formatted(text);
        assert!(
            out.starts_with("-- @table\n--   @key id\n-- One row per id.\nSELECT\n"),
            "{out}"
        );
        assert!(out.contains("    id,\n    name\n"), "{out}");
        assert!(out.ends_with("WHERE\n    id > 1\n"), "{out}");
        assert_eq!(format_text(&out, "m.sql").unwrap(), Outcome::Unchanged);
    }

    #[test]
    fn comments_and_literals_stay_as_written() {
        let text = "select a, -- the a\n  'It''s  A' as b /* keep\n   me */ from t";
        let out = formatted(text);
        assert!(out.contains("-- the a"), "{out}");
        assert!(out.contains("'It''s  A'"), "{out}");
        assert!(out.contains("/* keep"), "{out}");
    }

    #[test]
    fn templated_files_are_left_alone_and_broken_ones_are_errors() {
        assert_eq!(
            format_text("select * from {{ ref('a.b') }}", "m.sql").unwrap(),
            Outcome::Refused(Refusal::Templated)
        );
        let d = format_text("select (a from t", "m.sql").unwrap_err();
        assert_eq!(d.code.0, "S001");
    }

    #[test]
    fn the_header_ends_at_the_first_sql_line() {
        assert_eq!(
            split_header("-- @view\n\n-- x\n\nselect 1\n-- @table\n"),
            ("-- @view\n\n-- x\n", "\nselect 1\n-- @table\n")
        );
        assert_eq!(split_header("select 1"), ("", "select 1"));
    }

    #[test]
    fn a_different_reading_is_named() {
        let a = Reading::of("-- @table\nselect a from t", "m.sql").unwrap();
        let query = Reading::of("-- @table\nselect b from t", "m.sql").unwrap();
        let directives = Reading::of("-- @view\nselect a from t", "m.sql").unwrap();
        let comments = Reading::of("-- @table\nselect a -- x\nfrom t", "m.sql").unwrap();
        assert_eq!(a.differs(&query), Some(Refusal::ChangesQuery));
        assert_eq!(a.differs(&directives), Some(Refusal::ChangesDirectives));
        assert_eq!(a.differs(&comments), Some(Refusal::ChangesComments));
        let spaced = Reading::of("-- @table\nSELECT   a\nFROM t", "m.sql").unwrap();
        assert_eq!(a.differs(&spaced), None);
    }
}
