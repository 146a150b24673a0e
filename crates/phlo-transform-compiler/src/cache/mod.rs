//! The incremental compile cache (issue 17): what a stage computed for one model, so a
//! repeated `check`, `plan` or `run` with few or no edits does not parse and type every model
//! again; kept in the workspace's `.phlo/cache/compile/` and, when configured, in a store a
//! team shares (issue 42: a directory, or the PostgreSQL state store).
//!
//! Content-addressed: an entry's key is the sha256 of everything its result depends on (the
//! stage computes that key; see `parsed` and `typed_cache`), salted with the cache format and
//! the build of the compiler that wrote it (`build`), so an entry is never stale, only unused.
//!
//! Entries are packed (`pack`): a compile reads a stage's packs once, on its first lookup, and
//! writes what it computed as **one** new pack per stage and store when it ends
//! ([`CacheSession::flush`]). A file per entry cost a 10,000-model compile 20,000 creates and
//! renames, which on some file systems took longer than the compile (docs/performance.md).
//! Concurrent compiles each add a whole pack. When a store holds more than [`MAX_PACKS`] packs
//! of a stage, the compile that finds them writes one pack of the entries it used (hits and
//! new ones) and removes the packs it read, so entries no compile asks for any more go away.
//!
//! Stores are tiers, read in order: the workspace's own directory first, then the shared one.
//! A hit in one tier is written to every tier that lacks it (read-through and write-back): a
//! fresh clone fills its own directory from the team's store, and a store configured late
//! fills from the workspaces that compiled before.
//!
//! Reading never fails a compile: a missing, truncated, corrupt or foreign pack or record is a
//! miss, and the stage computes the value and stores it again. A shared store that cannot be
//! reached is a warning (C008), and the compile goes on with what the others hold.

mod build;
mod dir;
mod pack;

pub use dir::DirPackStore;

use pack::{record, Packs, Tier, HEADER};
use phlo_transform_core::pack_store::PackStore;
use serde::Serialize;
use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A stage with more packs than this in a store is compacted there by the next compile.
pub const MAX_PACKS: usize = 8;

/// Set to `off` to compile without the cache (cold figures, or to rule it out).
pub const DISABLE_ENV: &str = "PHLO_COMPILE_CACHE";

/// Where a workspace's compile cache lives, relative to its root.
pub const DIR: &str = ".phlo/cache/compile";

/// Where a compile cache is (or that there is none); [`CompileCache::session`] reads and
/// writes it for one compile.
#[derive(Clone, Debug, Default)]
pub struct CompileCache {
    /// The stores, in the order they are read (none: no cache on disk).
    tiers: Vec<Tier>,
    /// A cache held in memory instead ([`CompileCache::in_memory`]).
    memory: Option<Arc<Memory>>,
}

/// A value held by an in-memory cache: a stage's own type, so a hit is a clone, not a decode.
type Value = Arc<dyn Any + Send + Sync>;

/// The entries of an in-memory cache, per stage: key → value. After each compile a stage
/// holds the entries that compile used or computed, so it never outgrows the workspace.
#[derive(Default)]
struct Memory {
    stages: Mutex<HashMap<&'static str, HashMap<String, Value>>>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stages = self.stages.lock().unwrap_or_else(|e| e.into_inner());
        let sizes: HashMap<_, _> = stages.iter().map(|(s, e)| (*s, e.len())).collect();
        f.debug_struct("Memory").field("entries", &sizes).finish()
    }
}

