//! A cheap identity of the files a workspace is made of, for long-lived processes that follow
//! the disk by polling (the daemon's reload, `watch`): every file's path, size and
//! modification time under the workspace's root and under any other path given (a source
//! outside the root), hashed. Hidden entries (`.phlo/`, `.git/`, editors' swap files),
//! `target/` and the folders given to skip are left out: they hold what a build writes, so a
//! build does not look like an edit. Polling, not file-system events: bounded, portable, and
//! the cost is one directory walk.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

/// Comparable with the fingerprint taken earlier of the same paths: any file added, removed,
/// resized or rewritten changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint(u64);

/// What a [`Fingerprint`] covers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Watched {
    /// Walked in full (but for hidden entries and `target/`).
    pub root: PathBuf,
    /// Files or folders outside `root` walked too (a source's location).
    pub extra: Vec<PathBuf>,
    /// Folders under `root` left out (a warehouse or artifacts folder kept there).
    pub skip: Vec<PathBuf>,
}

impl Watched {
    /// The workspace at `root`, nothing else.
    pub fn root(root: &Path) -> Watched {
        Watched {
            root: root.to_path_buf(),
            ..Watched::default()
        }
    }

    /// The fingerprint of the files now.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut entries = Vec::new();
        self.walk(&self.root, &mut entries);
        for path in &self.extra {
            match std::fs::metadata(path) {
                Ok(meta) if meta.is_dir() => self.walk(path, &mut entries),
                Ok(meta) => entries.push(entry(path, &meta)),
                // A location that does not exist (yet) is a state too: its creation shows.
                Err(_) => entries.push((path.to_string_lossy().into_owned(), 0, 0)),
            }
        }
        entries.sort();
        let mut h = DefaultHasher::new();
        entries.hash(&mut h);
        Fingerprint(h.finish())
    }

    fn walk(&self, dir: &Path, out: &mut Vec<(String, u64, u128)>) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for e in read.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            let path = e.path();
            if self.skip.iter().any(|s| s == &path) {
                continue;
            }
            let Ok(meta) = e.metadata() else {
                continue;
            };
            if meta.is_dir() {
                self.walk(&path, out);
            } else {
                out.push(entry(&path, &meta));
            }
        }
    }
}

/// `(path, size, modified in ns)` of one file.
fn entry(path: &Path, meta: &std::fs::Metadata) -> (String, u64, u128) {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    (path.to_string_lossy().into_owned(), meta.len(), modified)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_changes_it_and_hidden_target_and_skipped_folders_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("transforms")).unwrap();
        std::fs::write(root.join("transforms/a.sql"), "select 1").unwrap();
        let outside = tempfile::tempdir().unwrap();
        let source = outside.path().join("orders.csv");
        std::fs::write(&source, "id\n1\n").unwrap();
        let watched = Watched {
            root: root.to_path_buf(),
            extra: vec![source.clone()],
            skip: vec![root.join("warehouse")],
        };
        let first = watched.fingerprint();
        for written in [
            ".phlo/state.db",
            "target/x.json",
            "warehouse/t/part.parquet",
        ] {
            let path = root.join(written);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        assert_eq!(
            watched.fingerprint(),
            first,
            "what a build writes is not an edit"
        );
        std::fs::write(root.join("transforms/a.sql"), "select 22").unwrap();
        let edited = watched.fingerprint();
        assert_ne!(edited, first, "a model edited");
        std::fs::write(&source, "id\n1\n2\n").unwrap();
        assert_ne!(
            watched.fingerprint(),
            edited,
            "a source outside the root changed"
        );
    }
}
