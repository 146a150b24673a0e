//! The parse stage of one model: what compiling needs of its parsed SQL that does not depend
//! on the rest of the workspace, so it can come from the compile cache keyed by the text
//! alone. That is the relations it reads (as written, to be resolved), what the target
//! dialect cannot express (A009), and its canonical text with a placeholder for each relation
//! (the identities they resolve to are filled in after resolution).
//!
//! A cached and a freshly computed `Parsed` go through the same code afterwards, so a warm
//! compile is byte-identical to a cold one.

use phlo_transform_core::diagnostic::{Location, Span};
use phlo_transform_core::Diagnostic;
use phlo_transform_sql::canonical::canonical_text;
use phlo_transform_sql::sqlparser::dialect::Dialect;
use phlo_transform_sql::{extract_relations, parse_query, RelationRef};
use serde::{Deserialize, Serialize};

use crate::cache::{CacheSession, KeyBuilder, Stored};

const STAGE: &str = "parse";

/// A span as `[start line, start column, end line, end column]`.
pub(crate) type SpanParts = [usize; 4];

pub(crate) fn span_parts(s: Span) -> SpanParts {
    [s.start.line, s.start.column, s.end.line, s.end.column]
}

pub(crate) fn span_from(p: SpanParts) -> Span {
    Span {
        start: Location {
            line: p[0],
            column: p[1],
        },
        end: Location {
            line: p[2],
            column: p[3],
        },
    }
}

/// Something the target dialect cannot express (becomes A009 in the model's file).
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Unsupported {
    pub message: String,
    pub help: String,
    pub span: Option<SpanParts>,
}

#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Parsed {
    /// The relations read, as `extract_relations` lists them: parts and span.
    relations: Vec<(Vec<String>, Option<SpanParts>)>,
    pub unsupported: Vec<Unsupported>,
    /// Canonical text with relation `k` (its first occurrence in `relations`) written as the
    /// quoted identifier `placeholder(nonce, k)`.
    canonical: String,
    /// Part of every placeholder: derived from the text's hash, so the text itself cannot
    /// contain one.
    nonce: String,
}

impl Stored for Parsed {
    fn encode(&self) -> Option<String> {
        serde_json::to_string(self).ok()
    }

    fn decode(body: &[u8]) -> Option<Self> {
        serde_json::from_slice(body).ok()
    }
}

fn placeholder(nonce: &str, k: usize) -> String {
    format!("\u{1}{nonce}.{k}\u{1}")
}

impl Parsed {
    pub(crate) fn relations(&self) -> impl Iterator<Item = RelationRef> + '_ {
        self.relations.iter().map(|(parts, span)| RelationRef {
            parts: parts.clone(),
            span: span.map(span_from),
        })
    }

    /// The canonical text with relation `k` replaced by `identity(k)`; `None` when a relation
    /// has no identity (it did not resolve: the model has errors and gets no version).
    pub(crate) fn canonical(&self, identity: impl Fn(usize) -> Option<String>) -> Option<String> {
        let mut out = self.canonical.clone();
        for k in 0..self.relations.len() {
            let marker = placeholder(&self.nonce, k);
            if out.contains(&marker) {
                out = out.replace(&marker, &identity(k)?);
            }
        }
        Some(out)
    }
}

/// Parses `text` (the model's SQL after templating), or reads what an earlier compile stored
/// for the same text and target dialect. Returns the result and whether the cache answered.
/// A parse error is not cached: it is reported with the file's path, and is rare.
pub(crate) fn parse(
    text: &str,
    path: &str,
    target: &str,
    dialect: &dyn Dialect,
    cache: &CacheSession,
) -> (Result<Parsed, Diagnostic>, bool) {
    let key = KeyBuilder::new(STAGE).add(target).add(text).finish();
    if let Some(parsed) = cache.get::<Parsed>(STAGE, &key) {
        return (Ok(parsed), true);
    }
    let query = match parse_query(text, path, dialect) {
        Ok(p) => p.query,
        Err(d) => return (Err(d), false),
    };
    let relations: Vec<RelationRef> = extract_relations(&query);
    let unsupported = phlo_transform_sql::dialects::unsupported(&query, target)
        .into_iter()
        .map(|u| Unsupported {
            message: u.message,
            help: u.help,
            span: u.span.map(span_parts),
        })
        .collect();
    let nonce = phlo_transform_core::hash::sha256_hex(text)[..16].to_string();
    let canonical = canonical_text(*query, |parts| {
        let k = relations.iter().position(|r| r.parts == parts)?;
        Some(placeholder(&nonce, k))
    });
    let parsed = Parsed {
        relations: relations
            .into_iter()
            .map(|r| (r.parts, r.span.map(span_parts)))
            .collect(),
        unsupported,
        canonical,
        nonce,
    };
    cache.put(STAGE, &key, &parsed);
    (Ok(parsed), false)
}
