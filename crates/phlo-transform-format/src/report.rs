//! What `fmt` did (or, with `--check`, would do) to each file it looked at.

use crate::text::Refusal;
use serde::Serialize;

/// Whether a file is a model or a data test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    Model,
    Test,
}

/// One file's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// Rewritten in place.
    Formatted,
    /// `--check`: formatting would change it (nothing written).
    WouldFormat,
    /// Already formatted.
    Unchanged,
    /// Not formatted, for the reason given (a P014 warning says so).
    LeftAlone,
    /// It does not parse, or could not be written (an error diagnostic says so).
    Error,
}

#[derive(Debug, Serialize)]
pub struct FileReport {
    /// Workspace-relative path.
    pub path: String,
    pub kind: FileKind,
    /// The model's name, or the test's.
    pub name: String,
    pub status: FileStatus,
    /// Why a file was left alone.
    pub reason: Option<Refusal>,
}

/// Files by status.
#[derive(Debug, Default, Serialize)]
pub struct FormatCounts {
    pub formatted: usize,
    pub would_format: usize,
    pub unchanged: usize,
    pub left_alone: usize,
    pub errors: usize,
}

/// The `fmt` report.
#[derive(Debug, Serialize)]
pub struct FormatReport {
    /// `--check`: nothing was written.
    pub check: bool,
    pub counts: FormatCounts,
    /// Every file looked at, in path order.
    pub files: Vec<FileReport>,
}

impl FormatReport {
    pub(crate) fn new(check: bool, files: Vec<FileReport>) -> Self {
        let mut counts = FormatCounts::default();
        for f in &files {
            *match f.status {
                FileStatus::Formatted => &mut counts.formatted,
                FileStatus::WouldFormat => &mut counts.would_format,
                FileStatus::Unchanged => &mut counts.unchanged,
                FileStatus::LeftAlone => &mut counts.left_alone,
                FileStatus::Error => &mut counts.errors,
            } += 1;
        }
        FormatReport {
            check,
            counts,
            files,
        }
    }

    /// `--check` found files that formatting would change (CI fails on it: exit 1).
    pub fn would_change(&self) -> bool {
        self.counts.would_format > 0
    }

    /// The files with `status`.
    pub fn with_status(&self, status: FileStatus) -> impl Iterator<Item = &FileReport> {
        self.files.iter().filter(move |f| f.status == status)
    }
}
