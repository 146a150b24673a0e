//! `fmt`: formats a workspace's model and test files in place with `sqlformat` (issue 43).
//! The header directives and every comment are kept, and a file is only rewritten when the
//! result is the same query — the same canonical SQL, hence the same model version — and
//! formatting it again changes nothing ([`text`]). With `check`, nothing is written and the
//! report lists the files that would change.

pub mod report;
mod select;
pub mod text;

pub use report::{FileKind, FileReport, FileStatus, FormatCounts, FormatReport};
pub use text::{format_text, Outcome, Refusal};

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::Workspace;
use std::path::Path;

/// What `fmt` is asked to do.
pub struct Request<'a> {
    pub workspace: &'a Workspace,
    /// Files, folders, names or globs (see [`select`]); none: every model and test.
    pub targets: &'a [String],
    /// What relative paths in `targets` are relative to.
    pub cwd: &'a Path,
    /// Write nothing; report what would change.
    pub check: bool,
}

/// The report and every diagnostic met: P014 for each file left alone (a warning), the
/// parse error of a file that does not parse, P015 for a file that could not be written, and
/// the workspace's own P007/P010 (files it could not read, so `fmt` cannot see them).
/// Unknown targets stop it before anything is written.
pub fn format_workspace(
    request: Request<'_>,
) -> Result<(FormatReport, Vec<Diagnostic>), Vec<Diagnostic>> {
    let ws = request.workspace;
    let candidates = select::select(ws, request.targets, request.cwd)?;
    let mut diagnostics: Vec<Diagnostic> = ws
        .diagnostics
        .0
        .iter()
        .filter(|d| d.code == codes::UNREADABLE_MODEL || d.code == codes::UNREADABLE_FOLDER)
        .cloned()
        .collect();
    let mut files = Vec::with_capacity(candidates.len());
    for c in candidates {
        let (status, reason) = match format_text(c.text, c.path) {
            Err(d) => {
                diagnostics.push(d);
                (FileStatus::Error, None)
            }
            Ok(Outcome::Unchanged) => (FileStatus::Unchanged, None),
            Ok(Outcome::Refused(reason)) => {
                diagnostics.push(left_alone(c.path, reason));
                (FileStatus::LeftAlone, Some(reason))
            }
            Ok(Outcome::Formatted(_)) if request.check => (FileStatus::WouldFormat, None),
            Ok(Outcome::Formatted(text)) => match std::fs::write(ws.root.join(c.path), text) {
                Ok(()) => (FileStatus::Formatted, None),
                Err(e) => {
                    diagnostics.push(
                        Diagnostic::error(
                            codes::FORMAT_WRITE_FAILED,
                            format!("cannot write {}: {e}", c.path),
                        )
                        .in_file(c.path)
                        .with_help("check the file's permissions; it was left as it was"),
                    );
                    (FileStatus::Error, None)
                }
            },
        };
        files.push(FileReport {
            path: c.path.to_string(),
            kind: c.kind,
            name: c.name.to_string(),
            status,
            reason,
        });
    }
    Ok((FormatReport::new(request.check, files), diagnostics))
}

/// P014 at the file: left as it is, and why.
fn left_alone(path: &str, reason: Refusal) -> Diagnostic {
    let help = match reason {
        Refusal::Templated => "templated files are left as written; format them by hand",
        _ => "the file is left as written; format it by hand, or put `-- fmt: off` / `-- fmt: on` around the part the formatter mishandles",
    };
    Diagnostic::warning(
        codes::FORMAT_LEFT_ALONE,
        format!("not formatted: {}", reason.describe()),
    )
    .in_file(path)
    .at(1, 1)
    .with_help(help)
}
