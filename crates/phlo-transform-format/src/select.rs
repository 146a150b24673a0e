//! Which files `fmt` looks at: every model and data test of the workspace, or those the
//! command line names — a file or folder (relative to the current directory, else to the
//! workspace), a model or test name, or a glob over names (`shop.*`: `*` any characters, dots
//! included, `?` one).

use crate::report::FileKind;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{did_you_mean, Diagnostic};
use phlo_transform_project::Workspace;
use std::path::{Path, PathBuf};

/// A file `fmt` looks at.
pub(crate) struct Candidate<'w> {
    pub path: &'w str,
    pub kind: FileKind,
    pub name: &'w str,
    pub text: &'w str,
}

/// Every model and test of `ws`, in path order.
fn all(ws: &Workspace) -> Vec<Candidate<'_>> {
    let models = ws.models.iter().map(|m| Candidate {
        path: &m.path,
        kind: FileKind::Model,
        name: m.name.as_str(),
        text: &m.text,
    });
    let tests = ws.tests.iter().map(|t| Candidate {
        path: &t.path,
        kind: FileKind::Test,
        name: &t.name,
        text: &t.text,
    });
    let mut all: Vec<_> = models.chain(tests).collect();
    all.sort_by(|a, b| a.path.cmp(b.path));
    all
}

/// The files `targets` name (all of them when there are none), in path order. A target
/// that names nothing is P008, with close names as suggestions; every such target is reported.
pub(crate) fn select<'w>(
    ws: &'w Workspace,
    targets: &[String],
    cwd: &Path,
) -> Result<Vec<Candidate<'w>>, Vec<Diagnostic>> {
    let all = all(ws);
    if targets.is_empty() {
        return Ok(all);
    }
    let root = canonical(&ws.root);
    let mut chosen = vec![false; all.len()];
    let mut problems = Vec::new();
    for target in targets {
        let matches = matching(&all, target, cwd, &root);
        if matches.is_empty() {
            let names = all.iter().map(|c| c.name);
            problems.push(
                Diagnostic::error(
                    codes::UNKNOWN_MODEL,
                    format!("`{target}` names no model or test file of the workspace"),
                )
                .with_suggestions(did_you_mean(target, names))
                .with_help("give a model file or folder, a model or test name, or a glob such as `shop.*`; `phlo-transform list` shows the models"),
            );
        }
        for i in matches {
            chosen[i] = true;
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(all
        .into_iter()
        .zip(chosen)
        .filter_map(|(c, keep)| keep.then_some(c))
        .collect())
}

/// The indices into `all` of the files `target` names: as a path when it exists on disk
/// (under the current directory, else under the workspace: `-C ws fmt transforms/a.sql`),
/// else as a name or glob.
fn matching(all: &[Candidate<'_>], target: &str, cwd: &Path, root: &Path) -> Vec<usize> {
    let on_disk = [cwd.join(target), root.join(target)]
        .into_iter()
        .find(|p| p.exists());
    if let Some(on_disk) = on_disk {
        let wanted = canonical(&on_disk);
        return (0..all.len())
            .filter(|&i| root.join(all[i].path).starts_with(&wanted))
            .collect();
    }
    let glob = globset::GlobBuilder::new(target)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher());
    (0..all.len())
        .filter(|&i| match &glob {
            Ok(g) => g.is_match(all[i].name),
            Err(_) => all[i].name == target,
        })
        .collect()
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}