/// What a stage stores under a key. An in-memory cache keeps the value itself (a hit clones
/// it: decoding JSON and Arrow IPC for every model was most of an editor's recompile); a
/// cache on disk keeps the body `encode` gives.
pub(crate) trait Stored: Clone + Send + Sync + 'static {
    /// The body written to disk; `None` when the value cannot be stored exactly.
    fn encode(&self) -> Option<String>;
    /// The value a body holds; `None` for a body this build did not write.
    fn decode(body: &[u8]) -> Option<Self>;
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
        k.add(HEADER).add(build::build_id()).add(stage);
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
        CompileCache::default()
    }

    /// A cache that lives as long as this value and its clones, for a process that compiles
    /// the same workspace again and again (an editor's language server): nothing is read
    /// from or written to the disk.
    pub fn in_memory() -> Self {
        CompileCache {
            tiers: Vec::new(),
            memory: Some(Arc::default()),
        }
    }

    /// A cache in `dir` (created on first write), one user's own.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        CompileCache::default().then(Arc::new(DirPackStore::own(dir)), false)
    }

    /// The cache of the workspace at `root` (`<root>/.phlo/cache/compile`), unless
    /// `PHLO_COMPILE_CACHE=off`.
    pub fn for_workspace(root: &Path) -> Self {
        match Self::turned_off() {
            true => Self::disabled(),
            false => Self::at(root.join(DIR)),
        }
    }

    /// Whether `PHLO_COMPILE_CACHE=off` turns every cache off.
    pub fn turned_off() -> bool {
        std::env::var(DISABLE_ENV).is_ok_and(|v| v.eq_ignore_ascii_case("off"))
    }

    /// This cache, with `store` (a team's) read after its own stores and written back to.
    /// An in-memory cache stays in memory.
    pub fn with_shared(self, store: Arc<dyn PackStore>) -> Self {
        match self.memory.is_some() {
            true => self,
            false => self.then(store, true),
        }
    }

    fn then(mut self, store: Arc<dyn PackStore>, shared: bool) -> Self {
        self.tiers.push(Tier { store, shared });
        self
    }

    pub fn is_enabled(&self) -> bool {
        !self.tiers.is_empty() || self.memory.is_some()
    }

    /// Where the cache reads and writes, in order, for messages.
    pub fn describe(&self) -> Vec<String> {
        self.tiers.iter().map(|t| t.store.describe()).collect()
    }

    /// One compile's reads and writes of the cache.
    pub(crate) fn session(&self) -> CacheSession {
        CacheSession {
            tiers: self.tiers.clone(),
            memory: self.memory.clone(),
            stages: Mutex::new(HashMap::new()),
            new: Mutex::new(HashMap::new()),
            new_values: Mutex::new(HashMap::new()),
            used: Mutex::new(Vec::new()),
            errors: Mutex::new(Vec::new()),
        }
    }

    /// Removes what other builds of the compiler stored and no compile of this one can read
    /// (after an upgrade or a rebuild). A concurrent process of another build loses only its
    /// cache hits; a shared store keeps other builds' recent packs.
    pub fn prune(&self) -> Vec<String> {
        self.tiers
            .iter()
            .filter_map(|t| match t.store.prune(build::build_name()) {
                Err(e) if t.shared => Some(e),
                _ => None,
            })
            .collect()
    }
}

/// One compile's use of the cache: the packs it read (per stage, on first use), the entries
/// it computed and the ones it used, until [`CacheSession::flush`] writes them.
pub(crate) struct CacheSession {
    /// The stores, in the order they are read.
    tiers: Vec<Tier>,
    /// The in-memory cache, when the cache is one.
    memory: Option<Arc<Memory>>,
    stages: Mutex<HashMap<&'static str, Arc<Packs>>>,
    /// New entries per stage: key → body (a cache in stores).
    new: Mutex<HashMap<&'static str, HashMap<String, String>>>,
    /// New entries per stage: key → value (an in-memory cache).
    new_values: Mutex<HashMap<&'static str, HashMap<String, Value>>>,
    /// Entries read from packs: (stage, key).
    used: Mutex<Vec<(&'static str, String)>>,
    /// What shared stores answered when they failed.
    errors: Mutex<Vec<String>>,
}

impl CacheSession {
    pub(crate) fn is_enabled(&self) -> bool {
        !self.tiers.is_empty() || self.memory.is_some()
    }

    /// The value stored under `key` in the in-memory cache.
    fn remembered<T: Stored>(&self, stage: &'static str, key: &Key) -> Option<T> {
        let memory = self.memory.as_ref()?;
        let stages = memory.stages.lock().unwrap_or_else(|e| e.into_inner());
        stages.get(stage)?.get(&key.0)?.downcast_ref::<T>().cloned()
    }

    fn packs(&self, stage: &'static str) -> Option<Arc<Packs>> {
        if self.tiers.is_empty() {
            return None;
        }
        let mut stages = self.stages.lock().unwrap_or_else(|e| e.into_inner());
        Some(
            stages
                .entry(stage)
                .or_insert_with(|| {
                    let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
                    Arc::new(Packs::read(
                        &self.tiers,
                        build::build_name(),
                        stage,
                        &mut errors,
                    ))
                })
                .clone(),
        )
    }

