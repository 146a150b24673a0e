//! The typing stage's entries in the compile cache: what planning and analysing one model
//! gave (its schema, plan fingerprint, column lineage and dialect divergences), keyed by what
//! they depend on: the model's SQL, the target dialect, and for every relation it reads the
//! name it is planned under and the schema registered for it. An edit therefore re-types the
//! edited model and, downstream, only the models one of whose inputs' schemas changed.
//!
//! Column lineage also asks which scanned names are datasets (a source or model, rather than
//! a CTE): the answers are stored with the entry and an entry whose answers no longer hold is
//! a miss. Only successful typings are stored; errors are computed every time.

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::ipc::convert::{fb_to_schema, IpcSchemaEncoder};
use datafusion::common::{Location, Span};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::cache::{CacheSession, Key, KeyBuilder, Stored};
use crate::model::CompiledModel;
use crate::plan_lineage::{ColumnDerivations, Derivation, Directness, InputColumn, Transformation};
use crate::resolve::Target;
use crate::semantics::Divergence;

const STAGE: &str = "type";

/// What compiling keeps of a model planned and analysed: the plans themselves are dropped on
/// the planning thread, so at most one plan per thread is alive (issue 17). This is also what
/// the compile cache stores of a typing.
#[derive(Clone)]
pub(crate) struct Typed {
    /// The schema of the analysed plan, after the target dialect's exact rewrites.
    pub schema: SchemaRef,
    /// Fingerprint and column lineage of the unanalysed plan: the analyzer's casts would add
    /// transformation edges users did not write.
    pub fingerprint: String,
    pub lineage: Vec<ColumnDerivations>,
    /// Constructs the local engine may compute differently from the target.
    pub divergences: Vec<Divergence>,
}

/// One output column's lineage: exact, then (dataset, column, directness, transformation,
/// expression) per derivation.
type LineageEntry = (
    bool,
    Vec<(String, String, Directness, Transformation, Option<String>)>,
);

/// A typing as the cache holds it, with the names its lineage asked about and whether each
/// was a dataset (an entry whose answers no longer hold is a miss).
#[derive(Clone)]
struct TypedEntry {
    typed: Typed,
    datasets: Vec<(String, bool)>,
}

/// A [`TypedEntry`] on disk.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// The analysed schema as Arrow IPC (flatbuffer) bytes, hex.
    schema: String,
    fingerprint: String,
    lineage: Vec<LineageEntry>,
    /// construct, reason, anchors (start line, start column, end line, end column), function.
    divergences: Vec<(String, String, Vec<[u64; 4]>, String)>,
    /// The names column lineage asked about, and whether each was a dataset.
    datasets: Vec<(String, bool)>,
}

/// The typing stage's view of the cache for one compile: the schema hashes of the datasets
/// registered so far (sources, then each level's typed models).
pub(crate) struct TypingCache<'a> {
    cache: &'a CacheSession,
    dialect: &'a str,
    hashes: HashMap<String, String>,
}

impl<'a> TypingCache<'a> {
    pub(crate) fn new(cache: &'a CacheSession, dialect: &'a str) -> Self {
        TypingCache {
            cache,
            dialect,
            hashes: HashMap::new(),
        }
    }

    /// Records the schema registered under `name` (a source, or a model just typed).
    pub(crate) fn registered(&mut self, name: &str, schema: &Schema) {
        if self.cache.is_enabled() {
            let hash = phlo_transform_core::hash::sha256_hex(encode_schema(schema));
            self.hashes.insert(name.to_string(), hash);
        }
    }

    /// The key of model `i`'s typing, `None` when it cannot be cached (no cache, or an input
    /// whose schema is not a registered one).
    pub(crate) fn key(&self, models: &[Arc<CompiledModel>], i: usize) -> Option<Key> {
        if !self.cache.is_enabled() {
            return None;
        }
        let m = &models[i];
        let mut key = KeyBuilder::new(STAGE);
        key.add(self.dialect).add(m.sql.as_deref()?);
        for r in &m.relations {
            let name = match r.target.as_ref()? {
                Target::Model(u) => models[*u].name.to_string(),
                Target::Source(s) => s.clone(),
            };
            key.add(r.relation.parts.join("\u{0}"))
                .add(&name)
                .add(self.hashes.get(&name)?);
        }
        Some(key.finish())
    }

    /// The stored typing under `key`, if its lineage's answers about datasets still hold.
    pub(crate) fn get(&self, key: &Key, datasets: &HashSet<String>) -> Option<Typed> {
        let entry: TypedEntry = self.cache.get(STAGE, key)?;
        if entry
            .datasets
            .iter()
            .any(|(name, was)| datasets.contains(name) != *was)
        {
            return None;
        }
        Some(entry.typed)
    }

