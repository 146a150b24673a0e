//! Engine error positions mapped back to the model file. An engine reports a position in
//! the SQL it was sent, which is the model's AST printed again (physical names, generated
//! DDL around it), so offsets differ from the file's. The token at the reported position is
//! looked up in the model's own text instead: its first occurrence as a whole word there is
//! where the author wrote it. A token the model does not contain (a generated name) maps
//! nowhere.

/// `(line, column)`, 1-based, in `model_text` of the token at 1-based character `position`
/// of `sent`.
pub fn map_back(sent: &str, position: usize, model_text: &str) -> Option<(usize, usize)> {
    let chars: Vec<char> = sent.chars().collect();
    let at = position.checked_sub(1)?;
    if at >= chars.len() {
        return None;
    }
    let word = |c: char| c.is_alphanumeric() || c == '_';
    if !word(chars[at]) {
        // A literal or an operator: the text from there to the next space.
        let end = (at..chars.len())
            .find(|&i| chars[i].is_whitespace())
            .unwrap_or(chars.len());
        let token: String = chars[at..end].iter().collect();
        return find_text(model_text, token.trim_end_matches([',', ')', ';']));
    }
    let mut start = at;
    while start > 0 && word(chars[start - 1]) {
        start -= 1;
    }
    let mut end = at;
    while end < chars.len() && word(chars[end]) {
        end += 1;
    }
    let token: String = chars[start..end].iter().collect();
    find_word(model_text, &token)
}

/// DuckDB's error context as a 1-based character position in `sent`. DuckDB reports no offset,
/// but ends an error message with the line of the statement it fails at and a caret under the
/// failing part:
///
/// ```text
/// Conversion Error: Could not convert string 'seven' to INT32
///
/// LINE 1: CREATE TABLE "x"."b" AS SELECT CAST('seven' AS INTEGER) AS id FROM …
///                                        ^
/// ```
///
/// A long line is shown as an excerpt between `...`; the excerpt is looked up in that line of
/// `sent`. Only the DuckDB adapter (a cargo feature) and the tests below call it.
#[cfg(any(feature = "duckdb", test))]
pub fn duckdb_position(message: &str, sent: &str) -> Option<usize> {
    let lines: Vec<&str> = message.lines().collect();
    let at = lines.iter().rposition(|l| l.starts_with("LINE "))?;
    let (head, shown) = lines[at].split_once(": ")?;
    let line_no: usize = head["LINE ".len()..].parse().ok()?;
    let caret = lines.get(at + 1)?.find('^')?;
    // Characters of the shown excerpt before the caret ("LINE n: " is ASCII).
    let mut before = caret.checked_sub(head.len() + 2)?;
    let excerpt = match shown.strip_prefix("...") {
        Some(rest) => {
            before = before.checked_sub(3)?;
            rest
        }
        None => shown,
    };
    let excerpt = excerpt.strip_suffix("...").unwrap_or(excerpt);
    let line = sent.lines().nth(line_no.checked_sub(1)?)?;
    let start = line.find(excerpt)?;
    let column = line[..start].chars().count() + before;
    let earlier: usize = sent
        .lines()
        .take(line_no - 1)
        .map(|l| l.chars().count() + 1)
        .sum();
    Some(earlier + column + 1)
}

/// The first occurrence of `token` in `text` (case-insensitive), skipping `--` comments.
fn find_text(text: &str, token: &str) -> Option<(usize, usize)> {
    if token.is_empty() {
        return None;
    }
    let token = token.to_lowercase();
    text.lines().enumerate().find_map(|(n, line)| {
        let code = line.split("--").next().unwrap_or("").to_lowercase();
        code.find(&token)
            .map(|byte| (n + 1, code[..byte].chars().count() + 1))
    })
}

/// The first whole-word, case-insensitive occurrence of `token` in `text`, skipping `--`
/// comments.
fn find_word(text: &str, token: &str) -> Option<(usize, usize)> {
    let token: Vec<char> = token.to_lowercase().chars().collect();
    for (line_no, line) in text.lines().enumerate() {
        let code = line.split("--").next().unwrap_or("");
        let chars: Vec<char> = code.to_lowercase().chars().collect();
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let mut i = 0;
        while i + token.len() <= chars.len() {
            let fits = chars[i..i + token.len()] == token[..]
                && (i == 0 || !word(chars[i - 1]))
                && chars.get(i + token.len()).is_none_or(|c| !word(*c));
            if fits {
                return Some((line_no + 1, i + 1));
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{duckdb_position, map_back};

    /// Messages as DuckDB 1.5 prints them.
    #[test]
    fn duckdb_s_caret_is_a_position_in_the_statement() {
        let sent = "CREATE TABLE \"x\".\"b\" AS SELECT CAST('seven' AS INTEGER) AS id FROM \"x\".\"a\" AS \"a\"";
        let message = format!(
            "Conversion Error: Could not convert string 'seven' to INT32\n\nLINE 1: {sent}\n{}^",
            " ".repeat("LINE 1: ".len() + sent.find("CAST").unwrap())
        );
        let at = duckdb_position(&message, sent).unwrap();
        assert_eq!(at, sent.find("CAST").unwrap() + 1);
        let model = "-- @table\nselect cast('seven' as integer) as id from x.a\n";
        assert_eq!(map_back(sent, at, model), Some((2, 8)));

        let sent = "SELECT\n  1 as a,\n  nosuch as b FROM (select 1) x";
        let message = "Binder Error: Referenced column \"nosuch\" not found in FROM clause!\nCandidate bindings: \"1\"\n\nLINE 3:   nosuch as b FROM (select 1) x\n          ^^^^^^";
        let at = duckdb_position(message, sent).unwrap();
        assert_eq!(at, sent.find("nosuch").unwrap() + 1);

        let long = format!("SELECT {} nosuch FROM t", "a, ".repeat(40));
        let excerpt = &long[60..];
        let message = format!(
            "Binder Error: x\n\nLINE 1: ...{excerpt}\n{}^",
            " ".repeat("LINE 1: ...".len() + excerpt.find("nosuch").unwrap())
        );
        let at = duckdb_position(&message, &long).unwrap();
        assert_eq!(at, long.find("nosuch").unwrap() + 1);
        assert_eq!(
            duckdb_position("Catalog Error: no context", "SELECT 1"),
            None
        );
    }

    #[test]
    fn the_token_at_the_engine_position_is_found_in_the_model() {
        let model = "-- @table\nselect id,\n       amount / zero_col as ratio\nfrom raw.orders\n";
        let sent = "CREATE TABLE \"x\".\"y\" AS SELECT id, amount / zero_col AS ratio FROM \"raw\".\"orders\" AS \"orders\"";
        let at = sent.find("zero_col").unwrap() + 1;
        assert_eq!(map_back(sent, at, model), Some((3, 17)));
        assert_eq!(map_back(sent, 1, model), None, "CREATE is generated");
        let model = "-- @table\nselect cast('seven' as integer) as id\n";
        let sent = "CREATE TABLE t AS SELECT CAST('seven' AS INTEGER) AS id";
        let at = sent.find("'seven'").unwrap() + 1;
        assert_eq!(map_back(sent, at, model), Some((2, 13)));
    }
}