    /// The value stored under `key`, or `None` (absent, damaged, or not what this build
    /// wrote).
    pub(crate) fn get<T: Stored>(&self, stage: &'static str, key: &Key) -> Option<T> {
        let value = match self.memory.is_some() {
            true => self.remembered(stage, key)?,
            false => T::decode(self.packs(stage)?.body(&key.0)?)?,
        };
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((stage, key.0.clone()));
        Some(value)
    }

    /// Stores `value` under `key` when the compile ends.
    pub(crate) fn put<T: Stored>(&self, stage: &'static str, key: &Key, value: &T) {
        if self.memory.is_some() {
            // Nothing leaves the process: the value is kept as it is.
            self.new_values
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(stage)
                .or_default()
                .insert(key.0.clone(), Arc::new(value.clone()));
            return;
        }
        if self.tiers.is_empty() {
            return;
        }
        let Some(body) = value.encode() else {
            return;
        };
        // Artifacts are written with secrets masked; an entry must be exact, so one that
        // holds a secret (a templated var, a URL with a password) is not written at all.
        if phlo_transform_core::secrets::scrub(&body) != body {
            return;
        }
        self.new
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(stage)
            .or_default()
            .insert(key.0.clone(), body);
    }

    /// Writes the compile's entries: per stage and store, one pack of what it computed and of
    /// the hits that store lacks, and compacts a store's stage that holds more than
    /// [`MAX_PACKS`] packs. Returns what shared stores answered when they failed (a failure
    /// only costs the next compile the work).
    pub(crate) fn flush(self) -> Vec<String> {
        if let Some(memory) = self.memory.clone() {
            self.keep_in(&memory);
            return Vec::new();
        }
        let stages = self.stages.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut new = self.new.into_inner().unwrap_or_else(|e| e.into_inner());
        let used = self.used.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut errors = self.errors.into_inner().unwrap_or_else(|e| e.into_inner());
        let names: std::collections::BTreeSet<&'static str> =
            stages.keys().chain(new.keys()).copied().collect();
        let build = build::build_name();
        for stage in names {
            let new = new.remove(stage).unwrap_or_default();
            let empty = Packs::default();
            let packs = stages.get(stage).map_or(&empty, |p| p.as_ref());
            let used: Vec<&str> = used
                .iter()
                .filter(|(s, _)| *s == stage)
                .map(|(_, k)| k.as_str())
                .collect();
            for (t, tier) in self.tiers.iter().enumerate() {
                let adds = !new.is_empty() || used.iter().any(|k| !packs.holds(t, k));
                let compact = packs.count(t) + usize::from(adds) > MAX_PACKS;
                let mut out = HEADER.as_bytes().to_vec();
                let mut written = std::collections::HashSet::new();
                for &key in &used {
                    let wanted = compact || !packs.holds(t, key);
                    if let Some(body) = packs.body(key).filter(|_| wanted && written.insert(key)) {
                        record(&mut out, key, body);
                    }
                }
                for (key, body) in &new {
                    if written.insert(key.as_str()) {
                        record(&mut out, key, body.as_bytes());
                    }
                }
                if written.is_empty() && !compact {
                    continue;
                }
                let mut result = tier.store.add(build, stage, &out);
                if result.is_ok() && compact {
                    result = tier.store.remove(build, stage, &packs.ids(t));
                }
                if let (Err(e), true) = (result, tier.shared) {
                    errors.push(e);
                }
            }
        }
        errors.sort();
        errors.dedup();
        errors
    }
}

impl CacheSession {
    /// An in-memory cache's flush: each stage the compile asked keeps what it used and what
    /// it computed, nothing else.
    fn keep_in(self, memory: &Memory) {
        let new = self
            .new_values
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let used = self.used.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut stages = memory.stages.lock().unwrap_or_else(|e| e.into_inner());
        let mut kept: HashMap<&'static str, HashMap<String, Value>> = HashMap::new();
        for (stage, key) in used {
            if let Some(value) = stages.get(stage).and_then(|s| s.get(&key)) {
                kept.entry(stage).or_default().insert(key, value.clone());
            }
        }
        for (stage, entries) in new {
            kept.entry(stage).or_default().extend(entries);
        }
        *stages = kept;
    }
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

    /// Test values stored as JSON, as the parse stage stores its own.
    macro_rules! json_stored {
        ($($t:ty),*) => {$(
            impl Stored for $t {
                fn encode(&self) -> Option<String> {
                    serde_json::to_string(self).ok()
                }
                fn decode(body: &[u8]) -> Option<Self> {
                    serde_json::from_slice(body).ok()
                }
            }
        )*};
    }
    json_stored!(Vec<u32>, String, usize, u8);

