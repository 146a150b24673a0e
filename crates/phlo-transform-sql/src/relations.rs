//! Relations a query reads (`FROM` / `JOIN` table names), found and rewritten on the AST.
//! CTE names in scope are not relations; table functions (`generate_series(…)`) are not either.

use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Query, TableAlias, TableFactor, Visit, VisitMut, Visitor,
    VisitorMut,
};
use phlo_transform_core::diagnostic::{Location, Span};
use std::collections::HashSet;
use std::ops::ControlFlow;

/// One relation reference as written, normalised (unquoted parts lower-cased).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelationRef {
    pub parts: Vec<String>,
    pub span: Option<Span>,
}

impl RelationRef {
    pub fn dotted(&self) -> String {
        self.parts.join(".")
    }
}

fn normalise(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

fn parts_of(name: &ObjectName) -> Option<Vec<String>> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Some(normalise(i)),
            ObjectNamePart::Function(_) => None,
        })
        .collect()
}

fn span_of(name: &ObjectName) -> Option<Span> {
    let idents: Vec<&Ident> = name
        .0
        .iter()
        .filter_map(|p| match p {
            ObjectNamePart::Identifier(i) => Some(i),
            ObjectNamePart::Function(_) => None,
        })
        .collect();
    let (first, last) = (idents.first()?, idents.last()?);
    if first.span.start.line == 0 {
        return None;
    }
    Some(Span {
        start: Location {
            line: first.span.start.line as usize,
            column: first.span.start.column as usize,
        },
        end: Location {
            line: last.span.end.line as usize,
            column: last.span.end.column as usize,
        },
    })
}

/// CTE names visible at the current point of the walk.
#[derive(Default)]
struct CteScope {
    frames: Vec<HashSet<String>>,
}

impl CteScope {
    fn enter(&mut self, q: &Query) {
        let names = q
            .with
            .iter()
            .flat_map(|w| w.cte_tables.iter().map(|c| normalise(&c.alias.name)))
            .collect();
        self.frames.push(names);
    }

    fn leave(&mut self) {
        self.frames.pop();
    }

    fn is_cte(&self, parts: &[String]) -> bool {
        parts.len() == 1 && self.frames.iter().any(|f| f.contains(&parts[0]))
    }
}

/// The relation a table factor names, unless it is a CTE or a table function.
fn table_parts<'a>(tf: &'a TableFactor, scope: &CteScope) -> Option<(&'a ObjectName, Vec<String>)> {
    match tf {
        TableFactor::Table {
            name, args: None, ..
        } => {
            let parts = parts_of(name)?;
            (!scope.is_cte(&parts)).then_some((name, parts))
        }
        _ => None,
    }
}

struct Collector {
    scope: CteScope,
    found: Vec<RelationRef>,
}

impl Visitor for Collector {
    type Break = ();
    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        self.scope.enter(q);
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.scope.leave();
        ControlFlow::Continue(())
    }
    fn pre_visit_table_factor(&mut self, tf: &TableFactor) -> ControlFlow<()> {
        if let Some((name, parts)) = table_parts(tf, &self.scope) {
            self.found.push(RelationRef {
                parts,
                span: span_of(name),
            });
        }
        ControlFlow::Continue(())
    }
}

/// Every relation the query reads, in order of appearance (duplicates kept, with their spans).
pub fn extract_relations(query: &Query) -> Vec<RelationRef> {
    let mut c = Collector {
        scope: CteScope::default(),
        found: Vec::new(),
    };
    let _ = query.visit(&mut c);
    c.found
}

/// What to put where a relation was named.
pub enum Replacement {
    /// A single (quoted) identifier; the table keeps its alias, or gets the last segment of the
    /// original name as alias so that `orders.amount` still resolves after `raw.orders` moved.
    Name(String),
    /// A qualified name, each part a quoted identifier (`"assay"."results"`): how warehouse
    /// adapters address schemas and tables. Aliased like `Name`.
    Parts(Vec<String>),
    /// A derived table `(<query>) AS <alias>` (ephemeral inlining).
    Derived(Box<Query>),
}

struct Rewriter<F> {
    scope: CteScope,
    replace: F,
}

