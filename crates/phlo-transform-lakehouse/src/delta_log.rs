//! A Delta table's log (`<table>/_delta_log`) read from its files alone: which commits it
//! holds, whether it holds any, the newest version and the last checkpoint. The one reader of
//! log folders for every crate: the compiler (source versions, schemas, validation) sits below
//! the local engine and cannot use the engine's Delta code, so both read logs through here.
//! What a commit's actions mean stays with each reader; the file names are decided here.
//!
//! delta-rs creates `_delta_log` before it writes the first commit, so a process killed in
//! between (kill -9, power loss) leaves a log folder with no commit in it. delta-rs cannot open
//! that ("No files in log segment"), and it is no table: nothing was ever committed, so no
//! reader can see data in it ([`has_commit`] is false). Nothing is deleted: data files a killed
//! write left are unreferenced, as after any failed commit, and a later VACUUM removes them.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The log folder's name inside a table folder (named with the other table layouts in
/// `phlo_transform_core::table_layout`, which workspace discovery reads too).
pub const LOG_DIR: &str = phlo_transform_core::table_layout::DELTA_LOG_DIR;

/// `<table>/_delta_log`.
pub fn log_dir(table: &Path) -> PathBuf {
    table.join(LOG_DIR)
}

/// The JSON commit file of `version`: `<table>/_delta_log/<version, 20 digits>.json`.
pub fn commit_file(table: &Path, version: u64) -> PathBuf {
    log_dir(table).join(format!("{version:020}.json"))
}

/// One JSON commit file of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    pub version: u64,
    pub path: PathBuf,
}

/// The version of a JSON commit file's name: `<digits>.json`. Not a checkpoint, a compacted
/// range, a `.crc` checksum, nor a commit still being written under a temporary name.
fn commit_version(name: &OsStr) -> Option<u64> {
    let digits = name.to_str()?.strip_suffix(".json")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Every JSON commit file still in `table`'s log, oldest first. An error when the log folder
/// (or an entry of it) cannot be read, a missing folder included.
pub fn commits(table: &Path) -> std::io::Result<Vec<Commit>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(log_dir(table))? {
        let entry = entry?;
        if let Some(version) = commit_version(&entry.file_name()) {
            out.push(Commit {
                version,
                path: entry.path(),
            });
        }
    }
    out.sort_by_key(|c| c.version);
    Ok(out)
}

/// The newest version with a JSON commit file in `table`'s log (`None`: no commit file).
pub fn latest_version(table: &Path) -> std::io::Result<Option<u64>> {
    Ok(commits(table)?.last().map(|c| c.version))
}

/// When `version` of `table` was committed, in milliseconds since the epoch (UTC): the
/// commit's `commitInfo.inCommitTimestamp` (the in-commit timestamps feature), else its
/// `commitInfo.timestamp`, else the commit file's modification time — the order delta-rs and
/// Spark read a commit's time in. `None` when the commit file cannot be read (a version only a
/// checkpoint holds).
pub fn commit_timestamp_ms(table: &Path, version: u64) -> Option<i64> {
    use std::io::BufRead;
    let path = commit_file(table, version);
    let file = std::fs::File::open(&path).ok()?;
    // Writers put `commitInfo` first; a commit's `add` actions can run to megabytes after it.
    let recorded = std::io::BufReader::new(file).lines().find_map(|line| {
        let action: serde_json::Value = serde_json::from_str(&line.ok()?).ok()?;
        let info = action.get("commitInfo")?;
        info.get("inCommitTimestamp")
            .or_else(|| info.get("timestamp"))?
            .as_i64()
    });
    recorded.or_else(|| {
        let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
        let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
        i64::try_from(since.as_millis()).ok()
    })
}

/// The version `_last_checkpoint` names, when it is there and readable.
pub fn last_checkpoint(table: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(log_dir(table).join("_last_checkpoint")).ok()?;
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()?
        .get("version")?
        .as_u64()
}

/// Whether `table`'s log holds a commit or a checkpoint: whether the folder is a Delta table.
/// A log that cannot be listed counts as a table, so that the error surfaces when it is opened
/// instead of the folder being written over as new.
pub fn has_commit(table: &Path) -> bool {
    let log = log_dir(table);
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
        std::fs::create_dir(log_dir(dir.path())).unwrap();
        for f in files {
            std::fs::write(log_dir(dir.path()).join(f), "").unwrap();
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

    #[test]
    fn commits_are_the_json_commit_files_oldest_first() {
        let dir = log_with(&[
            "00000000000000000002.json",
            "00000000000000000000.json",
            "00000000000000000010.json",
            "00000000000000000001.crc",
            "00000000000000000010.checkpoint.parquet",
            "00000000000000000004.00000000000000000006.compacted.json",
            "00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
            "_commit_3f2a.json.tmp",
            "+7.json",
            "_last_checkpoint",
        ]);
        let versions: Vec<u64> = commits(dir.path())
            .unwrap()
            .iter()
            .map(|c| c.version)
            .collect();
        assert_eq!(versions, [0, 2, 10]);
        assert_eq!(
            commits(dir.path()).unwrap()[1].path,
            commit_file(dir.path(), 2)
        );
        assert_eq!(latest_version(dir.path()).unwrap(), Some(10));
        assert_eq!(latest_version(log_with(&[]).path()).unwrap(), None);
        assert!(commits(tempfile::tempdir().unwrap().path()).is_err());
    }

    #[test]
    fn a_commit_time_is_its_commit_info_else_the_file_time() {
        let dir = log_with(&[]);
        let write = |version: u64, text: &str| {
            std::fs::write(commit_file(dir.path(), version), text).unwrap()
        };
        write(
            0,
            "{\"protocol\":{}}\n{\"commitInfo\":{\"timestamp\":1700000000123,\"operation\":\"WRITE\"}}\n",
        );
        write(
            1,
            "{\"commitInfo\":{\"timestamp\":5,\"inCommitTimestamp\":1700000000999}}\n",
        );
        write(2, "{\"add\":{}}\n");
        assert_eq!(commit_timestamp_ms(dir.path(), 0), Some(1_700_000_000_123));
        assert_eq!(commit_timestamp_ms(dir.path(), 1), Some(1_700_000_000_999));
        let file_time = commit_timestamp_ms(dir.path(), 2).expect("the file's time");
        assert!(file_time > 1_700_000_000_999, "{file_time}");
        assert_eq!(commit_timestamp_ms(dir.path(), 3), None);
    }

    #[test]
    fn the_last_checkpoint_is_read_when_readable() {
        let dir = log_with(&[]);
        assert_eq!(last_checkpoint(dir.path()), None);
        let file = log_dir(dir.path()).join("_last_checkpoint");
        std::fs::write(&file, r#"{"version":10,"size":4}"#).unwrap();
        assert_eq!(last_checkpoint(dir.path()), Some(10));
        std::fs::write(&file, "not json").unwrap();
        assert_eq!(last_checkpoint(dir.path()), None);
    }
}
