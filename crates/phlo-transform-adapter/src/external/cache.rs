//! The warehouse schema cache, `.phlo/warehouse-schemas.json`: per warehouse (a target's type
//! and address, see [`key`]), the columns of each warehouse relation the models read and when they were read
//! (seconds since the epoch). One JSON document, replaced whole (written beside and renamed),
//! so a reader never sees half of it; an unreadable document is an empty cache.
//!
//! ```json
//! {"targets": {"postgres postgres://postgres@127.0.0.1:5432/analytics":
//!     {"relations": {"raw.orders": {"read_at": 1764570000,
//!                                   "columns": [["id", "bigint"], ["amount", "numeric(12,2)"]]}}}}}
//! ```

use phlo_transform_project::{AdapterKind, AdapterTarget};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long `check` types from a cached schema before it asks the warehouse again.
pub const MAX_AGE: Duration = Duration::from_secs(3600);

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SchemaCache {
    pub targets: BTreeMap<String, TargetSchemas>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct TargetSchemas {
    /// By source name (`raw.orders`).
    pub relations: BTreeMap<String, CachedRelation>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CachedRelation {
    /// When the catalog was read, in seconds since the epoch.
    pub read_at: u64,
    /// Name and declared type (`bigint`, `numeric(12,2)`), in the relation's order.
    pub columns: Vec<(String, String)>,
}

/// The cache file of the workspace at `root`.
pub fn path(root: &Path) -> PathBuf {
    root.join(".phlo").join("warehouse-schemas.json")
}

/// The cache key of `target`: the identity of the warehouse it addresses, its type and its
/// address — the URL without its password (PostgreSQL), the database file's path as
/// configured (DuckDB, relative to the workspace unless absolute). Never the target's name:
/// two names for one warehouse share its schemas, and a target pointed at another server,
/// database or file (or `--adapter` choosing another one) is never typed from schemas read
/// in a different warehouse.
pub fn key(target: &AdapterTarget) -> String {
    let address = match target.kind() {
        AdapterKind::DuckDb => target.settings.path.clone().unwrap_or_default(),
        _ => without_password(target.settings.url.as_deref().unwrap_or_default()),
    };
    format!("{} {address}", target.kind())
}

/// `url` without the password in it (phlo.toml refuses one, A010; this keeps one out of the
/// cache file regardless); anything that is not a URL as the secrets module shows it.
fn without_password(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u) => {
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => phlo_transform_core::secrets::redact_url(raw),
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `seconds` for people: `42 s`, `5 min`, `3 h 5 min`, `2 days`.
pub fn age(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 2 * 86400 => match (s / 3600, s % 3600 / 60) {
            (h, 0) => format!("{h} h"),
            (h, m) => format!("{h} h {m} min"),
        },
        s => format!("{} days", s / 86400),
    }
}

impl SchemaCache {
    /// The cache at `path`; empty when there is none or it cannot be read.
    pub fn load(path: &Path) -> SchemaCache {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Replaces the cache at `path` (a file beside it, renamed into place).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(toml: &str) -> AdapterTarget {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("phlo.toml"), toml).unwrap();
        let ws = phlo_transform_project::Workspace::load(dir.path()).unwrap();
        ws.adapter_target(None).unwrap()
    }

    /// Issue 13: the key was the target's name and type, so a target pointed at another
    /// warehouse was typed from the first one's schemas.
    #[test]
    fn the_key_is_the_warehouse_not_the_target_name() {
        let pg = |url: &str| {
            target(&format!(
                "[adapter]\ntype = \"postgres\"\nurl = \"{url}\"\n"
            ))
        };
        let a = key(&pg("postgres://postgres@127.0.0.1:5432/a"));
        assert_eq!(a, "postgres postgres://postgres@127.0.0.1:5432/a");
        assert_ne!(a, key(&pg("postgres://postgres@127.0.0.1:5432/b")));
        assert_ne!(a, key(&pg("postgres://postgres@10.0.0.1:5432/a")));
        let duck = |path: &str| {
            target(&format!(
                "[adapter]\ntype = \"duckdb\"\npath = \"{path}\"\n"
            ))
        };
        assert_eq!(key(&duck("w.duckdb")), "duckdb w.duckdb");
        assert_ne!(key(&duck("w.duckdb")), key(&duck("other/w.duckdb")));
        assert_eq!(
            without_password("postgres://u:secret@h:5432/d"),
            "postgres://u@h:5432/d"
        );
    }

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(age(42), "42 s");
        assert_eq!(age(300), "5 min");
        assert_eq!(age(3 * 3600), "3 h");
        assert_eq!(age(3 * 3600 + 5 * 60), "3 h 5 min");
        assert_eq!(age(5 * 86400), "5 days");
    }

    #[test]
    fn a_saved_cache_loads_and_a_damaged_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let mut cache = SchemaCache::default();
        cache
            .targets
            .entry("t".into())
            .or_default()
            .relations
            .insert(
                "raw.orders".into(),
                CachedRelation {
                    read_at: 7,
                    columns: vec![("id".into(), "bigint".into())],
                },
            );
        cache.save(&path).unwrap();
        let loaded = SchemaCache::load(&path);
        assert_eq!(loaded.targets["t"].relations["raw.orders"].read_at, 7);
        std::fs::write(&path, "{not json").unwrap();
        assert!(SchemaCache::load(&path).targets.is_empty());
    }
}
