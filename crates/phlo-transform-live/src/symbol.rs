//! What stands at a position of a model file: a relation it reads (a model or a source), a
//! column (of the model's output or of one of its inputs), or a model's name.

use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::Compilation;

use crate::position::{split_at_cursor, word_at, Position, Range};

/// A dataset of the workspace: a model (its index) or a source (its name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Dataset {
    Model(usize),
    Source(String),
}

impl Dataset {
    pub(crate) fn of(target: &Target) -> Dataset {
        match target {
            Target::Model(i) => Dataset::Model(*i),
            Target::Source(s) => Dataset::Source(s.clone()),
        }
    }

    /// The dataset named `name` (a model or a source).
    pub(crate) fn named(c: &Compilation, name: &str) -> Option<Dataset> {
        if let Some(i) = c.model_index(name) {
            return Some(Dataset::Model(i));
        }
        c.workspace
            .sources
            .iter()
            .any(|s| s.name == name)
            .then(|| Dataset::Source(name.to_string()))
    }

    pub(crate) fn name(&self, c: &Compilation) -> String {
        match self {
            Dataset::Model(i) => c.models[*i].name.as_str().to_string(),
            Dataset::Source(s) => s.clone(),
        }
    }

    /// Its columns with their types and nullability, when known.
    pub(crate) fn columns(&self, c: &Compilation) -> Option<Vec<(String, String, bool)>> {
        match self {
            Dataset::Model(i) => c.models[*i].schema.as_ref()?.columns().map(|cols| {
                cols.iter()
                    .map(|col| (col.name.clone(), col.data_type.clone(), col.nullable))
                    .collect()
            }),
            Dataset::Source(s) => match &c.catalog.sources.get(s)?.schema {
                phlo_transform_compiler::schemas::SourceSchema::Known(schema) => Some(
                    schema
                        .fields()
                        .iter()
                        .map(|f| (f.name().clone(), f.data_type().to_string(), f.is_nullable()))
                        .collect(),
                ),
                phlo_transform_compiler::schemas::SourceSchema::Unknown(_) => None,
            },
        }
    }
}

/// A thing an editor can ask about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Symbol {
    Dataset(Dataset),
    Column { dataset: Dataset, column: String },
}

/// The model whose file is `rel`.
pub(crate) fn model_of_file(c: &Compilation, rel: &str) -> Option<usize> {
    c.models.iter().position(|m| m.path == rel)
}

/// What is at `p` in model file `rel`, and the range of its word.
pub(crate) fn symbol_at(c: &Compilation, rel: &str, p: Position) -> Option<(Symbol, Range)> {
    let i = model_of_file(c, rel)?;
    let m = &c.models[i];
    // A relation the model reads, where the compiler saw it.
    for r in &m.relations {
        let (Some(span), Some(target)) = (&r.relation.span, &r.target) else {
            continue;
        };
        let range = Range::of_span(span);
        if range.contains(p) {
            return Some((Symbol::Dataset(Dataset::of(target)), range));
        }
    }
    let text = &c.workspace.models[i].text;
    let (word, range) = word_at(text, p)?;
    if let Some(d) = Dataset::named(c, &word) {
        return Some((Symbol::Dataset(d), range));
    }
    let (qualifier, part) = split_at_cursor(&word, range.start.column, p.column);
    let column = part.to_string();
    // The model's own output column, unless qualified by something else.
    let own = m
        .schema
        .as_ref()
        .and_then(|s| s.columns())
        .is_some_and(|cols| cols.iter().any(|col| col.name == column));
    if own && qualifier.is_none() {
        return Some((
            Symbol::Column {
                dataset: Dataset::Model(i),
                column,
            },
            range,
        ));
    }
    // A column of one of the datasets the model reads.
    for r in &m.relations {
        let Some(target) = &r.target else { continue };
        let d = Dataset::of(target);
        if d.columns(c)
            .is_some_and(|cols| cols.iter().any(|(name, _, _)| *name == column))
        {
            return Some((Symbol::Column { dataset: d, column }, range));
        }
    }
    own.then_some((
        Symbol::Column {
            dataset: Dataset::Model(i),
            column,
        },
        range,
    ))
}
