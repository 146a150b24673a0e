//! Completion: model names, source names and the columns of the datasets the model reads,
//! matching what is typed before the cursor.

use phlo_transform_compiler::Compilation;

use crate::position::Position;
use crate::symbol::{model_of_file, Dataset};

/// At most this many items; the editor asks again as more is typed.
const LIMIT: usize = 500;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Model,
    Source,
    Column,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    /// The column's type and dataset, the dataset's path.
    pub detail: String,
}

/// What may be written at `p` of file `rel`, whose text in the editor is `text`, and whether
/// the list was cut at its limit.
pub fn completions(c: &Compilation, rel: &str, text: &str, p: Position) -> (Vec<Completion>, bool) {
    let typed = typed_before(text, p);
    let (qualifier, prefix) = match typed.rsplit_once('.') {
        Some((q, rest)) => (Some(q.to_string()), rest.to_string()),
        None => (None, typed.clone()),
    };
    let mut out = Vec::new();
    // Columns of what the model reads (after `x.` only those of dataset `x`, when it is one).
    if let Some(i) = model_of_file(c, rel) {
        let mut seen = std::collections::BTreeSet::new();
        for r in &c.models[i].relations {
            let Some(target) = &r.target else { continue };
            let d = Dataset::of(target);
            let name = d.name(c);
            if qualifier
                .as_ref()
                .is_some_and(|q| *q != name && Dataset::named(c, q).is_some())
            {
                continue;
            }
            for (col, ty, _) in d.columns(c).unwrap_or_default() {
                if col.starts_with(&prefix) && seen.insert(col.clone()) {
                    out.push(Completion {
                        label: col,
                        kind: CompletionKind::Column,
                        detail: format!("{ty} · {name}"),
                    });
                }
            }
        }
    }
    // Datasets, by their full name (matched against everything typed, dots included).
    for m in &c.models {
        if m.name.as_str().starts_with(&typed) && m.path != rel {
            out.push(Completion {
                label: m.name.as_str().to_string(),
                kind: CompletionKind::Model,
                detail: m.path.clone(),
            });
        }
    }
    for s in &c.workspace.sources {
        if s.name.starts_with(&typed) {
            out.push(Completion {
                label: s.name.clone(),
                kind: CompletionKind::Source,
                detail: s.location.clone(),
            });
        }
    }
    let cut = out.len() > LIMIT;
    out.truncate(LIMIT);
    (out, cut)
}

/// The dotted word typed just before `p`, lower-cased.
fn typed_before(text: &str, p: Position) -> String {
    let Some(line) = text.lines().nth(p.line) else {
        return String::new();
    };
    let before: Vec<char> = line.chars().take(p.column).collect();
    let start = before
        .iter()
        .rposition(|ch| !(ch.is_alphanumeric() || *ch == '_' || *ch == '.'))
        .map_or(0, |i| i + 1);
    before[start..].iter().collect::<String>().to_lowercase()
}
