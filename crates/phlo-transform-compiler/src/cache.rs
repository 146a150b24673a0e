//! The incremental compile cache (issue 17): what a stage computed for one model, on disk under
//! the workspace's `.phlo/cache/compile/`, so a repeated `check`, `plan` or `run` with few or
//! no edits does not parse and type every model again.
//!
//! Content-addressed: an entry's name is the sha256 of everything its result depends on (the
//! stage computes that key; see `compile::parse_stage` and `typing`), salted with the cache
//! format and the build of the compiler that wrote it, so an entry is never stale, only
//! unused. An entry is one file, written whole to a temporary name of its own and renamed into
//! place (concurrent processes each rename a complete file; the last one wins, and both wrote
//! the same bytes). Reading never fails a compile: a missing, truncated, corrupt or foreign
//! file is a miss, and the stage computes the value and writes the file again.
//!
//! Unused entries are not removed (`phlo-transform clean` removes the directory).

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The first line of every entry; a file without it (another format, a partial write) is a
/// miss. Bump when what a stage stores changes shape.
const HEADER: &str = "phlo-compile-cache 1";

/// Set to `off` to compile without the cache (cold figures, or to rule it out).
pub const DISABLE_ENV: &str = "PHLO_COMPILE_CACHE";

/// Where a workspace's compile cache lives, relative to its root.
pub const DIR: &str = ".phlo/cache/compile";

/// One compile's view of the cache directory (or of no cache).
#[derive(Clone, Debug)]
pub struct CompileCache {
    dir: Option<PathBuf>,
}

/// A stage's entry name: the sha256 of its inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key(String);

/// Builds a [`Key`] from a stage's inputs: every part is length-prefixed, so no two lists of
/// parts hash alike.
pub(crate) struct KeyBuilder(Vec<u8>);

impl KeyBuilder {
    pub(crate) fn new(stage: &str) -> Self {
        let mut k = KeyBuilder(Vec::with_capacity(2048));
        k.add(HEADER).add(build_id()).add(stage);
        k
    }

    pub(crate) fn add(&mut self, part: impl AsRef<[u8]>) -> &mut Self {
        let part = part.as_ref();
        self.0.extend_from_slice(&(part.len() as u64).to_le_bytes());
        self.0.extend_from_slice(part);
        self
    }

    pub(crate) fn finish(&self) -> Key {
        Key(phlo_transform_core::hash::sha256_hex(&self.0))
    }
}

impl CompileCache {
    /// No cache: every stage computes.
    pub fn disabled() -> Self {
        CompileCache { dir: None }
    }

    /// A cache in `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        CompileCache {
            dir: Some(dir.into()),
        }
    }

    /// The cache of the workspace at `root` (`<root>/.phlo/cache/compile`), unless
    /// `PHLO_COMPILE_CACHE=off`.
    pub fn for_workspace(root: &Path) -> Self {
        match std::env::var(DISABLE_ENV) {
            Ok(v) if v.eq_ignore_ascii_case("off") => Self::disabled(),
            _ => Self::at(root.join(DIR)),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.dir.is_some()
    }

    fn path(&self, stage: &str, key: &Key) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(stage).join(&key.0))
    }

    /// The value stored under `key`, or `None` (absent, unreadable, or not what this build
    /// wrote for this key).
    pub(crate) fn get<T: DeserializeOwned>(&self, stage: &str, key: &Key) -> Option<T> {
        let text = std::fs::read_to_string(self.path(stage, key)?).ok()?;
        let rest = text.strip_prefix(HEADER)?.strip_prefix('\n')?;
        let (stored, body) = rest.split_once('\n')?;
        if stored != key.0 {
            return None;
        }
        serde_json::from_str(body).ok()
    }

    /// Stores `value` under `key`. A failure to write only costs the next compile the work.
    pub(crate) fn put<T: Serialize>(&self, stage: &str, key: &Key, value: &T) {
        let Some(path) = self.path(stage, key) else {
            return;
        };
        let Ok(body) = serde_json::to_string(value) else {
            return;
        };
        // Artifacts are written with secrets masked; an entry must be exact, so one that
        // holds a secret (a templated var, a URL with a password) is not written at all.
        if phlo_transform_core::secrets::scrub(&body) != body {
            return;
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_extension(format!("{}.{n}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&tmp, format!("{HEADER}\n{}\n{body}", key.0))?;
            std::fs::rename(&tmp, &path)
        };
        if write().is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// What identifies the compiler that computes the entries: its version and, since a
/// development build changes without a version bump, the size and modification time of the
/// running executable (built-in dialects are compiled into it).
fn build_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let exe = std::env::current_exe()
            .and_then(std::fs::metadata)
            .map(|m| {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_nanos())
                    .unwrap_or_default();
                format!("{}:{modified}", m.len())
            })
            .unwrap_or_default();
        format!("{} {exe}", env!("CARGO_PKG_VERSION"))
    })
}

/// How much of a compile the cache answered, per stage: which models were computed, not how
/// long it took (what tests assert on).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Models whose parse stage came from the cache.
    pub parse_hits: usize,
    /// Models parsed (sorted indices): not in the cache, or the cache is off.
    pub parsed: Vec<usize>,
    /// Models whose typing came from the cache.
    pub type_hits: usize,
    /// Models planned and analysed (sorted indices).
    pub typed: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Key {
        KeyBuilder::new("t").add(s).finish()
    }

    #[test]
    fn round_trips_and_ignores_damaged_files() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::at(dir.path());
        let k = key("a");
        assert_eq!(cache.get::<Vec<u32>>("t", &k), None);
        cache.put("t", &k, &vec![1u32, 2, 3]);
        assert_eq!(cache.get::<Vec<u32>>("t", &k), Some(vec![1, 2, 3]));
        let path = cache.path("t", &k).unwrap();
        let whole = std::fs::read_to_string(&path).unwrap();
        // Truncated, garbage, an older format, another key's body: all misses.
        for damaged in [
            whole[..whole.len() - 3].to_string(),
            "\u{0}\u{1}garbage".to_string(),
            whole.replace(HEADER, "phlo-compile-cache 0"),
            whole.replace(&k.0, &key("b").0),
            String::new(),
        ] {
            std::fs::write(&path, damaged).unwrap();
            assert_eq!(cache.get::<Vec<u32>>("t", &k), None);
        }
        // Rewritten by the next put.
        cache.put("t", &k, &vec![4u32]);
        assert_eq!(cache.get::<Vec<u32>>("t", &k), Some(vec![4]));
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn keys_separate_their_parts() {
        let ab = KeyBuilder::new("t").add("ab").add("c").finish();
        let a_bc = KeyBuilder::new("t").add("a").add("bc").finish();
        assert_ne!(ab, a_bc);
        assert_ne!(
            KeyBuilder::new("parse").add("x").finish(),
            KeyBuilder::new("type").add("x").finish()
        );
    }

    #[test]
    fn a_disabled_cache_stores_nothing() {
        let cache = CompileCache::disabled();
        let k = key("a");
        cache.put("t", &k, &1u8);
        assert_eq!(cache.get::<u8>("t", &k), None);
    }
}
