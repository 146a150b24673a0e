//! Turns a TOML parse error into a located C001/C002 diagnostic.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;

pub(crate) fn toml_diagnostic(file: &str, text: &str, err: &toml::de::Error) -> Diagnostic {
    // Syntax errors and schema errors (unknown key, wrong type) both come through here; a
    // schema error names the key ("unknown field"), a syntax error does not.
    let message = err.message().to_string();
    let is_schema = message.contains("unknown field")
        || message.contains("invalid type")
        || message.contains("missing field")
        || message.contains("unknown variant")
        || message.contains("invalid value");
    let code = if is_schema {
        codes::INVALID_CONFIG
    } else {
        codes::MALFORMED_TOML
    };
    let title = if is_schema {
        format!("invalid configuration in {file}: {message}")
    } else {
        format!("malformed TOML in {file}: {message}")
    };
    let mut d = Diagnostic::error(code, title).in_file(file);
    if let Some(range) = err.span() {
        let (line, column) = line_col(text, range.start);
        d = d.at(line, column);
    }
    d.with_help(if is_schema {
        "see docs/workspace.md for the keys each file accepts"
    } else {
        "fix the TOML syntax at the position shown"
    })
}

pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}
