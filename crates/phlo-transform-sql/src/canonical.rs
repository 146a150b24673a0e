//! Canonical text of a query, the input of model versions (decision 5): the AST printed by
//! sqlparser (no comments, no formatting, keywords upper-case), relations replaced by the
//! identity of what they resolve to, table aliases printed one way, and unquoted identifiers
//! lower-cased. Formatting- and comment-only edits therefore never change it (SPEC §98).

use datafusion::sql::sqlparser::ast::{Query, TableFactor, VisitMut, VisitorMut};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use std::fmt::Write as _;
use std::ops::ControlFlow;

use crate::relations::{rewrite_relations, Replacement};

/// Bump when the canonical form changes: every version changes with it.
pub const CANONICAL_FORMAT_VERSION: &str = "1";

struct ExplicitAliases;

impl VisitorMut for ExplicitAliases {
    type Break = ();
    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        let alias = match tf {
            TableFactor::Table { alias, .. }
            | TableFactor::Derived { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::NestedJoin { alias, .. } => alias,
            _ => return ControlFlow::Continue(()),
        };
        if let Some(a) = alias {
            a.explicit = true;
        }
        ControlFlow::Continue(())
    }
}

/// Canonical text of `query`; `identity` maps a relation (normalised parts) to the identity it
/// resolves to (`model:<id>` or `source:<name>`), or `None` to leave it as written.
///
/// The query is taken by value: it is rewritten in place, and every caller is done with it.
/// Cloning a model's syntax tree cost about as much as parsing it (issue 17).
pub fn canonical_text(
    mut query: Query,
    mut identity: impl FnMut(&[String]) -> Option<String>,
) -> String {
    rewrite_relations(&mut query, |parts| identity(parts).map(Replacement::Name));
    let _ = query.visit(&mut ExplicitAliases);
    let printed = query.to_string();
    let tokens = match Tokenizer::new(&GenericDialect {}, &printed).tokenize() {
        Ok(t) => t,
        Err(_) => return printed, // Display output always tokenizes; keep a safe fallback.
    };
    let mut out = String::with_capacity(printed.len());
    for t in tokens {
        match t {
            Token::Whitespace(_) => continue,
            // Lower-cased in place when ASCII; `str::to_lowercase` otherwise (a final sigma
            // lower-cases differently from the character on its own).
            Token::Word(w) if w.quote_style.is_none() && w.value.is_ascii() => {
                out.extend(w.value.chars().map(|c| c.to_ascii_lowercase()))
            }
            Token::Word(w) if w.quote_style.is_none() => out.push_str(&w.value.to_lowercase()),
            // Writing to a String cannot fail.
            other => {
                let _ = write!(out, "{other}");
            }
        }
        out.push(' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{default_dialect, parse_query};

    fn canon(sql: &str) -> String {
        let q = parse_query(sql, "m.sql", &default_dialect()).unwrap().query;
        canonical_text(*q, |p| {
            (p.join(".") == "assay.results").then(|| "model:assay.results".into())
        })
    }

    #[test]
    fn formatting_comments_and_keyword_case_do_not_matter() {
        let a = canon("select * from assay.results");
        let b = canon("-- a comment\nSELECT\n    *\nFROM Assay.Results /* trailing */\n");
        assert_eq!(a, b);
    }

    #[test]
    fn aliases_with_and_without_as_are_the_same() {
        assert_eq!(
            canon("select r.a x from assay.results r"),
            canon("select r.a as x from assay.results as r")
        );
    }

    #[test]
    fn unquoted_identifiers_lower_case_as_words() {
        // Pinned: versions recorded by earlier releases hash this text. A final capital sigma
        // lower-cases to `ς` in a word, to `σ` on its own.
        assert_eq!(
            canon("select ΟΔΟΣ, \"Keep\", Mixed from assay.results"),
            "select οδος , \"Keep\" , mixed from \"model:assay.results\" as \"results\" "
        );
    }

    #[test]
    fn real_edits_change_the_text() {
        assert_ne!(
            canon("select a from assay.results"),
            canon("select b from assay.results")
        );
        assert_ne!(
            canon("select 'A' from assay.results"),
            canon("select 'a' from assay.results")
        );
    }
}
