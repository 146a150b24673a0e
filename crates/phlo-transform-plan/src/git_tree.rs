//! The workspace as it was at a Git ref (`lineage --diff <ref>`, SPEC §55): the subtree of the
//! workspace at merge-base(ref, HEAD), written from Git's objects into a temporary directory
//! (`ls-tree` and `cat-file`). Only read-only `git` commands run and optional index locks are
//! disabled: the work tree, the index and the refs are never touched.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Code, Diagnostic};
use serde::Serialize;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::git_command::{self, GitFailure};

/// The commit a workspace was materialised from, and the work tree it is compared with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GitBase {
    /// The ref as requested (`main`).
    pub requested_ref: String,
    /// merge-base(ref, HEAD): the commit materialised.
    pub commit: String,
    /// HEAD of the work tree.
    pub head: String,
    /// Whether the workspace's subtree of the work tree differs from HEAD (tracked changes or
    /// untracked files).
    pub worktree_dirty: bool,
}

/// A workspace materialised from Git; the directory is removed when this is dropped.
pub struct GitTree {
    pub base: GitBase,
    dir: tempfile::TempDir,
    prefix: PathBuf,
}

impl GitTree {
    /// The materialised workspace's root (what `Workspace::load` takes).
    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join(&self.prefix)
    }
}

/// The workspace at `root` as it was at merge-base(`reference`, HEAD).
pub fn materialise(root: &Path, reference: &str) -> Result<GitTree, Diagnostic> {
    check_reference(reference)?;
    let repo = |args: &[&str]| run(root, args, codes::NOT_A_GIT_REPOSITORY);
    let top = repo(&["rev-parse", "--show-toplevel"]).map_err(|d| Diagnostic {
        message: format!("`{}` is not inside a Git repository", root.display()),
        ..d
    })?;
    let top = PathBuf::from(line(top));
    let prefix = line(repo(&["rev-parse", "--show-prefix"])?);
    let unknown = |args: &[&str]| run(&top, args, codes::UNKNOWN_GIT_REF);
    let head = unknown(&["rev-parse", "--verify", "--end-of-options", "HEAD^{commit}"])
        .map_err(|d| d.with_note("the repository has no commit yet"))?;
    let head = line(head);
    let wanted = format!("{reference}^{{commit}}");
    unknown(&[
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &wanted,
    ])
    .map_err(|d| Diagnostic {
        message: format!("`{reference}` names no commit in this repository"),
        ..d
    })?;
    let commit = line(unknown(&[
        "merge-base",
        "--end-of-options",
        reference,
        "HEAD",
    ])?);
    let missing = |what: &str| {
        Diagnostic::error(
            codes::WORKSPACE_MISSING_AT_REF,
            format!(
                "the workspace `{}` has no {what} at {reference} (merge-base {})",
                pathspec(&prefix),
                short(&commit)
            ),
        )
        .in_file("phlo.toml")
        .with_help(format!(
            "compare with a ref whose history has the workspace (it appeared after {reference}?), or run from the workspace's directory"
        ))
    };
    let tree = format!("{commit}:{prefix}");
    if run(
        &top,
        &["rev-parse", "--verify", "--quiet", &tree],
        codes::UNKNOWN_GIT_REF,
    )
    .is_err()
    {
        return Err(missing("directory"));
    }
    if root.join("phlo.toml").is_file() {
        let manifest = format!("{commit}:{prefix}phlo.toml");
        if run(&top, &["cat-file", "-e", &manifest], codes::UNKNOWN_GIT_REF).is_err() {
            return Err(missing("phlo.toml"));
        }
    }
    // The tool's own files (`.phlo/`, possibly written by this very command) are no change.
    let own = format!(":(exclude){prefix}.phlo");
    let status = run(
        &top,
        &[
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--",
            pathspec(&prefix),
            &own,
        ],
        codes::NOT_A_GIT_REPOSITORY,
    )?;
    let dir = tempfile::Builder::new()
        .prefix("phlo-lineage-diff-")
        .tempdir()
        .map_err(|e| io_error(format!("cannot create a temporary directory: {e}")))?;
    write_tree(&top, &commit, &prefix, dir.path())?;
    Ok(GitTree {
        base: GitBase {
            requested_ref: reference.to_string(),
            commit,
            head,
            worktree_dirty: !status.is_empty(),
        },
        dir,
        prefix: PathBuf::from(&prefix),
    })
}

