//! The Git provider of the `changed` term (`--since <ref>`, SPEC §82): the models whose semantic
//! inputs differ between merge-base(ref, HEAD) and the working tree (staged, unstaged and
//! untracked files). Only read-only `git` commands run; optional index locks are disabled so
//! even the stat refresh never writes. When a path cannot be proven narrow, it widens.

use phlo_transform_compiler::{Compilation, TestKind};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, ModelName};
use phlo_transform_project::Directives;
use phlo_transform_sql::canonical::canonical_text;
use phlo_transform_sql::parse::default_dialect;
use phlo_transform_sql::{parse_query, template};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::git_command::{self, GitFailure};

/// One changed path and what it meant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedPath {
    /// Workspace-relative path.
    pub path: String,
    /// `added`, `modified`, `deleted` or `untracked`.
    pub status: String,
    /// How the path was mapped to models (or why it was not).
    pub effect: String,
}

/// A directly changed model and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedModel {
    pub name: String,
    pub causes: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitChanges {
    /// The ref as requested (`main`).
    pub requested_ref: String,
    pub merge_base: String,
    pub head: String,
    pub paths: Vec<ChangedPath>,
    /// The directly changed models (what `changed` matches), by name.
    pub models: Vec<ChangedModel>,
    /// Names of models whose files were deleted.
    pub deleted_models: Vec<String>,
    /// Changed test files.
    pub tests: Vec<String>,
    /// Changed paths outside the workspace (repository-relative), ignored.
    pub outside: Vec<String>,
    #[serde(skip)]
    pub(crate) direct: BTreeSet<usize>,
}

fn git_error(message: String) -> Diagnostic {
    Diagnostic::error(codes::GIT_UNAVAILABLE, message)
        .with_help("--since needs the workspace inside a Git repository with the ref fetched (`git fetch origin main`)")
}

/// Runs a read-only git command in `dir` and returns stdout.
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, Diagnostic> {
    git_command::read_only(dir, args).map_err(|failure| match failure {
        GitFailure::NotRun(e) => git_error(format!("cannot run git: {e}")),
        GitFailure::Failed(stderr) => {
            git_error(format!("`git {}` failed: {stderr}", args.join(" ")))
        }
    })
}

fn git_line(dir: &Path, args: &[&str]) -> Result<String, Diagnostic> {
    Ok(String::from_utf8_lossy(&git(dir, args)?).trim().to_string())
}

/// Changed paths (repository-relative) with a status, since `base` including the worktree.
fn changed_paths(top: &Path, base: &str) -> Result<BTreeMap<String, &'static str>, Diagnostic> {
    let mut out = BTreeMap::new();
    let diff = git(
        top,
        &["diff", "--name-status", "--no-renames", "-z", base, "--"],
    )?;
    let mut fields = diff.split(|&b| b == 0).filter(|f| !f.is_empty());
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let status = match status.first() {
            Some(b'A') => "added",
            Some(b'D') => "deleted",
            _ => "modified",
        };
        out.insert(String::from_utf8_lossy(path).into_owned(), status);
    }
    let untracked = git(top, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    for path in untracked.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        out.insert(String::from_utf8_lossy(path).into_owned(), "untracked");
    }
    Ok(out)
}

/// What a model file means, ignoring formatting and comments: its directive values and its
/// canonical SQL (relations as written). Unparseable text compares as itself.
fn model_semantics(text: &str, path: &str, c: &Compilation) -> String {
    let (directives, _) = Directives::parse(text, path);
    let values = directive_values(&directives);
    let rendered = if template::needs_rendering(text) {
        template::render(text, path, &c.workspace.config.vars).ok()
    } else {
        Some(text.to_string())
    };
    let sql = rendered
        .and_then(|t| parse_query(&t, path, &default_dialect()).ok())
        .map(|p| canonical_text(*p.query, |_| None))
        .unwrap_or_else(|| text.to_string());
    format!("{values}\n{sql}")
}

/// Directive values without the lines they were written on.
fn directive_values(d: &Directives) -> serde_json::Value {
    match serde_json::to_value(d) {
        Ok(serde_json::Value::Object(fields)) => fields
            .into_iter()
            .map(|(k, v)| (k, v.get("value").cloned().unwrap_or(v)))
            .collect(),
        other => other.unwrap_or_default(),
    }
}

