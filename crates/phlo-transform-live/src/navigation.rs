//! Go to definition and find references: from a relation to its model file or source, from a
//! column to the upstream column it comes from; the models that read a model, the models
//! whose columns derive from a column (column lineage).

use phlo_transform_compiler::lineage::Directness;
use phlo_transform_compiler::Compilation;
use phlo_transform_project::SourceOrigin;

use crate::position::{occurrences, Position, Range};
use crate::symbol::{model_of_file, symbol_at, Dataset, Symbol};

/// A range of a workspace file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRange {
    /// Workspace-relative path.
    pub path: String,
    pub range: Range,
}

/// Where what stands at `p` of file `rel` is defined.
pub fn definition(c: &Compilation, rel: &str, p: Position) -> Vec<FileRange> {
    let Some((symbol, _)) = symbol_at(c, rel, p) else {
        return Vec::new();
    };
    match symbol {
        Symbol::Dataset(d) => declaration(c, &d).into_iter().collect(),
        Symbol::Column { dataset, column } => {
            let own = model_of_file(c, rel).map(Dataset::Model);
            if own.as_ref() == Some(&dataset) {
                // The model's own column: where its value comes from.
                return upstream_columns(c, &dataset, &column)
                    .into_iter()
                    .filter_map(|(d, col)| column_in(c, &d, &col))
                    .collect();
            }
            column_in(c, &dataset, &column).into_iter().collect()
        }
    }
}

/// Where what stands at `p` of file `rel` is used: the relations that read a dataset, the
/// columns derived from a column.
pub fn references(c: &Compilation, rel: &str, p: Position) -> Vec<FileRange> {
    let Some((symbol, _)) = symbol_at(c, rel, p) else {
        return Vec::new();
    };
    match symbol {
        Symbol::Dataset(d) => readers(c, &d),
        Symbol::Column { dataset, column } => {
            let name = dataset.name(c);
            let mut out = Vec::new();
            for (k, m) in c.models.iter().enumerate() {
                let reads = m.column_lineage.iter().flatten().any(|cd| {
                    cd.derivations
                        .iter()
                        .any(|d| *d.input.dataset == name && *d.input.column == column)
                });
                if reads {
                    let text = &c.workspace.models[k].text;
                    out.extend(
                        occurrences(text, &column)
                            .into_iter()
                            .map(|range| FileRange {
                                path: m.path.clone(),
                                range,
                            }),
                    );
                }
            }
            out
        }
    }
}

/// Every relation in a model that reads `d`, where it is written.
pub(crate) fn readers(c: &Compilation, d: &Dataset) -> Vec<FileRange> {
    let mut out = Vec::new();
    for m in &c.models {
        for r in &m.relations {
            let (Some(span), Some(target)) = (&r.relation.span, &r.target) else {
                continue;
            };
            if Dataset::of(target) == *d {
                out.push(FileRange {
                    path: m.path.clone(),
                    range: Range::of_span(span),
                });
            }
        }
    }
    out
}

/// The file a dataset is declared in: a model's file; a declared source's `phlo.toml`, a
/// source found by convention its data file, when inside the workspace.
fn declaration(c: &Compilation, d: &Dataset) -> Option<FileRange> {
    let path = match d {
        Dataset::Model(i) => c.models[*i].path.clone(),
        Dataset::Source(name) => {
            let s = c.workspace.sources.iter().find(|s| s.name == *name)?;
            match s.origin {
                SourceOrigin::Declared => "phlo.toml".to_string(),
                SourceOrigin::Convention => {
                    let rel = s.path.strip_prefix(&c.workspace.root).ok()?;
                    rel.to_string_lossy().replace('\\', "/")
                }
            }
        }
    };
    Some(FileRange {
        path,
        range: Range::file_start(),
    })
}

/// The input columns model `d`'s `column` takes its value from (direct lineage).
fn upstream_columns(c: &Compilation, d: &Dataset, column: &str) -> Vec<(Dataset, String)> {
    let Dataset::Model(i) = d else {
        return Vec::new();
    };
    let m = &c.models[*i];
    let Some(position) = m
        .schema
        .as_ref()
        .and_then(|s| s.columns())
        .and_then(|cols| cols.iter().position(|col| col.name == column))
    else {
        return Vec::new();
    };
    let Some(derivations) = m.column_lineage.as_ref().and_then(|l| l.get(position)) else {
        return Vec::new();
    };
    derivations
        .derivations
        .iter()
        .filter(|d| d.directness == Directness::Direct)
        .filter_map(|d| {
            Some((
                Dataset::named(c, &d.input.dataset)?,
                d.input.column.to_string(),
            ))
        })
        .collect()
}

/// Where `column` of `d` is written: its first occurrence in a model's file, else where the
/// dataset is declared.
fn column_in(c: &Compilation, d: &Dataset, column: &str) -> Option<FileRange> {
    if let Dataset::Model(i) = d {
        let text = &c.workspace.models[*i].text;
        if let Some(range) = occurrences(text, column).into_iter().next() {
            return Some(FileRange {
                path: c.models[*i].path.clone(),
                range,
            });
        }
    }
    declaration(c, d)
}
