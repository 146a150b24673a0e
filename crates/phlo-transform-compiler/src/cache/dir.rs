//! Packs in a directory: `<root>/<build>/<stage>/<id>.pack`. The workspace's own cache
//! (`.phlo/cache/compile`) and a directory a team shares (`[cache] url = "/mnt/cache"` or a
//! `file://` URL) are both one of these; they differ in what [`PackStore::prune`] removes.

use phlo_transform_core::pack_store::{Pack, PackStore};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// How long a shared directory keeps what another build wrote last: long enough for a team
/// that upgrades one machine at a time.
const SHARED_KEEP: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Debug)]
pub struct DirPackStore {
    root: PathBuf,
    /// `None`: other builds' packs are removed at once (one user's own cache); else kept while
    /// they were written to within this long.
    keep_others: Option<Duration>,
}

impl DirPackStore {
    /// A workspace's own cache: pruning keeps only the running build's packs.
    pub fn own(root: impl Into<PathBuf>) -> Self {
        DirPackStore {
            root: root.into(),
            keep_others: None,
        }
    }

    /// A directory shared by several machines, possibly on several builds.
    pub fn shared(root: impl Into<PathBuf>) -> Self {
        DirPackStore {
            root: root.into(),
            keep_others: Some(SHARED_KEEP),
        }
    }

    fn stage_dir(&self, build: &str, stage: &str) -> PathBuf {
        self.root.join(build).join(stage)
    }
}

impl PackStore for DirPackStore {
    fn packs(&self, build: &str, stage: &str) -> Result<Vec<Pack>, String> {
        let dir = self.stage_dir(build, stage);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "pack"))
            .collect();
        paths.sort();
        Ok(paths
            .into_iter()
            .filter_map(|path| {
                let bytes = std::fs::read(&path).ok()?;
                let id = path.file_name()?.to_string_lossy().into_owned();
                Some(Pack { id, bytes })
            })
            .collect())
    }

    fn add(&self, build: &str, stage: &str, bytes: &[u8]) -> Result<(), String> {
        let dir = self.stage_dir(build, stage);
        write_pack(&dir, bytes).map_err(|e| format!("cannot write to {}: {e}", dir.display()))
    }

    fn remove(&self, build: &str, stage: &str, ids: &[String]) -> Result<(), String> {
        let dir = self.stage_dir(build, stage);
        for id in ids {
            // Another compile may have compacted the same packs first.
            match std::fs::remove_file(dir.join(id)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("cannot remove a pack in {}: {e}", dir.display()))
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn prune(&self, build: &str) -> Result<(), String> {
        let now = SystemTime::now();
        for entry in std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = entry.path();
            if entry.file_name() == build {
                continue;
            }
            let recent = self
                .keep_others
                .is_some_and(|keep| last_written(&path).is_some_and(|t| age(now, t) < keep));
            if !recent {
                let _ = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}

/// When a build's directory last took a pack: the newest modification time of it and its
/// stage directories (adding a pack touches its stage directory).
fn last_written(build_dir: &Path) -> Option<SystemTime> {
    let own = std::fs::metadata(build_dir).and_then(|m| m.modified()).ok();
    std::fs::read_dir(build_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().and_then(|m| m.modified()).ok())
        .chain(own)
        .max()
}

fn age(now: SystemTime, then: SystemTime) -> Duration {
    now.duration_since(then).unwrap_or_default()
}

/// Writes `bytes` as a new pack in `dir`, under a name no other writer uses, whole or not at
/// all (a temporary file renamed into place).
fn write_pack(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
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