/// Name a model file had, from the transform root it lies under (`None`: under no root).
fn model_name_of(c: &Compilation, path: &str) -> Option<ModelName> {
    let root = c
        .workspace
        .roots
        .iter()
        .filter(|r| path.starts_with(&format!("{}/", r.path)))
        .max_by_key(|r| r.path.len())?;
    let inner = path[root.path.len() + 1..].trim_end_matches(".sql");
    Some(ModelName::from_segments(
        std::iter::once(root.namespace.clone()).chain(inner.split('/').map(str::to_lowercase)),
    ))
}

struct Mapper<'a> {
    c: &'a Compilation,
    top: &'a Path,
    base: &'a str,
    changes: GitChanges,
    causes: BTreeMap<usize, Vec<String>>,
}

impl Mapper<'_> {
    fn mark(&mut self, models: impl IntoIterator<Item = usize>, cause: &str) -> usize {
        let mut n = 0;
        for i in models {
            self.causes.entry(i).or_default().push(cause.to_string());
            n += 1;
        }
        n
    }

    fn old_text(&self, repo_path: &str) -> Option<String> {
        let spec = format!("{}:{repo_path}", self.base);
        git(self.top, &["show", &spec])
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    fn consumers(&self, source: &str) -> Vec<usize> {
        (0..self.c.models.len())
            .filter(|&i| self.c.models[i].sources.iter().any(|s| s == source))
            .collect()
    }

    /// Maps one changed workspace path; returns the effect to report.
    fn map(&mut self, path: &str, repo_path: &str, status: &str) -> String {
        let c = self.c;
        let cause = format!("{path} {status} since {}", self.changes.requested_ref);
        let file = Path::new(path).file_name().and_then(|f| f.to_str());
        let current = c.workspace.root.join(path);
        let new_text = std::fs::read_to_string(&current).ok();
        let old_text = (status != "added" && status != "untracked")
            .then(|| self.old_text(repo_path))
            .flatten();
        if path == "phlo.toml" {
            return self.phlo_toml(old_text.as_deref(), new_text.as_deref(), &cause);
        }
        if file == Some("transform.toml") {
            if parse_toml(old_text.as_deref()) == parse_toml(new_text.as_deref())
                && old_text.is_some()
            {
                return "no semantic change".into();
            }
            let dir = path.trim_end_matches("transform.toml");
            let under: Vec<usize> = (0..c.models.len())
                .filter(|&i| c.models[i].path.starts_with(dir))
                .collect();
            let n = self.mark(under, &cause);
            return format!("configuration of {n} model(s) under {dir}");
        }
        if let Some(i) = c.models.iter().position(|m| m.path == path) {
            let same = match (&old_text, &new_text) {
                (Some(old), Some(new)) => {
                    model_semantics(old, path, c) == model_semantics(new, path, c)
                }
                _ => false,
            };
            if same {
                return "formatting or comments only".into();
            }
            self.mark([i], &cause);
            return format!("model {}", c.models[i].name);
        }
        if let Some(test) = c.workspace.tests.iter().find(|t| t.path == path) {
            let same = match (&old_text, &new_text) {
                (Some(old), Some(new)) => {
                    model_semantics(old, path, c) == model_semantics(new, path, c)
                }
                _ => false,
            };
            if same {
                return "formatting or comments only".into();
            }
            self.changes.tests.push(path.to_string());
            let targets: Vec<usize> = c
                .tests
                .iter()
                .filter(|t| matches!(&t.kind, TestKind::Custom { path: p } if *p == test.path))
                .flat_map(|t| t.targets.iter().copied())
                .collect();
            let n = self.mark(targets, &cause);
            return format!("test {} of {n} model(s)", test.name);
        }
        if path.ends_with(".sql") && status == "deleted" {
            if let Some(name) = model_name_of(c, path) {
                // Dependents now read a source (or nothing) where the model used to be.
                let readers: Vec<usize> = (0..c.models.len())
                    .filter(|&i| {
                        c.models[i]
                            .relations
                            .iter()
                            .any(|r| name.ends_with_segments(&r.relation.dotted()))
                    })
                    .collect();
                self.changes.deleted_models.push(name.to_string());
                let n = self.mark(readers, &cause);
                return format!("deleted model {name}: {n} dependent(s)");
            }
        }
        for source in &c.workspace.sources {
            let location = source.location.trim_end_matches('/');
            if path == location || path.starts_with(&format!("{location}/")) {
                let consumers = self.consumers(&source.name);
                let n = self.mark(consumers, &cause);
                return format!("data of source {}: {n} consumer(s)", source.name);
            }
        }
        "not a project input".into()
    }

    /// `phlo.toml`, narrowed by section: sources to their consumers, `[model."x"]` to x, vars
    /// to templated models, `[transform.execution]` to nothing; anything else widens to all.
    fn phlo_toml(&mut self, old: Option<&str>, new: Option<&str>, cause: &str) -> String {
        let c = self.c;
        let (Some(old), Some(new)) = (parse_toml(old), parse_toml(new)) else {
            let n = self.mark(0..c.models.len(), cause);
            return format!("unreadable or new phlo.toml: all {n} models");
        };
        let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        let mut hit = BTreeSet::new();
        for key in keys {
            let (a, b) = (old.get(key.as_str()), new.get(key.as_str()));
            if a == b {
                continue;
            }
            let sub =
                |t: Option<&toml::Value>| t.and_then(|v| v.as_table()).cloned().unwrap_or_default();
            let (sa, sb) = (sub(a), sub(b));
            let changed: BTreeSet<&String> = sa
                .keys()
                .chain(sb.keys())
                .filter(|k| sa.get(k.as_str()) != sb.get(k.as_str()))
                .collect();
            match key.as_str() {
                "source" => {
                    for s in changed {
                        hit.extend(self.consumers(&s.to_lowercase()));
                    }
                }
                "model" => {
                    for m in changed {
                        hit.extend(
                            (0..c.models.len()).filter(|&i| c.models[i].name.ends_with_segments(m)),
                        );
                    }
                }
                "vars" => hit.extend(
                    (0..c.models.len())
                        .filter(|&i| template::needs_rendering(&c.workspace.models[i].text)),
                ),
                "transform" if changed.iter().all(|k| k.as_str() == "execution") => {}
                _ => hit.extend(0..c.models.len()),
            }
        }
        let n = self.mark(hit, cause);
        format!("workspace configuration: {n} model(s)")
    }
}