/// Writes every blob under `prefix` at `commit` below `dest` (repository-relative paths);
/// the tool's own `.phlo/` is left out, submodules are skipped, symlinks are written as links.
fn write_tree(top: &Path, commit: &str, prefix: &str, dest: &Path) -> Result<(), Diagnostic> {
    let listing = run(
        top,
        &[
            "ls-tree",
            "-r",
            "-z",
            "--full-tree",
            commit,
            "--",
            pathspec(prefix),
        ],
        codes::GIT_TREE_UNREADABLE,
    )?;
    let mut entries: Vec<(String, String, String)> = Vec::new();
    for record in listing.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let record = String::from_utf8_lossy(record);
        // `<mode> SP <type> SP <object> TAB <path>`
        let Some((meta, path)) = record.split_once('\t') else {
            continue;
        };
        let mut meta = meta.split(' ');
        let (Some(mode), Some("blob"), Some(object)) = (meta.next(), meta.next(), meta.next())
        else {
            continue;
        };
        let inner = path.strip_prefix(prefix).unwrap_or(path);
        if inner == ".phlo" || inner.starts_with(".phlo/") {
            continue;
        }
        entries.push((mode.to_string(), object.to_string(), path.to_string()));
    }
    let mut batch = Command::new("git")
        .arg("-C")
        .arg(top)
        .args(["cat-file", "--batch"])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| git_error(codes::NOT_A_GIT_REPOSITORY, format!("cannot run git: {e}")))?;
    let mut stdin = batch.stdin.take().expect("piped");
    let ids: String = entries.iter().map(|(_, o, _)| format!("{o}\n")).collect();
    // Written from a thread: git answers while it reads, and both pipes are bounded.
    let writer = std::thread::spawn(move || stdin.write_all(ids.as_bytes()));
    let mut out = BufReader::new(batch.stdout.take().expect("piped"));
    for (mode, object, path) in &entries {
        let mut header = String::new();
        out.read_line(&mut header)
            .map_err(|e| io_error(format!("reading {object} from git: {e}")))?;
        let size: usize = header
            .split(' ')
            .nth(2)
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| io_error(format!("git cat-file answered `{}`", header.trim())))?;
        let mut body = vec![0; size + 1];
        out.read_exact(&mut body)
            .map_err(|e| io_error(format!("reading {object} from git: {e}")))?;
        body.truncate(size);
        let file = dest.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| io_error(format!("creating {}: {e}", parent.display())))?;
        }
        let written = if mode == "120000" {
            symlink(&String::from_utf8_lossy(&body), &file)
        } else {
            std::fs::write(&file, &body)
        };
        written.map_err(|e| io_error(format!("writing {}: {e}", file.display())))?;
    }
    let _ = writer.join();
    let _ = batch.wait();
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &str, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

#[cfg(not(unix))]
fn symlink(target: &str, at: &Path) -> std::io::Result<()> {
    std::fs::write(at, target)
}

/// The workspace's subtree as a path from the repository's top (`.`: all of it).
fn pathspec(prefix: &str) -> &str {
    match prefix.trim_end_matches('/') {
        "" => ".",
        p => p,
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

fn line(out: Vec<u8>) -> String {
    String::from_utf8_lossy(&out).trim().to_string()
}

fn help(code: Code) -> &'static str {
    if code == codes::NOT_A_GIT_REPOSITORY {
        "lineage --diff reads the workspace's history: run it on a workspace inside a Git repository (`git init`, commit)"
    } else if code == codes::GIT_TREE_UNREADABLE {
        "check the repository (`git fsck`) and the temporary directory's space and permissions (TMPDIR)"
    } else {
        "name a branch, tag or commit this repository has (`git fetch origin main`, `git branch -a`)"
    }
}

fn git_error(code: Code, message: String) -> Diagnostic {
    Diagnostic::error(code, message)
        .in_file("phlo.toml")
        .with_help(help(code))
}

fn io_error(message: String) -> Diagnostic {
    Diagnostic::error(codes::GIT_TREE_UNREADABLE, message)
        .in_file("phlo.toml")
        .with_help(help(codes::GIT_TREE_UNREADABLE))
}

/// Runs a read-only git command in `dir`; a failure is `code`.
fn run(dir: &Path, args: &[&str], code: Code) -> Result<Vec<u8>, Diagnostic> {
    git_command::read_only(dir, args).map_err(|failure| match failure {
        GitFailure::NotRun(e) => {
            git_error(codes::NOT_A_GIT_REPOSITORY, format!("cannot run git: {e}"))
        }
        GitFailure::Failed(why) => git_error(
            code,
            format!(
                "`git {}` failed{}",
                args.join(" "),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            ),
        ),
    })
}

/// A ref that cannot be handed to git ([`git_command::is_ref_argument`]) is L015.
fn check_reference(reference: &str) -> Result<(), Diagnostic> {
    if !git_command::is_ref_argument(reference) {
        return Err(Diagnostic::error(
            codes::UNKNOWN_GIT_REF,
            format!("`{}` is not a Git ref", reference.escape_default()),
        )
        .in_file("phlo.toml")
        .with_help("--diff takes a branch, tag or commit, such as `main` or `origin/main`"));
    }
    Ok(())
}