    /// Stores `typed` under `key`; `asked` is what its lineage asked about datasets.
    pub(crate) fn put(&self, key: &Key, typed: &Typed, mut asked: Vec<(String, bool)>) {
        asked.sort();
        asked.dedup();
        let entry = TypedEntry {
            typed: typed.clone(),
            datasets: asked,
        };
        self.cache.put(STAGE, key, &entry);
    }
}

impl Stored for TypedEntry {
    fn encode(&self) -> Option<String> {
        let typed = &self.typed;
        let bytes = encode_schema(&typed.schema);
        // Only a schema that comes back exactly as it went is stored.
        if schema_from_bytes(&bytes).as_ref() != Some(typed.schema.as_ref()) {
            return None;
        }
        let entry = Entry {
            schema: hex::encode(&bytes),
            fingerprint: typed.fingerprint.clone(),
            lineage: typed.lineage.iter().map(lineage_to).collect(),
            divergences: typed
                .divergences
                .iter()
                .map(|d| {
                    (
                        d.construct.clone(),
                        d.reason.clone(),
                        d.anchors.iter().map(span_to).collect(),
                        d.function.clone(),
                    )
                })
                .collect(),
            datasets: self.datasets.clone(),
        };
        serde_json::to_string(&entry).ok()
    }

    fn decode(body: &[u8]) -> Option<Self> {
        let entry: Entry = serde_json::from_slice(body).ok()?;
        let schema = decode_schema(&entry.schema)?;
        let typed = Typed {
            schema: Arc::new(schema),
            fingerprint: entry.fingerprint,
            lineage: entry.lineage.into_iter().map(lineage_from).collect(),
            divergences: entry
                .divergences
                .into_iter()
                .map(|(construct, reason, anchors, function)| Divergence {
                    construct,
                    reason,
                    anchors: anchors.into_iter().map(span_from).collect(),
                    function,
                })
                .collect(),
        };
        Some(TypedEntry {
            typed,
            datasets: entry.datasets,
        })
    }
}

fn encode_schema(schema: &Schema) -> Vec<u8> {
    IpcSchemaEncoder::new()
        .schema_to_fb(schema)
        .finished_data()
        .to_vec()
}

/// `None` for anything but a schema this module wrote (decoding a damaged but well-formed
/// flatbuffer may panic inside Arrow: that is a miss too).
fn decode_schema(text: &str) -> Option<Schema> {
    schema_from_bytes(&hex::decode(text).ok()?)
}

/// The schema an encoded flatbuffer holds; `None` when it holds none (see [`decode_schema`]).
fn schema_from_bytes(bytes: &[u8]) -> Option<Schema> {
    std::panic::catch_unwind(|| {
        datafusion::arrow::ipc::root_as_schema(bytes)
            .ok()
            .map(fb_to_schema)
    })
    .ok()
    .flatten()
}

fn span_to(s: &Span) -> [u64; 4] {
    [s.start.line, s.start.column, s.end.line, s.end.column]
}

fn span_from(p: [u64; 4]) -> Span {
    Span::new(
        Location {
            line: p[0],
            column: p[1],
        },
        Location {
            line: p[2],
            column: p[3],
        },
    )
}

fn lineage_to(c: &ColumnDerivations) -> LineageEntry {
    let derivations = c
        .derivations
        .iter()
        .map(|d| {
            (
                d.input.dataset.to_string(),
                d.input.column.to_string(),
                d.directness,
                d.transformation,
                d.expression.as_deref().map(str::to_string),
            )
        })
        .collect();
    (c.exact, derivations)
}

fn lineage_from((exact, derivations): LineageEntry) -> ColumnDerivations {
    ColumnDerivations {
        exact,
        derivations: derivations
            .into_iter()
            .map(
                |(dataset, column, directness, transformation, expression)| Derivation {
                    input: InputColumn {
                        dataset: dataset.into(),
                        column: column.into(),
                    },
                    directness,
                    transformation,
                    expression: expression.map(Into::into),
                },
            )
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};

    #[test]
    fn schemas_round_trip_and_damage_is_a_miss() {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("amount", DataType::Decimal128(12, 2), true),
            Field::new(
                "at",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
        ]);
        let text = hex::encode(encode_schema(&schema));
        assert_eq!(decode_schema(&text), Some(schema));
        assert_eq!(decode_schema(&text[..text.len() / 2]), None);
        assert_eq!(decode_schema("zz"), None);
        assert_eq!(decode_schema("abc"), None);
    }
}