impl<F: FnMut(&[String]) -> Option<Replacement>> VisitorMut for Rewriter<F> {
    type Break = ();
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        self.scope.enter(q);
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.scope.leave();
        ControlFlow::Continue(())
    }
    // Post-visit: a derived table put in place here is not walked again.
    fn post_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        let Some((_, parts)) = table_parts(tf, &self.scope) else {
            return ControlFlow::Continue(());
        };
        let Some(replacement) = (self.replace)(&parts) else {
            return ControlFlow::Continue(());
        };
        let TableFactor::Table { name, alias, .. } = tf else {
            unreachable!("table_parts only accepts TableFactor::Table");
        };
        let alias = alias.take().unwrap_or_else(|| TableAlias {
            explicit: true,
            name: Ident::with_quote('"', parts.last().cloned().unwrap_or_default()),
            columns: vec![],
        });
        match replacement {
            Replacement::Name(physical) => {
                *name = ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote(
                    '"', physical,
                ))]);
                if let TableFactor::Table { alias: slot, .. } = tf {
                    *slot = Some(alias);
                }
            }
            Replacement::Parts(parts) => {
                *name = ObjectName(
                    parts
                        .into_iter()
                        .map(|p| ObjectNamePart::Identifier(Ident::with_quote('"', p)))
                        .collect(),
                );
                if let TableFactor::Table { alias: slot, .. } = tf {
                    *slot = Some(alias);
                }
            }
            Replacement::Derived(subquery) => {
                *tf = TableFactor::Derived {
                    lateral: false,
                    subquery,
                    alias: Some(alias),
                    sample: None,
                };
            }
        }
        ControlFlow::Continue(())
    }
}

/// Rewrites every relation for which `replace` returns a replacement.
pub fn rewrite_relations(query: &mut Query, replace: impl FnMut(&[String]) -> Option<Replacement>) {
    let mut r = Rewriter {
        scope: CteScope::default(),
        replace,
    };
    let _ = query.visit(&mut r);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{default_dialect, parse_query};

    fn rels(sql: &str) -> Vec<String> {
        let q = parse_query(sql, "m.sql", &default_dialect()).unwrap();
        extract_relations(&q.query)
            .iter()
            .map(RelationRef::dotted)
            .collect()
    }

    #[test]
    fn finds_tables_in_joins_subqueries_and_ctes_but_not_cte_names() {
        let sql = "with recent as (select * from Raw.Orders where d > 1)
                   select * from recent r join assay.results a on r.id = a.id
                   where exists (select 1 from shared.sites s where s.id = r.site)
                   and r.x in (select x from \"Mixed.Case\")";
        assert_eq!(
            rels(sql),
            vec!["raw.orders", "assay.results", "shared.sites", "Mixed.Case"]
        );
    }

    #[test]
    fn table_functions_are_not_relations() {
        assert!(rels("select * from generate_series(1, 3)").is_empty());
    }

    #[test]
    fn spans_point_at_the_name() {
        let q = parse_query("select *\nfrom  assay.raw", "m.sql", &default_dialect()).unwrap();
        let r = &extract_relations(&q.query)[0];
        let s = r.span.unwrap();
        assert_eq!((s.start.line, s.start.column, s.end.column), (2, 7, 16));
    }

    #[test]
    fn rewrite_names_and_inline_derived_tables() {
        let mut q = parse_query(
            "select o.id from raw.orders o join assay.eph using (id) join x on true",
            "m.sql",
            &default_dialect(),
        )
        .unwrap()
        .query;
        let inner = parse_query("select 1 as id", "e.sql", &default_dialect())
            .unwrap()
            .query;
        rewrite_relations(&mut q, |parts| match parts.join(".").as_str() {
            "raw.orders" => Some(Replacement::Name("raw.orders".into())),
            "assay.eph" => Some(Replacement::Derived(inner.clone())),
            _ => None,
        });
        assert_eq!(
            q.to_string(),
            "SELECT o.id FROM \"raw.orders\" o JOIN (SELECT 1 AS id) AS \"eph\" USING(id) JOIN x ON true"
        );
    }
}
