//! Whether a folder holds a Delta table, from its `_delta_log` alone.
//!
//! delta-rs creates `_delta_log` before it writes the first commit, so a process killed in
//! between (kill -9, power loss) leaves a log folder with no commit in it. delta-rs cannot open
//! that ("No files in log segment"), and it is no table: nothing was ever committed, so no
//! reader can see data in it. The local engine takes it as absent and the next write commits
//! version 0 into the same folder. Nothing is deleted: data files a killed write left are
//! unreferenced, as after any failed commit, and a later VACUUM removes them.

use std::ffi::OsStr;
use std::path::Path;

/// Whether `table`'s `_delta_log` holds a commit or a checkpoint. A log that cannot be listed
/// counts as a table, so that the error surfaces when it is opened instead of the folder being
/// written over as new.
pub fn has_commit(table: &Path) -> bool {
    let log = table.join("_delta_log");
    if !log.is_dir() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(&log) else {
        return true;
    };
    entries.into_iter().any(|entry| match entry {
        Ok(e) => is_commit_or_checkpoint(&e.file_name()),
        Err(_) => true,
    })
}

/// `<version>.json` (a commit), `<version>.checkpoint[.…].parquet|json` (a checkpoint, classic,
/// multi-part or V2), `<from>.<to>.compacted.json`, or `_last_checkpoint`. Not a `.crc`
/// checksum, nor a commit still being written under a temporary name.
fn is_commit_or_checkpoint(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    if name == "_last_checkpoint" {
        return true;
    }
    let Some((version, rest)) = name.split_once('.') else {
        return false;
    };
    !version.is_empty()
        && version.bytes().all(|b| b.is_ascii_digit())
        && (rest == "json" || rest.ends_with(".json") || rest.ends_with(".parquet"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_with(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("_delta_log")).unwrap();
        for f in files {
            std::fs::write(dir.path().join("_delta_log").join(f), "").unwrap();
        }
        dir
    }

    #[test]
    fn a_log_without_a_commit_is_no_table() {
        assert!(!has_commit(tempfile::tempdir().unwrap().path()));
        assert!(!has_commit(log_with(&[]).path()));
        assert!(!has_commit(
            log_with(&["_commit_3f2a.json.tmp", "00000000000000000000.crc"]).path()
        ));
    }

    #[test]
    fn a_commit_or_a_checkpoint_is_a_table() {
        for files in [
            &["00000000000000000000.json"][..],
            &[
                "00000000000000000010.checkpoint.parquet",
                "_last_checkpoint",
            ],
            &["00000000000000000010.checkpoint.0000000001.0000000002.parquet"],
            &["00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"],
            &["00000000000000000004.00000000000000000006.compacted.json"],
            &["_last_checkpoint"],
        ] {
            assert!(has_commit(log_with(files).path()), "{files:?}");
        }
    }
}
