//! The incremental compile cache (issue 17): what a stage computed for one model, on disk under
//! the workspace's `.phlo/cache/compile/`, so a repeated `check`, `plan` or `run` with few or
//! no edits does not parse and type every model again.
//!
//! Content-addressed: an entry's key is the sha256 of everything its result depends on (the
//! stage computes that key; see `parsed` and `typed_cache`), salted with the cache format and
//! the build of the compiler that wrote it, so an entry is never stale, only unused.
//!
//! Entries are packed: a compile reads a stage's pack files once, on its first lookup, and
//! writes the entries it computed as **one** new pack per stage when it ends
//! ([`CacheSession::flush`]), to a temporary name of its own renamed into place. A file per
//! entry cost a 10,000-model compile 20,000 creates and renames, which on some file systems
//! took longer than the compile (docs/performance.md). Concurrent compiles each add a whole
//! pack. When a stage holds more than [`MAX_PACKS`] packs, the compile that finds them writes
//! one pack of the entries it used (hits and new ones) and removes the packs it read, so
//! entries no compile asks for any more go away.
//!
//! Reading never fails a compile: a missing, truncated, corrupt or foreign pack or record is a
//! miss (a pack is read up to its first damaged record), and the stage computes the value and
//! stores it again.
//!
//! Entries live in a directory of the build that wrote them; each compile removes the other
//! builds' directories ([`CompileCache::prune`]).

use serde::Serialize;
use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The first line of every pack; a file without it (another format, a partial write) holds
/// nothing. Bump when what a stage stores changes shape.
const HEADER: &str = "phlo-compile-cache 2\n";

/// A stage with more packs than this is compacted by the next compile.
pub const MAX_PACKS: usize = 8;

/// Set to `off` to compile without the cache (cold figures, or to rule it out).
pub const DISABLE_ENV: &str = "PHLO_COMPILE_CACHE";

/// Where a workspace's compile cache lives, relative to its root.
pub const DIR: &str = ".phlo/cache/compile";

/// Where a compile cache is (or that there is none); [`CompileCache::session`] reads and
/// writes it for one compile.
#[derive(Clone, Debug)]
pub struct CompileCache {
    /// The cache directory and, in it, this build's own directory: entries of other builds
    /// can never be read by this one, so [`CompileCache::prune`] removes them.
    dirs: Option<(PathBuf, PathBuf)>,
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
        CompileCache {
            dirs: None,
            memory: None,
        }
    }

    /// A cache that lives as long as this value and its clones, for a process that compiles
    /// the same workspace again and again (an editor's language server): nothing is read
    /// from or written to the disk.
    pub fn in_memory() -> Self {
        CompileCache {
            dirs: None,
            memory: Some(Arc::default()),
        }
    }

    /// A cache in `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        let root: PathBuf = dir.into();
        let own = root.join(&phlo_transform_core::hash::sha256_hex(build_id())[..16]);
        CompileCache {
            dirs: Some((root, own)),
            memory: None,
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
        self.dirs.is_some() || self.memory.is_some()
    }

    /// One compile's reads and writes of the cache.
    pub(crate) fn session(&self) -> CacheSession {
        CacheSession {
            dir: self.dirs.as_ref().map(|(_, own)| own.clone()),
            memory: self.memory.clone(),
            stages: Mutex::new(HashMap::new()),
            new: Mutex::new(HashMap::new()),
            new_values: Mutex::new(HashMap::new()),
            used: Mutex::new(Vec::new()),
        }
    }

    /// Removes what other builds of the compiler stored (after an upgrade or a rebuild,
    /// none of it can be read again), so the cache holds one build's entries. A concurrent
    /// process of another build loses only its cache hits.
    pub fn prune(&self) {
        let Some((root, own)) = &self.dirs else {
            return;
        };
        for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let path = entry.path();
            if &path != own {
                let _ = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
            }
        }
    }
}

/// A stage's packs as one compile read them: their bytes and where each entry is.
#[derive(Default)]
struct Packs {
    paths: Vec<PathBuf>,
    bytes: Vec<Vec<u8>>,
    /// Entry key → (pack, body start, body length).
    index: HashMap<String, (usize, usize, usize)>,
}

impl Packs {
    fn read(dir: &Path) -> Packs {
        let mut packs = Packs::default();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "pack"))
            .collect();
        paths.sort();
        for path in paths {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let n = packs.bytes.len();
            for (key, start, len) in records(&bytes) {
                packs.index.insert(key, (n, start, len));
            }
            packs.paths.push(path);
            packs.bytes.push(bytes);
        }
        packs
    }

    fn body(&self, key: &str) -> Option<&[u8]> {
        let &(pack, start, len) = self.index.get(key)?;
        Some(&self.bytes[pack][start..start + len])
    }
}

/// A pack's records, `(key, body start, body length)`, up to the first damaged one. A record
/// is `<64 hex key> <body length>\n<body>\n`.
fn records(bytes: &[u8]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let Some(mut rest) = bytes.strip_prefix(HEADER.as_bytes()) else {
        return out;
    };
    let mut at = HEADER.len();
    while !rest.is_empty() {
        let Some(eol) = rest.iter().position(|&b| b == b'\n') else {
            break;
        };
        let Some((key, len)) = std::str::from_utf8(&rest[..eol])
            .ok()
            .and_then(|line| line.split_once(' '))
            .and_then(|(k, l)| Some((k, l.parse::<usize>().ok()?)))
        else {
            break;
        };
        let start = eol + 1;
        let valid_key = key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid_key || rest.len() < start + len + 1 || rest[start + len] != b'\n' {
            break;
        }
        out.push((key.to_string(), at + start, len));
        rest = &rest[start + len + 1..];
        at += start + len + 1;
    }
    out
}

