//! Parsing one model file into one query AST.

use datafusion::sql::sqlparser::ast::{Query, Statement};
use datafusion::sql::sqlparser::dialect::{Dialect, GenericDialect};
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Tokenizer;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;

/// A model's parsed SELECT.
#[derive(Clone, Debug)]
pub struct ParsedQuery {
    pub query: Box<Query>,
}

/// The dialect models are parsed with. Generic accepts the union of common syntax.
pub fn default_dialect() -> GenericDialect {
    GenericDialect {}
}

/// Parses `sql` (the whole model file, comments included) as exactly one query.
pub fn parse_query(
    sql: &str,
    file: &str,
    dialect: &dyn Dialect,
) -> Result<ParsedQuery, Diagnostic> {
    // Tokenized once: the nesting bound reads the tokens the parser then parses.
    let tokens = Tokenizer::new(dialect, sql)
        .tokenize_with_location()
        .map_err(|e| syntax_error(&ParserError::from(e), sql, file))?;
    if let Err(at) = crate::depth::check(&tokens, crate::depth::MAX_NESTING) {
        return Err(Diagnostic::error(
            codes::QUERY_TOO_DEEP,
            format!(
                "the query nests more than {} levels deep (operators in one chain, set operations, parentheses)",
                crate::depth::MAX_NESTING
            ),
        )
        .in_file(file)
        .at(at.line as usize, at.column as usize)
        .with_label("the limit is crossed here")
        .with_help("split the expression or the union into models or CTEs of fewer terms each"));
    }
    let statements = Parser::new(dialect)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| syntax_error(&e, sql, file))?;
    let mut it = statements.into_iter();
    match (it.next(), it.next()) {
        (Some(Statement::Query(query)), None) => Ok(ParsedQuery { query }),
        (None, _) => Err(Diagnostic::error(
            codes::NOT_A_QUERY,
            "model file contains no SQL statement",
        )
        .in_file(file)
        .at(1, 1)
        .with_help("a model is one SELECT statement, e.g. `select * from raw.orders`")),
        (Some(Statement::Query(_)), Some(_)) => Err(Diagnostic::error(
            codes::NOT_A_QUERY,
            "model file contains more than one statement",
        )
        .in_file(file)
        .at(1, 1)
        .with_help("keep one SELECT per file; split the rest into their own models")),
        (Some(other), _) => {
            let keyword = other
                .to_string()
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_uppercase();
            Err(Diagnostic::error(
                codes::NOT_A_QUERY,
                format!("a model must be a SELECT query, found {keyword}"),
            )
            .in_file(file)
            .at(first_code_line(sql), 1)
            .with_help("write the query only; phlo-transform creates the table or view itself"))
        }
    }
}

fn first_code_line(sql: &str) -> usize {
    sql.lines()
        .position(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with("--")
        })
        .map(|i| i + 1)
        .unwrap_or(1)
}

fn syntax_error(err: &ParserError, sql: &str, file: &str) -> Diagnostic {
    let text = match err {
        ParserError::ParserError(s) | ParserError::TokenizerError(s) => s.clone(),
        ParserError::RecursionLimitExceeded => "query nests too deeply".to_string(),
    };
    let (message, location) = split_location(&text);
    let (line, column) = location.unwrap_or_else(|| {
        // "found: EOF" and friends have no location: point at the end of the text.
        let line = sql.lines().count().max(1);
        (
            line,
            sql.lines()
                .last()
                .map(|l| l.chars().count() + 1)
                .unwrap_or(1),
        )
    });
    Diagnostic::error(codes::SYNTAX_ERROR, format!("SQL syntax error: {message}"))
        .in_file(file)
        .at(line, column)
        .with_label("here")
        .with_help("fix the SQL at the position shown; models are parsed before anything runs")
}

/// `"Expected: x, found: y at Line: 2, Column: 6"` → (`"Expected: x, found: y"`, (2, 6)).
fn split_location(text: &str) -> (String, Option<(usize, usize)>) {
    if let Some(idx) = text.rfind(" at Line: ") {
        let rest = &text[idx + " at Line: ".len()..];
        if let Some((l, c)) = rest.split_once(", Column: ") {
            let c: String = c.chars().take_while(|ch| ch.is_ascii_digit()).collect();
            if let (Ok(l), Ok(c)) = (l.trim().parse(), c.parse()) {
                return (text[..idx].to_string(), Some((l, c)));
            }
        }
    }
    (text.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_are_located() {
        let err = parse_query("select a,\nfrom t where", "m.sql", &default_dialect()).unwrap_err();
        assert_eq!(err.code, codes::SYNTAX_ERROR);
        assert_eq!(err.line, Some(2));
        assert!(
            err.message.starts_with("SQL syntax error"),
            "{}",
            err.message
        );
    }

    #[test]
    fn only_single_queries_are_models() {
        let err =
            parse_query("create table t as select 1", "m.sql", &default_dialect()).unwrap_err();
        assert_eq!(err.code, codes::NOT_A_QUERY);
        let err = parse_query("select 1; select 2", "m.sql", &default_dialect()).unwrap_err();
        assert_eq!(err.code, codes::NOT_A_QUERY);
        assert!(parse_query(
            "-- c\nwith x as (select 1) select * from x",
            "m.sql",
            &default_dialect()
        )
        .is_ok());
    }
}
