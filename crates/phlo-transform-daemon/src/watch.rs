//! Keeps the live compilation in step with the disk: every `interval` a fingerprint of the
//! workspace's files (path, size, modification time; `.phlo/`, `.git/` and other hidden
//! folders and `target/` left out) is taken, and a change reloads the workspace. Polling,
//! not file-system events: bounded, portable, and the cost is one directory walk.

use phlo_transform_live::LiveWorkspace;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The fingerprint of the files under `root` a compile reads.
pub fn fingerprint(root: &Path) -> u64 {
    let mut entries = Vec::new();
    walk(root, root, &mut entries);
    entries.sort();
    let mut h = DefaultHasher::new();
    entries.hash(&mut h);
    h.finish()
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u64, u128)>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if meta.is_dir() {
            walk(root, &path, out);
        } else {
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push((rel.to_string_lossy().into_owned(), meta.len(), modified));
        }
    }
}

/// Reloads `live` whenever the fingerprint changes, until `stop` is set.
pub fn spawn(
    live: Arc<crate::context::Context>,
    interval: Duration,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("phlo-daemon-watch".into())
        .spawn(move || {
            let root = live.files.root.clone();
            let mut seen = fingerprint(&root);
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(interval);
                let now = fingerprint(&root);
                if now != seen {
                    seen = now;
                    reload(&live.live);
                }
            }
        })
}

fn reload(live: &LiveWorkspace) {
    let published = live.reload();
    if let Some(d) = &published.fatal {
        eprintln!("warning: the workspace cannot be compiled: {}", d.message);
    }
}
