//! Read-only git commands, shared by `--since` (`git.rs`) and `lineage --diff` (`git_tree.rs`),
//! each of which turns a failure into its own diagnostic.

use std::path::Path;
use std::process::Command;

/// Why a git command gave no output.
pub(crate) enum GitFailure {
    /// git could not be started (not installed, not executable): the error.
    NotRun(String),
    /// git ran and failed: its stderr, trimmed.
    Failed(String),
}

/// Runs `git -C <dir> <args>` without taking optional locks (it never writes the index) and
/// returns its stdout.
pub(crate) fn read_only(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitFailure> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .map_err(|e| GitFailure::NotRun(e.to_string()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(GitFailure::Failed(stderr));
    }
    Ok(out.stdout)
}

/// Whether `reference` can be handed to git as a ref: one starting with `-` would be read as
/// an option (`--since=--output=/tmp/x`), and an empty one or one with control characters is
/// no ref.
pub(crate) fn is_ref_argument(reference: &str) -> bool {
    !reference.is_empty()
        && !reference.starts_with('-')
        && !reference.chars().any(|c| c.is_control())
}
