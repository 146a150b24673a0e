//! `.phlo/transform/operations.jsonl`: every operation's state, one JSON line per transition,
//! appended and synced before the transition is acknowledged. Read back at start, the last
//! line of each id is its state; one still queued or running belongs to a daemon that is
//! gone and is restored as failed (API009), so a restart never executes a keyed submission
//! twice.

use super::operation::{Operation, Status};
use crate::api_error::ErrorBody;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
}

impl Journal {
    /// Opens (creating) the journal at `path` and returns the operations it holds, the
    /// interrupted ones already marked failed (and journaled so).
    pub fn open(path: &Path) -> Result<(Journal, BTreeMap<String, Operation>), Diagnostic> {
        let unusable = |e: std::io::Error| {
            Diagnostic::error(
                codes::STATE_UNAVAILABLE,
                format!(
                    "the operations journal {} cannot be used: {e}",
                    path.display()
                ),
            )
            .with_help(
                "check the permissions of .phlo/transform/ (the daemon writes its journal there)",
            )
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(unusable)?;
        }
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(unusable(e)),
        };
        let mut operations = BTreeMap::new();
        // A line cut short by a crash mid-write is the only malformed one there can be: the
        // transition it recorded was never acknowledged, so skipping it loses nothing.
        for line in text.lines() {
            if let Ok(op) = serde_json::from_str::<Operation>(line) {
                operations.insert(op.id.clone(), op);
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(unusable)?;
        let journal = Journal {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        };
        for op in operations.values_mut() {
            if !op.status.is_finished() {
                op.finish(
                    Status::Failed,
                    None,
                    Some(ErrorBody::new(
                        codes::API_OPERATION_INTERRUPTED,
                        "the daemon stopped while this operation was queued or running",
                    )),
                );
                journal.record(op)?;
            }
        }
        Ok((journal, operations))
    }

    /// Appends `op`'s state and syncs it to disk.
    pub fn record(&self, op: &Operation) -> Result<(), Diagnostic> {
        let mut line = serde_json::to_string(op).expect("operations serialise");
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(line.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| {
                Diagnostic::error(
                    codes::STATE_UNAVAILABLE,
                    format!(
                        "the operations journal {} cannot be written: {e}",
                        self.path.display()
                    ),
                )
                .with_help("free disk space or fix the permissions of .phlo/transform/")
            })
    }
}