fn record(out: &mut Vec<u8>, key: &str, body: &[u8]) {
    out.extend_from_slice(format!("{key} {}\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out.push(b'\n');
}

/// One compile's use of the cache: the packs it read (per stage, on first use), the entries
/// it computed and the ones it used, until [`CacheSession::flush`] writes them.
pub(crate) struct CacheSession {
    /// This build's directory (`None`: no cache on disk).
    dir: Option<PathBuf>,
    /// The in-memory cache, when the cache is one.
    memory: Option<Arc<Memory>>,
    stages: Mutex<HashMap<&'static str, Arc<Packs>>>,
    /// New entries per stage: key → body (a cache on disk).
    new: Mutex<HashMap<&'static str, HashMap<String, String>>>,
    /// New entries per stage: key → value (an in-memory cache).
    new_values: Mutex<HashMap<&'static str, HashMap<String, Value>>>,
    /// Entries read from packs: (stage, key).
    used: Mutex<Vec<(&'static str, String)>>,
}

impl CacheSession {
    pub(crate) fn is_enabled(&self) -> bool {
        self.dir.is_some() || self.memory.is_some()
    }

    /// The value stored under `key` in the in-memory cache.
    fn remembered<T: Stored>(&self, stage: &'static str, key: &Key) -> Option<T> {
        let memory = self.memory.as_ref()?;
        let stages = memory.stages.lock().unwrap_or_else(|e| e.into_inner());
        stages.get(stage)?.get(&key.0)?.downcast_ref::<T>().cloned()
    }

    fn packs(&self, stage: &'static str) -> Option<Arc<Packs>> {
        let dir = self.dir.as_ref()?;
        let mut stages = self.stages.lock().unwrap_or_else(|e| e.into_inner());
        Some(
            stages
                .entry(stage)
                .or_insert_with(|| Arc::new(Packs::read(&dir.join(stage))))
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
        if self.dir.is_none() {
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

    /// Writes the compile's new entries, one pack per stage, and compacts a stage that holds
    /// more than [`MAX_PACKS`] packs. A failure to write only costs the next compile the work.
    pub(crate) fn flush(self) {
        if let Some(memory) = self.memory.clone() {
            return self.keep_in(&memory);
        }
        let Some(dir) = &self.dir else {
            return;
        };
        let stages = self.stages.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut new = self.new.into_inner().unwrap_or_else(|e| e.into_inner());
        let used = self.used.into_inner().unwrap_or_else(|e| e.into_inner());
        let names: std::collections::BTreeSet<&'static str> =
            stages.keys().chain(new.keys()).copied().collect();
        for stage in names {
            let new = new.remove(stage).unwrap_or_default();
            let packs = stages.get(stage);
            let compact =
                packs.is_some_and(|p| p.paths.len() + usize::from(!new.is_empty()) > MAX_PACKS);
            if new.is_empty() && !compact {
                continue;
            }
            let mut out = HEADER.as_bytes().to_vec();
            let mut written = std::collections::HashSet::new();
            if let (true, Some(packs)) = (compact, packs) {
                for (_, key) in used.iter().filter(|(s, _)| *s == stage) {
                    if let Some(body) = packs.body(key).filter(|_| written.insert(key.as_str())) {
                        record(&mut out, key, body);
                    }
                }
            }
            for (key, body) in &new {
                if !written.contains(key.as_str()) {
                    record(&mut out, key, body.as_bytes());
                }
            }
            if write_pack(&dir.join(stage), &out).is_ok() && compact {
                for path in packs.map(|p| p.paths.as_slice()).unwrap_or_default() {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
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

/// Writes `bytes` as a new pack in `dir`, under a name no other writer uses, whole or not at
/// all (a temporary file renamed into place).
fn write_pack(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let name = format!(
        "{nanos:032x}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let tmp = dir.join(format!("{name}.tmp"));
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, dir.join(format!("{name}.pack")))
    };
    let result = write();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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

    fn packs(cache: &CompileCache) -> Vec<PathBuf> {
        let dir = cache.dirs.as_ref().unwrap().1.join("t");
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
        assert_eq!(packs(&cache).len(), 1, "one pack, no temporary file");
        let session = cache.session();
        assert_eq!(session.get::<Vec<u32>>("t", &key("a")), Some(vec![1, 2, 3]));
        assert_eq!(session.get::<String>("t", &key("b")).as_deref(), Some("b"));
        // Nothing new: nothing written.
        session.flush();
        assert_eq!(packs(&cache).len(), 1);
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
        let path = packs(&cache).remove(0);
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
            "phlo-compile-cache 2",
            "phlo-compile-cache 1",
            1,
        );
        assert_eq!(hits(older.as_bytes()), 0);
        // A record's length that overruns the next record: read up to it.
        let text = String::from_utf8(whole.clone()).unwrap();
        let first_len = text.lines().nth(1).unwrap().split(' ').nth(1).unwrap();
        let overrun = text.replacen(&format!(" {first_len}\n"), " 9\n", 1);
        assert_eq!(hits(overrun.as_bytes()), 0);
        // A body that is not what the stage stores is a miss of that entry only.
        let first_body = text.lines().nth(2).unwrap();
        let wrong = text.replacen(first_body, &"x".repeat(first_body.len()), 1);
        assert_eq!(hits(wrong.as_bytes()), 2);
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
        assert_eq!(packs(&cache).len(), MAX_PACKS);
        // A compile that uses entries 0 and 1 and computes "new": one pack of those three.
        let session = cache.session();
        assert_eq!(session.get::<usize>("t", &key("0")), Some(0));
        assert_eq!(session.get::<usize>("t", &key("1")), Some(1));
        session.put("t", &key("new"), &99usize);
        session.flush();
        assert_eq!(packs(&cache).len(), 1);
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
