//! What a watch compares between cycles: each source's identity (what a plan compares with
//! the recorded one), and which files and sources it must poll to see them change.

use phlo_transform_compiler::Compilation;
use phlo_transform_project::fingerprint::Watched;
use phlo_transform_project::SourceDecl;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::target::CommandTarget;

/// Each source's identity (`delta:v3`, `sha256:…,size:…`, `iceberg:snapshot:…`) by name.
pub(super) type Identities = BTreeMap<String, String>;

/// One source whose identity differs from the last cycle's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceChange {
    pub name: String,
    /// `None`: the source is new (or could not be read before).
    pub was: Option<String>,
    /// `None`: the source is gone (or cannot be read now).
    pub now: Option<String>,
}

pub(super) fn identities(c: &Compilation) -> Identities {
    c.catalog
        .sources
        .iter()
        .map(|(name, s)| (name.clone(), s.state.clone()))
        .collect()
}

/// The sources whose identity differs between `was` and `now`, by name.
pub(super) fn changes(was: &Identities, now: &Identities) -> Vec<SourceChange> {
    let names: std::collections::BTreeSet<&String> = was.keys().chain(now.keys()).collect();
    names
        .into_iter()
        .filter(|n| was.get(*n) != now.get(*n))
        .map(|n| SourceChange {
            name: n.clone(),
            was: was.get(n).cloned(),
            now: now.get(n).cloned(),
        })
        .collect()
}

/// What the file poll covers for `c`: its root and every source in local files outside it,
/// without the warehouse and artifact folders a build writes (when they are under the root).
pub fn watched(c: &Compilation, warehouse: &Path, artifacts: &Path) -> Watched {
    let ws = &c.workspace;
    covering(&ws.root, &ws.sources, warehouse, artifacts)
}

/// What the file poll covers before the first compile: the root, as the workspace will
/// resolve it.
pub(super) fn before_compile(t: &CommandTarget<'_>) -> Watched {
    covering(&canonical(t.root), &[], t.warehouse, t.artifacts)
}

fn covering(root: &Path, sources: &[SourceDecl], warehouse: &Path, artifacts: &Path) -> Watched {
    let extra = sources
        .iter()
        .filter(|s| s.in_local_files() && !s.path.starts_with(root))
        .map(|s| s.path.clone())
        .collect();
    Watched {
        root: root.to_path_buf(),
        extra,
        // Compared with the walk's paths, which start from the canonical root.
        skip: vec![canonical(warehouse), canonical(artifacts)],
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Whether a source of `c` changes where no file the poll covers shows it (a REST catalog
/// table, a relation of the warehouse): then the sources are read again on their interval.
pub(super) fn needs_source_polls(c: &Compilation) -> bool {
    let ws = &c.workspace;
    c.catalog.sources.keys().any(|name| {
        !ws.sources
            .iter()
            .any(|s| &s.name == name && s.in_local_files())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(pairs: &[(&str, &str)]) -> Identities {
        pairs
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect()
    }

    #[test]
    fn changes_name_what_moved_appeared_and_went() {
        let was = ids(&[("a", "delta:v0"), ("b", "delta:v4"), ("gone", "x")]);
        let now = ids(&[("a", "delta:v1"), ("b", "delta:v4"), ("new", "y")]);
        let change = |name: &str, was: Option<&str>, now: Option<&str>| SourceChange {
            name: name.into(),
            was: was.map(Into::into),
            now: now.map(Into::into),
        };
        assert_eq!(
            changes(&was, &now),
            [
                change("a", Some("delta:v0"), Some("delta:v1")),
                change("gone", Some("x"), None),
                change("new", None, Some("y")),
            ]
        );
        assert!(changes(&now, &now).is_empty());
    }
}