    fn key(s: &str) -> Key {
        KeyBuilder::new("t").add(s).finish()
    }

    /// The packs of stage `t` in the cache directory `root`.
    fn packs(root: &Path) -> Vec<PathBuf> {
        let dir = root.join(build::build_name()).join("t");
        let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_session_writes_one_pack_read_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::at(dir.path());
        let session = cache.session();
        assert_eq!(session.get::<Vec<u32>>("t", &key("a")), None);
        session.put("t", &key("a"), &vec![1u32, 2, 3]);
        session.put("t", &key("b"), &"b".to_string());
        // Not visible before the flush: the pack is written when the compile ends.
        assert_eq!(session.get::<Vec<u32>>("t", &key("a")), None);
        session.flush();
        assert_eq!(packs(dir.path()).len(), 1, "one pack, no temporary file");
        let session = cache.session();
        assert_eq!(session.get::<Vec<u32>>("t", &key("a")), Some(vec![1, 2, 3]));
        assert_eq!(session.get::<String>("t", &key("b")).as_deref(), Some("b"));
        // Nothing new: nothing written.
        session.flush();
        assert_eq!(packs(dir.path()).len(), 1);
    }

    #[test]
    fn damaged_packs_are_read_up_to_the_damage() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::at(dir.path());
        let session = cache.session();
        for k in ["a", "b", "c"] {
            session.put("t", &key(k), &k.to_string());
        }
        session.flush();
        let path = packs(dir.path()).remove(0);
        let whole = std::fs::read(&path).unwrap();
        let hits = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let session = cache.session();
            ["a", "b", "c"]
                .iter()
                .filter(|k| session.get::<String>("t", &key(k)).is_some())
                .count()
        };
        assert_eq!(hits(&whole), 3);
        // Truncated in the last record: the first two survive.
        assert_eq!(hits(&whole[..whole.len() - 3]), 2);
        // Garbage, empty, an older format: nothing.
        assert_eq!(hits(b"\x00\xff not a pack"), 0);
        assert_eq!(hits(b""), 0);
        let older = String::from_utf8(whole.clone()).unwrap().replacen(
            "phlo-compile-cache 3",
            "phlo-compile-cache 2",
            1,
        );
        assert_eq!(hits(older.as_bytes()), 0);
        // A record's length that overruns the next record: read up to it.
        let text = String::from_utf8(whole.clone()).unwrap();
        let first_len = text.lines().nth(1).unwrap().split(' ').nth(1).unwrap();
        let overrun = text.replacen(&format!(" {first_len} "), " 9 ", 1);
        assert_eq!(hits(overrun.as_bytes()), 0);
        // A body that is not what the stage stores is a miss of that entry only.
        let first_body = text.lines().nth(2).unwrap();
        let wrong = text.replacen(first_body, &"x".repeat(first_body.len()), 1);
        assert_eq!(hits(wrong.as_bytes()), 2);
    }

    #[test]
    fn a_body_that_fails_its_checksum_is_a_miss_even_when_it_decodes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::at(dir.path());
        let session = cache.session();
        session.put("t", &key("a"), &"right".to_string());
        session.put("t", &key("b"), &"other".to_string());
        session.flush();
        let path = packs(dir.path()).remove(0);
        let text = std::fs::read_to_string(&path).unwrap();
        // Same length, still a JSON string: only the checksum tells.
        std::fs::write(&path, text.replacen("\"right\"", "\"wrong\"", 1)).unwrap();
        let session = cache.session();
        assert_eq!(session.get::<String>("t", &key("a")), None);
        assert_eq!(
            session.get::<String>("t", &key("b")).as_deref(),
            Some("other")
        );
        // A body moved under another key fails it too.
        let (a, b) = (key("a").0, key("b").0);
        std::fs::write(
            &path,
            text.replace(&a, "K").replace(&b, &a).replace("K", &b),
        )
        .unwrap();
        let session = cache.session();
        assert_eq!(session.get::<String>("t", &key("a")), None);
        assert_eq!(session.get::<String>("t", &key("b")), None);
    }

    #[test]
    fn a_shared_store_fills_a_fresh_cache_and_is_filled_by_one_that_compiled_before() {
        let (own, team, fresh) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let shared = |c: CompileCache| c.with_shared(Arc::new(DirPackStore::shared(team.path())));
        // A workspace compiled before the team's store was configured.
        let session = CompileCache::at(own.path()).session();
        session.put("t", &key("a"), &1u8);
        session.flush();
        // With the store configured, its hit is written back to the store.
        let session = shared(CompileCache::at(own.path())).session();
        assert_eq!(session.get::<u8>("t", &key("a")), Some(1));
        session.put("t", &key("b"), &2u8);
        assert_eq!(session.flush(), Vec::<String>::new());
        assert_eq!(packs(team.path()).len(), 1);
        assert_eq!(packs(own.path()).len(), 2);
        // A fresh clone reads both from the store and keeps them in its own directory.
        let session = shared(CompileCache::at(fresh.path())).session();
        assert_eq!(session.get::<u8>("t", &key("a")), Some(1));
        assert_eq!(session.get::<u8>("t", &key("b")), Some(2));
        session.flush();
        assert_eq!(packs(team.path()).len(), 1, "nothing new for the store");
        let session = CompileCache::at(fresh.path()).session();
        assert_eq!(session.get::<u8>("t", &key("b")), Some(2));
    }

    #[test]
    fn a_shared_store_that_fails_is_reported_and_the_compile_goes_on() {
        let own = tempfile::tempdir().unwrap();
        let file = own.path().join("not-a-directory");
        std::fs::write(&file, "x").unwrap();
        let cache = CompileCache::at(own.path().join("own"))
            .with_shared(Arc::new(DirPackStore::shared(&file)));
        let session = cache.session();
        assert_eq!(session.get::<u8>("t", &key("a")), None);
        session.put("t", &key("a"), &1u8);
        let errors = session.flush();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors.iter().all(|e| e.contains("not-a-directory")),
            "{errors:?}"
        );
        assert_eq!(cache.session().get::<u8>("t", &key("a")), Some(1));
    }

    #[test]
    fn many_packs_are_compacted_to_the_entries_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::at(dir.path());
        for n in 0..MAX_PACKS {
            let session = cache.session();
            session.put("t", &key(&n.to_string()), &n);
            session.flush();
        }
        assert_eq!(packs(dir.path()).len(), MAX_PACKS);
        // A compile that uses entries 0 and 1 and computes "new": one pack of those three.
        let session = cache.session();
        assert_eq!(session.get::<usize>("t", &key("0")), Some(0));
        assert_eq!(session.get::<usize>("t", &key("1")), Some(1));
        session.put("t", &key("new"), &99usize);
        session.flush();
        assert_eq!(packs(dir.path()).len(), 1);
        let session = cache.session();
        assert_eq!(session.get::<usize>("t", &key("0")), Some(0));
        assert_eq!(session.get::<usize>("t", &key("new")), Some(99));
        assert_eq!(session.get::<usize>("t", &key("2")), None);
    }

    #[test]
    fn pruning_keeps_only_this_builds_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::at(dir.path());
        let session = cache.session();
        session.put("t", &key("a"), &1u8);
        session.flush();
        std::fs::create_dir_all(dir.path().join("0123456789abcdef/t")).unwrap();
        std::fs::write(dir.path().join("0123456789abcdef/t/x"), "old").unwrap();
        std::fs::write(dir.path().join("stray"), "x").unwrap();
        cache.prune();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(cache.session().get::<u8>("t", &key("a")), Some(1));
        CompileCache::disabled().prune();
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
    fn an_in_memory_cache_keeps_what_the_last_compile_used() {
        let cache = CompileCache::in_memory();
        let session = cache.session();
        session.put("t", &key("a"), &vec![1u32]);
        session.put("t", &key("b"), &"b".to_string());
        session.flush();
        let session = cache.session();
        assert_eq!(session.get::<Vec<u32>>("t", &key("a")), Some(vec![1]));
        // Another type under the key is a miss, never a wrong value.
        assert_eq!(session.get::<String>("t", &key("a")), None);
        session.flush();
        let session = cache.session();
        assert_eq!(session.get::<Vec<u32>>("t", &key("a")), Some(vec![1]));
        assert_eq!(
            session.get::<String>("t", &key("b")),
            None,
            "not used: dropped"
        );
    }

    #[test]
    fn a_disabled_cache_stores_nothing() {
        let session = CompileCache::disabled().session();
        session.put("t", &key("a"), &1u8);
        session.flush();
        assert_eq!(
            CompileCache::disabled().session().get::<u8>("t", &key("a")),
            None
        );
    }
}