fn parse_toml(text: Option<&str>) -> Option<toml::Table> {
    text?.parse::<toml::Table>().ok()
}

/// A ref that cannot be handed to git ([`git_command::is_ref_argument`]) is L007.
fn check_reference(reference: &str) -> Result<(), Diagnostic> {
    if !git_command::is_ref_argument(reference) {
        return Err(Diagnostic::error(
            codes::INVALID_SELECTOR,
            format!("`{}` is not a Git ref", reference.escape_default()),
        )
        .with_help("--since takes a branch, tag or commit, such as `main` or `origin/main`"));
    }
    Ok(())
}

/// The directly changed models between merge-base(`reference`, HEAD) and the working tree.
pub fn changes(c: &Compilation, reference: &str) -> Result<GitChanges, Diagnostic> {
    check_reference(reference)?;
    let root = &c.workspace.root;
    let top = std::path::PathBuf::from(git_line(root, &["rev-parse", "--show-toplevel"])?);
    let prefix = git_line(root, &["rev-parse", "--show-prefix"])?;
    let head = git_line(root, &["rev-parse", "--verify", "HEAD"])?;
    let merge_base = git_line(root, &["merge-base", "--end-of-options", reference, "HEAD"])?;
    let mut m = Mapper {
        c,
        top: &top,
        base: &merge_base,
        changes: GitChanges {
            requested_ref: reference.to_string(),
            merge_base: merge_base.clone(),
            head,
            ..GitChanges::default()
        },
        causes: BTreeMap::new(),
    };
    for (repo_path, status) in changed_paths(&top, &merge_base)? {
        let Some(path) = repo_path.strip_prefix(&prefix) else {
            m.changes.outside.push(repo_path);
            continue;
        };
        // The tool's own state and artifacts are never inputs.
        if path.starts_with(".phlo/") {
            continue;
        }
        let effect = m.map(path, &repo_path, status);
        m.changes.paths.push(ChangedPath {
            path: path.to_string(),
            status: status.to_string(),
            effect,
        });
    }
    let Mapper {
        mut changes,
        causes,
        ..
    } = m;
    for (i, mut why) in causes {
        why.dedup();
        changes.direct.insert(i);
        changes.models.push(ChangedModel {
            name: c.models[i].name.to_string(),
            causes: why,
        });
    }
    Ok(changes)
}
