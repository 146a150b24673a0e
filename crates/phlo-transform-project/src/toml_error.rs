//! Turns a TOML parse error into a located C001/C002 diagnostic.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;

pub(crate) fn toml_diagnostic(file: &str, text: &str, err: &toml::de::Error) -> Diagnostic {
    // Syntax errors and schema errors (unknown key, wrong type) both come through here; a
    // schema error names the key ("unknown field"), a syntax error does not.
    // The other spellings serde accepts as aliases are not advertised among the keys.
    let mut message = err.message().to_string();
    for alias in crate::config::alias_spellings() {
        message = message.replace(&format!("`{alias}`, "), "");
    }
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
    if let Some((field, expected)) = unknown_field(&message) {
        d = d.with_suggestions(phlo_transform_core::did_you_mean(
            field,
            expected.iter().map(String::as_str),
        ));
    }
    d.with_help(if is_schema {
        "see docs/workspace.md for the keys each file accepts"
    } else {
        "fix the TOML syntax at the position shown"
    })
}

/// serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a` or `b`"): the
/// field and the keys that would have been accepted.
fn unknown_field(message: &str) -> Option<(&str, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    Some((field, expected))
}

pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}
