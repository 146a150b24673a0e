//! Pinned relations of the local engine's virtual environments (SPEC §44): an environment
//! reads some models from physical Delta tables outside its own warehouse root (its base's
//! tables) at a fixed version, and writes only into its own root. A pin says where and which
//! version; the identity of a version is a digest of its commit file, so a table deleted and
//! written again (same version number, other contents) never passes for the pinned one.

use phlo_transform_lakehouse::delta_log::{self, commit_file};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// An engine's pins by relation name, shared by the engine (which drops a model's pin when it
/// writes the model) and its session's relations (which open pinned relations where they point).
pub(crate) type Pins = Arc<RwLock<HashMap<String, Pin>>>;

pub(crate) fn read(pins: &Pins) -> RwLockReadGuard<'_, HashMap<String, Pin>> {
    pins.read().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn write(pins: &Pins) -> RwLockWriteGuard<'_, HashMap<String, Pin>> {
    pins.write().unwrap_or_else(PoisonError::into_inner)
}

/// Where one model is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The Delta table folder, or the view definition file.
    pub path: PathBuf,
    pub view: bool,
    /// The table version read (tables only).
    pub delta_version: Option<i64>,
}

/// The newest committed version of the table at `table`, from its log's commit files.
pub fn latest_version(table: &Path) -> Option<i64> {
    let version = delta_log::latest_version(table).ok()??;
    i64::try_from(version).ok()
}

/// The identity of version `version` of the table at `table`: 16 hex digits of SHA-256 of
/// its commit file; `None` when that commit is not in the log.
pub fn commit_identity(table: &Path, version: i64) -> Option<String> {
    let commit = commit_file(table, u64::try_from(version).ok()?);
    let digest = phlo_transform_core::hash::sha256_file(&commit).ok()?;
    Some(format!("delta-commit:{}", &digest[..16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_identities_come_from_the_commit_files() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir(&log).unwrap();
        assert_eq!(latest_version(dir.path()), None);
        std::fs::write(commit_file(dir.path(), 0), "a").unwrap();
        std::fs::write(commit_file(dir.path(), 1), "b").unwrap();
        std::fs::write(log.join("00000000000000000001.crc"), "").unwrap();
        assert_eq!(latest_version(dir.path()), Some(1));
        let one = commit_identity(dir.path(), 1).unwrap();
        assert_ne!(commit_identity(dir.path(), 0).unwrap(), one);
        assert_eq!(commit_identity(dir.path(), 2), None);
        // Rewritten at the same version: another identity.
        std::fs::write(commit_file(dir.path(), 1), "c").unwrap();
        assert_ne!(commit_identity(dir.path(), 1).unwrap(), one);
    }
}
