//! `init [DIR]`: writes a new workspace that `run` builds at once on the embedded engine — a
//! CSV source, two models (a table and a view over it), a data test and a README. The files
//! are the templates under `templates/init/`, compiled in.
//!
//! It never overwrites: a directory that holds anything is refused before a file is written,
//! and each file is created with `create_new`, so a file that appears meanwhile is not
//! replaced either.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use std::io::Write as _;
use std::path::Path;

/// Each file of the new workspace: its path in the workspace and its contents.
pub const FILES: &[(&str, &str)] = &[
    ("phlo.toml", include_str!("../templates/init/phlo.toml")),
    ("README.md", include_str!("../templates/init/README.md")),
    // Kept as `gitignore` in the repository, where a `.gitignore` would take effect.
    (".gitignore", include_str!("../templates/init/gitignore")),
    (
        "sources/raw/orders.csv",
        include_str!("../templates/init/sources/raw/orders.csv"),
    ),
    (
        "transforms/shop/orders.sql",
        include_str!("../templates/init/transforms/shop/orders.sql"),
    ),
    (
        "transforms/shop/daily_revenue.sql",
        include_str!("../templates/init/transforms/shop/daily_revenue.sql"),
    ),
    (
        "tests/daily_revenue_matches_orders.sql",
        include_str!("../templates/init/tests/daily_revenue_matches_orders.sql"),
    ),
];

/// What `init` wrote.
#[derive(Debug, Serialize)]
pub struct InitReport {
    /// The workspace directory, as given.
    pub root: String,
    /// The files written, relative to `root`, in the order written.
    pub files: Vec<String>,
}

/// Writes the new workspace into `dir`, creating it (and its parents) when missing.
///
/// Refused with P012 when `dir` exists and is not an empty directory; a file that cannot be
/// written is P013 (the files written before it stay, and are named in its notes).
pub fn init(dir: &Path) -> Result<InitReport, Diagnostic> {
    let shown = dir.display().to_string();
    refuse_unless_empty(dir, &shown, &INIT_REFUSAL)?;
    let mut written = Vec::new();
    for (rel, text) in FILES {
        let path = dir.join(rel);
        write_new(&path, text).map_err(|e| {
            let d = Diagnostic::error(
                codes::INIT_WRITE_FAILED,
                format!("cannot write {}: {e}", path.display()),
            )
            .in_file(path.display().to_string())
            .with_help("check the directory's permissions and free space, then run init again in an empty directory");
            written.iter().fold(d, |d, w: &String| {
                d.with_note(format!("already written: {w}"))
            })
        })?;
        written.push(rel.to_string());
    }
    Ok(InitReport {
        root: shown,
        files: written,
    })
}

/// How a command that writes a new workspace refuses a directory: its codes and help.
pub(crate) struct Refusal {
    pub not_empty: phlo_transform_core::diagnostic::Code,
    pub unreadable: phlo_transform_core::diagnostic::Code,
    pub help: &'static str,
}

const INIT_REFUSAL: Refusal = Refusal {
    not_empty: codes::INIT_TARGET_NOT_EMPTY,
    unreadable: codes::INIT_WRITE_FAILED,
    help:
        "give init a new or empty directory: `phlo-transform init <new-dir>`; it never overwrites",
};

/// `refusal.not_empty` (P012 for init) unless `dir` is missing or an empty directory.
pub(crate) fn refuse_unless_empty(
    dir: &Path,
    shown: &str,
    refusal: &Refusal,
) -> Result<(), Diagnostic> {
    let refuse = |what: String| {
        Diagnostic::error(refusal.not_empty, what)
            .in_file(shown.to_string())
            .with_help(refusal.help)
    };
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            match names.first() {
                None => Ok(()),
                Some(first) => Err(refuse(format!("{shown} is not empty")).with_note(format!(
                    "it holds {} entr{}, the first by name `{first}`",
                    names.len(),
                    if names.len() == 1 { "y" } else { "ies" }
                ))),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) if dir.exists() && !dir.is_dir() => {
            Err(refuse(format!("{shown} exists and is not a directory")))
        }
        Err(e) => Err(
            Diagnostic::error(refusal.unreadable, format!("cannot read {shown}: {e}"))
                .in_file(shown.to_string())
                .with_help("check the directory's permissions"),
        ),
    }
}

/// Creates `path` (and its folders) with `text`; fails if the file exists.
pub(crate) fn write_new(path: &Path, text: impl AsRef<[u8]>) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(text.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_template_into_a_new_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new/ws");
        let report = init(&dir).unwrap();
        assert_eq!(report.files.len(), FILES.len());
        for (rel, text) in FILES {
            assert_eq!(&std::fs::read_to_string(dir.join(rel)).unwrap(), text);
        }
    }

    #[test]
    fn an_empty_directory_is_accepted_and_a_non_empty_one_refused_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        init(tmp.path()).unwrap();

        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("phlo.toml"), "# mine\n").unwrap();
        let d = init(other.path()).unwrap_err();
        assert_eq!(d.code, codes::INIT_TARGET_NOT_EMPTY);
        assert!(d.help.is_some() && d.file.is_some());
        assert_eq!(
            std::fs::read_to_string(other.path().join("phlo.toml")).unwrap(),
            "# mine\n"
        );
        assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let d = init(&file).unwrap_err();
        assert_eq!(d.code, codes::INIT_TARGET_NOT_EMPTY);
        assert!(d.message.contains("not a directory"), "{}", d.message);
    }
}
