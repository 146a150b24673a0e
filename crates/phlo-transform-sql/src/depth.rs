//! A bound on how deeply a model's SQL nests, checked on the tokens before parsing.
//!
//! Parsing, typing (DataFusion), printing, hashing, cloning and dropping a query all walk its
//! syntax tree recursively, and a flat `1+1+…+1` or a long `union all` chain is a tree as deep
//! as it is long: 100,000 terms overflowed the stack (issue 10). Rather than hope every one of
//! those walks is iterative, the compiler refuses a query whose tree would be deeper than
//! [`MAX_NESTING`] with a coded error (S004), before anything recursive sees it. The estimate is
//! an upper bound computed in one pass over the tokens: every parenthesis level adds one, and
//! within a level every binary or unary operator since the last separator (a comma or a clause
//! keyword) and every set operation adds one.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

/// The deepest nesting a model may have. Generous for hand-written and generated SQL alike
/// (a 1,000-term sum, a 1,000-branch union), and well inside what the compiler's 64 MiB
/// threads survive in a debug build.
pub const MAX_NESTING: usize = 1_000;

/// Where the limit was crossed: the 1-based line and column of the token that crossed it.
#[derive(Debug, PartialEq, Eq)]
pub struct TooDeep {
    pub line: u64,
    pub column: u64,
}

#[derive(Default)]
struct Level {
    /// Operators since the last separator at this level.
    chain: usize,
    /// Set operations (`union`, `except`, `intersect`) at this level.
    sets: usize,
}

/// `Err` with the position where the nesting estimate of `tokens` first exceeds `limit`.
/// It reads the tokens the parser then parses, so the text is tokenized once.
pub fn check(tokens: &[TokenWithSpan], limit: usize) -> Result<(), TooDeep> {
    let mut levels = vec![Level::default()];
    // Sum over `levels` of (1 + chain + sets), kept up to date instead of recomputed.
    let mut depth = 1usize;
    for t in tokens {
        let top = levels.last_mut().expect("never empty");
        match &t.token {
            Token::LParen | Token::LBracket => {
                levels.push(Level::default());
                depth += 1;
            }
            Token::RParen | Token::RBracket => {
                if levels.len() > 1 {
                    let closed = levels.pop().expect("more than one");
                    depth -= 1 + closed.chain + closed.sets;
                }
            }
            Token::Comma | Token::SemiColon => {
                depth -= top.chain;
                top.chain = 0;
            }
            Token::Word(w) => match w.keyword {
                Keyword::UNION | Keyword::EXCEPT | Keyword::INTERSECT => {
                    top.sets += 1;
                    depth += 1;
                }
                Keyword::AND
                | Keyword::OR
                | Keyword::NOT
                | Keyword::IS
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::IN
                | Keyword::BETWEEN
                | Keyword::COLLATE => {
                    top.chain += 1;
                    depth += 1;
                }
                Keyword::SELECT
                | Keyword::FROM
                | Keyword::WHERE
                | Keyword::GROUP
                | Keyword::HAVING
                | Keyword::ORDER
                | Keyword::LIMIT
                | Keyword::JOIN
                | Keyword::ON
                | Keyword::CASE
                | Keyword::WHEN
                | Keyword::THEN
                | Keyword::ELSE
                | Keyword::END => {
                    depth -= top.chain;
                    top.chain = 0;
                }
                _ => {}
            },
            Token::Whitespace(_)
            | Token::EOF
            | Token::Number(..)
            | Token::Period
            | Token::Colon
            | Token::Placeholder(_) => {}
            token if is_literal(token) => {}
            // Every other token is an operator of some dialect.
            _ => {
                top.chain += 1;
                depth += 1;
            }
        }
        if depth > limit {
            return Err(TooDeep {
                line: t.span.start.line,
                column: t.span.start.column,
            });
        }
    }
    Ok(())
}

fn is_literal(token: &Token) -> bool {
    matches!(
        token,
        Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::TripleSingleQuotedString(_)
            | Token::TripleDoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::TripleSingleQuotedByteStringLiteral(_)
            | Token::TripleDoubleQuotedByteStringLiteral(_)
            | Token::SingleQuotedRawStringLiteral(_)
            | Token::DoubleQuotedRawStringLiteral(_)
            | Token::TripleSingleQuotedRawStringLiteral(_)
            | Token::TripleDoubleQuotedRawStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::QuoteDelimitedStringLiteral(_)
            | Token::NationalQuoteDelimitedStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::Char(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::tokenizer::Tokenizer;

    fn depth(sql: &str, limit: usize) -> Result<(), TooDeep> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap();
        check(&tokens, limit)
    }

    fn depth_ok(sql: &str, limit: usize) -> bool {
        depth(sql, limit).is_ok()
    }

    #[test]
    fn long_chains_are_deep_wide_lists_are_not() {
        let chain = format!("select {} as x", vec!["1"; 200].join(" + "));
        assert!(!depth_ok(&chain, 100));
        assert!(depth_ok(&chain, 300));
        // 200 columns of `a + b`: wide, not deep.
        let wide = format!("select {} from t", vec!["a + b"; 200].join(", "));
        assert!(depth_ok(&wide, 10));
        let unions = vec!["select 1"; 200].join(" union all ");
        assert!(!depth_ok(&unions, 100));
        let parens = format!("select {}1{}", "(".repeat(200), ")".repeat(200));
        assert!(!depth_ok(&parens, 100));
        let inlist = format!(
            "select * from t where a in ({})",
            vec!["1"; 5000].join(", ")
        );
        assert!(depth_ok(&inlist, 10));
        let cases = format!(
            "select case {} end from t",
            vec!["when a = 1 then 2"; 500].join(" ")
        );
        assert!(depth_ok(&cases, 10));
    }

    #[test]
    fn the_position_is_where_the_limit_was_crossed() {
        let e = depth("select 1 +\n1 + 1", 2).unwrap_err();
        assert_eq!((e.line, e.column), (2, 3));
    }
}
