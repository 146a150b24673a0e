//! Discovery (SPEC §6–11): transform roots, namespaces, model identities and files.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{check_name, check_segment, Diagnostic, Diagnostics, ModelName};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::config::{FolderSettings, RootConfig, WorkspaceConfig};
use crate::directives::Directives;
use crate::effective::{EffectiveConfig, Level, Origin};
use crate::sources::{self, SourceDecl};
use crate::toml_error::toml_diagnostic;

const DEFAULT_ROOTS: &[&str] = &["transforms/**", "workflows/*/transforms/**"];
const DEFAULT_EXCLUDES: &[&str] = &["**/target/**", "**/.phlo/**"];
const DEFAULT_SOURCES_DIR: &str = "sources";

/// A directory holding models under one namespace.
#[derive(Clone, Debug, Serialize)]
pub struct TransformRoot {
    /// Workspace-relative path, `/`-separated.
    pub path: String,
    pub namespace: String,
    /// `transform.toml` of the root, when present.
    pub config_file: Option<String>,
    #[serde(skip)]
    pub config: RootConfig,
}

/// One model file and everything known about it before SQL is parsed.
#[derive(Clone, Debug, Serialize)]
pub struct ModelFile {
    pub name: ModelName,
    /// Stable identity for state: the `@id` pin, or the name.
    pub id: String,
    /// Workspace-relative path.
    pub path: String,
    pub namespace: String,
    /// Index into `Workspace::roots`.
    pub root: usize,
    #[serde(skip)]
    pub text: String,
    pub directives: Directives,
    pub config: EffectiveConfig,
}

/// A custom SQL test: a query returning violating rows (`tests/*.sql`, SPEC §33).
#[derive(Clone, Debug, Serialize)]
pub struct TestFile {
    pub name: String,
    pub path: String,
    #[serde(skip)]
    pub text: String,
}

/// File contents that stand in for the disk's (workspace-relative path → text): what an
/// editor holds and has not saved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overlay {
    pub files: BTreeMap<String, String>,
}

#[derive(Clone, Debug)]
pub struct Workspace {
    /// Absolute workspace directory.
    pub root: PathBuf,
    pub config: WorkspaceConfig,
    pub roots: Vec<TransformRoot>,
    /// Sorted by name.
    pub models: Vec<ModelFile>,
    pub sources: Vec<SourceDecl>,
    pub tests: Vec<TestFile>,
    pub diagnostics: Diagnostics,
}

impl Workspace {
    /// The workspace containing `start`: the nearest ancestor with a `phlo.toml`, else `start`.
    pub fn find_root(start: &Path) -> PathBuf {
        let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
        start
            .ancestors()
            .find(|dir| dir.join("phlo.toml").is_file())
            .map(Path::to_path_buf)
            .unwrap_or(start)
    }

    /// Loads the workspace at `dir`. Only a missing directory is fatal; every other problem is
    /// collected in `diagnostics` so that `check` can report all of them at once.
    pub fn load(dir: &Path) -> Result<Workspace, Diagnostic> {
        Self::load_with(dir, &Overlay::default())
    }

    /// [`Workspace::load`] with the model files `overlay` holds read from it rather than from
    /// the disk: an editor's unsaved buffers, including files not saved yet.
    pub fn load_with(dir: &Path, overlay: &Overlay) -> Result<Workspace, Diagnostic> {
        if !dir.is_dir() {
            return Err(Diagnostic::error(
                codes::WORKSPACE_NOT_FOUND,
                format!("workspace directory `{}` does not exist", dir.display()),
            )
            .with_help("pass an existing directory with --project-dir, or run from inside one"));
        }
        let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let mut diagnostics = Diagnostics::default();
        let config =
            read_toml::<WorkspaceConfig>(&root, "phlo.toml", &mut diagnostics).unwrap_or_default();

        let excludes = build_globset(
            DEFAULT_EXCLUDES
                .iter()
                .map(|s| s.to_string())
                .chain(config.transforms.exclude.iter().cloned())
                .chain(config.transform.discovery.exclude.iter().cloned()),
            &mut diagnostics,
        );
        let patterns: Vec<String> = DEFAULT_ROOTS
            .iter()
            .map(|s| s.to_string())
            .chain(config.transforms.include.iter().cloned())
            .chain(config.transform.discovery.include.iter().cloned())
            .collect();
        let roots = find_roots(&root, &patterns, &mut diagnostics);
        let models = load_models(&root, &config, &roots, &excludes, overlay, &mut diagnostics);

        let (mut sources, source_diags) = sources::declared(&root, &config.source);
        diagnostics.extend(source_diags);
        let dir = config
            .transform
            .sources_dir
            .as_deref()
            .unwrap_or(DEFAULT_SOURCES_DIR);
        let (found_sources, convention_diags) = sources::by_convention(&root, dir);
        diagnostics.extend(convention_diags);
        for found in found_sources {
            if !sources.iter().any(|s| s.name == found.name) {
                sources.push(found);
            }
        }
        sources.sort_by(|a, b| a.name.cmp(&b.name));
        let tests = load_tests(&root, &mut diagnostics);
        Ok(Workspace {
            root,
            config,
            roots,
            models,
            sources,
            tests,
            diagnostics,
        })
    }

    pub fn model(&self, name: &str) -> Option<&ModelFile> {
        self.models
            .binary_search_by(|m| m.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.models[i])
    }

    /// Text of a workspace-relative file, for rendering diagnostics.
    pub fn file_text(&self, rel: &str) -> Option<String> {
        if let Some(m) = self.models.iter().find(|m| m.path == rel) {
            return Some(m.text.clone());
        }
        std::fs::read_to_string(self.root.join(rel)).ok()
    }

    /// `.phlo/` of this workspace.
    pub fn phlo_dir(&self) -> PathBuf {
        self.root.join(".phlo")
    }
}

fn read_toml<T: serde::de::DeserializeOwned>(
    root: &Path,
    rel: &str,
    diagnostics: &mut Diagnostics,
) -> Option<T> {
    let path = root.join(rel);
    if !path.is_file() {
        return None;
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            diagnostics.push(
                Diagnostic::error(codes::MALFORMED_TOML, format!("cannot read {rel}: {e}"))
                    .in_file(rel)
                    .with_help("make the file readable UTF-8 text"),
            );
            return None;
        }
    };
    match toml::from_str::<T>(&text) {
        Ok(v) => {
            for (line, alias, key) in crate::config::spelling_aliases(&text) {
                diagnostics.push(
                    Diagnostic::warning(
                        codes::SPELLING_ALIAS,
                        format!("`{alias}` is read as `{key}`"),
                    )
                    .in_file(rel)
                    .at(line, 1)
                    .with_help(format!("spell it `{key}`, as the documentation does")),
                );
            }
            Some(v)
        }
        Err(e) => {
            diagnostics.push(toml_diagnostic(rel, &text, &e));
            None
        }
    }
}

fn build_globset(patterns: impl Iterator<Item = String>, diagnostics: &mut Diagnostics) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        match Glob::new(&p) {
            Ok(g) => {
                b.add(g);
            }
            Err(e) => diagnostics.push(
                Diagnostic::error(
                    codes::INVALID_GLOB,
                    format!("invalid exclude pattern `{p}`: {e}"),
                )
                .in_file("phlo.toml")
                .with_help("use a glob such as \"**/scratch/**\""),
            ),
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

fn rel_string(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

fn skip_dir(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

/// Directories matching the root patterns; the top-level `transforms/` splits into one root per
/// sub-folder unless its own `transform.toml` names a namespace.
fn find_roots(
    root: &Path,
    patterns: &[String],
    diagnostics: &mut Diagnostics,
) -> Vec<TransformRoot> {
    let mut matchers = Vec::new();
    for p in patterns {
        let Some(dir) = p.strip_suffix("/**") else {
            diagnostics.push(
                Diagnostic::error(
                    codes::INVALID_GLOB,
                    format!("transform root pattern `{p}` must end in `/**`"),
                )
                .in_file("phlo.toml")
                .with_help("name a folder tree, for example \"domains/*/transforms/**\""),
            );
            continue;
        };
        match GlobBuilder::new(dir).literal_separator(true).build() {
            Ok(g) => matchers.push(g.compile_matcher()),
            Err(e) => diagnostics.push(
                Diagnostic::error(
                    codes::INVALID_GLOB,
                    format!("invalid transform root pattern `{p}`: {e}"),
                )
                .in_file("phlo.toml")
                .with_help("use a glob such as \"domains/*/transforms/**\""),
            ),
        }
    }
    let mut dirs: Vec<String> = Vec::new();
    let mut unlisted: Vec<Diagnostic> = Vec::new();
    let walker = walkdir::WalkDir::new(root)
        .min_depth(1)
        .max_depth(8)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_type().is_dir() && !skip_dir(&e.file_name().to_string_lossy()));
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                unlisted.push(unreadable_folder(root, &e));
                continue;
            }
        };
        let rel = rel_string(root, entry.path());
        if matchers.iter().any(|m| m.is_match(&rel)) {
            dirs.push(rel);
        }
    }
    let mut roots: BTreeMap<String, TransformRoot> = BTreeMap::new();
    for dir in dirs {
        let config_rel = format!("{dir}/transform.toml");
        let config: Option<RootConfig> = read_toml(root, &config_rel, diagnostics);
        let has_file = config.is_some() || root.join(&config_rel).is_file();
        let config_file = has_file.then(|| config_rel.clone());
        let explicit_ns = config.as_ref().and_then(|c| c.namespace.clone());
        if dir == "transforms" && explicit_ns.is_none() {
            // Convention: transforms/<namespace>/...
            let entries = match std::fs::read_dir(root.join(&dir)) {
                Ok(entries) => entries,
                Err(e) => {
                    diagnostics.push(unreadable_dir(&dir, &e));
                    continue;
                }
            };
            for sub in entries {
                let sub = match sub {
                    Ok(sub) => sub,
                    Err(e) => {
                        diagnostics.push(unreadable_dir(&dir, &e));
                        continue;
                    }
                };
                let name = sub.file_name().to_string_lossy().to_string();
                if sub.path().is_dir() && !skip_dir(&name) {
                    let path = format!("{dir}/{name}");
                    let sub_cfg_rel = format!("{path}/transform.toml");
                    let sub_cfg: Option<RootConfig> = read_toml(root, &sub_cfg_rel, diagnostics);
                    let sub_file = root.join(&sub_cfg_rel).is_file().then_some(sub_cfg_rel);
                    let sub_cfg = sub_cfg.unwrap_or_default();
                    let namespace = sub_cfg
                        .namespace
                        .clone()
                        .unwrap_or_else(|| name.to_lowercase());
                    if let Err(d) = valid_namespace(root, &path, &namespace, sub_file.as_deref()) {
                        diagnostics.push(d);
                        continue;
                    }
                    roots.insert(
                        path.clone(),
                        TransformRoot {
                            path,
                            namespace,
                            config_file: sub_file,
                            config: sub_cfg,
                        },
                    );
                }
            }
            // The bare `transforms/` is still a root so that files directly in it are reported.
            roots.insert(
                dir.clone(),
                TransformRoot {
                    path: dir,
                    namespace: String::new(),
                    config_file,
                    config: config.unwrap_or_default(),
                },
            );
            continue;
        }
        let base = Path::new(&dir);
        let conventional = if base.file_name().is_some_and(|n| n == "transforms") {
            base.parent().and_then(|p| p.file_name())
        } else {
            base.file_name()
        };
        let namespace = explicit_ns.unwrap_or_else(|| {
            conventional
                .map(|n| n.to_string_lossy().to_lowercase())
                .unwrap_or_default()
        });
        if let Err(d) = valid_namespace(root, &dir, &namespace, config_file.as_deref()) {
            diagnostics.push(d);
            continue;
        }
        roots.insert(
            dir.clone(),
            TransformRoot {
                path: dir,
                namespace,
                config_file,
                config: config.unwrap_or_default(),
            },
        );
    }
    // A folder that could not be listed is an error where a root holds it (loading its models
    // reports it); elsewhere it is not known to hold models, so a warning: an unrelated
    // unreadable folder does not fail `check`.
    for mut d in unlisted {
        let inside_root = d.file.as_deref().is_some_and(|f| {
            roots
                .keys()
                .any(|r| f == r || f.starts_with(&format!("{r}/")))
        });
        if !inside_root {
            d.severity = phlo_transform_core::Severity::Warning;
            diagnostics.push(d);
        }
    }
    roots.into_values().collect()
}

/// The namespace of the root at `dir` obeys the identifier rule; otherwise the P009 error, at
/// the `namespace` key of `config_file` when it set it.
fn valid_namespace(
    root: &Path,
    dir: &str,
    namespace: &str,
    config_file: Option<&str>,
) -> Result<(), Diagnostic> {
    let Err(reason) = check_segment(namespace) else {
        return Ok(());
    };
    let line = config_file.and_then(|f| key_line(root, f, "namespace"));
    let mut d = Diagnostic::error(
        codes::INVALID_NAME,
        format!("namespace `{namespace}` of transform root `{dir}` is not a valid name: {reason}"),
    )
    .with_help("a namespace is one name of letters, digits and `_` (for example `assay_ingest`); it is never a path");
    match (config_file, line) {
        (Some(file), Some(line)) => d = d.in_file(file).at(line, 1),
        (Some(file), None) => d = d.in_file(file),
        (None, _) => d = d.in_file(dir),
    }
    Err(d)
}

/// The 1-based line where `key = …` is set in the workspace file `rel`, for diagnostics.
fn key_line(root: &Path, rel: &str, key: &str) -> Option<usize> {
    let text = std::fs::read_to_string(root.join(rel)).ok()?;
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

/// A folder below a transform root that could not be listed: its models would be missed.
fn unreadable_folder(root: &Path, e: &walkdir::Error) -> Diagnostic {
    let rel = e
        .path()
        .map(|p| rel_string(root, p))
        .unwrap_or_else(|| ".".to_string());
    unreadable_dir(&rel, e)
}

fn unreadable_dir(rel: &str, e: &dyn std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        codes::UNREADABLE_FOLDER,
        format!("cannot read folder `{rel}`: {e}"),
    )
    .in_file(rel)
    .with_help("make the folder readable (its models would otherwise be missed), or exclude it in phlo.toml [transforms] exclude")
}

fn load_models(
    root: &Path,
    config: &WorkspaceConfig,
    roots: &[TransformRoot],
    excludes: &GlobSet,
    overlay: &Overlay,
    diagnostics: &mut Diagnostics,
) -> Vec<ModelFile> {
    // Deepest root first, so a file belongs to the most specific root containing it.
    let mut order: Vec<usize> = (0..roots.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(roots[i].path.len()));
    let mut owner: BTreeMap<String, usize> = BTreeMap::new();
    let mut folder_configs: HashMap<String, Option<RootConfig>> = HashMap::new();
    for &ri in &order {
        let r = &roots[ri];
        // The bare `transforms/` root only owns the files directly in it; its sub-folders are roots.
        let depth = if r.namespace.is_empty() {
            1
        } else {
            usize::MAX
        };
        let walker = walkdir::WalkDir::new(root.join(&r.path))
            .max_depth(depth)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !skip_dir(&e.file_name().to_string_lossy()));
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    diagnostics.push(unreadable_folder(root, &e));
                    continue;
                }
            };
            let rel = rel_string(root, entry.path());
            if !entry.file_type().is_file() || excludes.is_match(&rel) {
                continue;
            }
            if entry.file_name() == "transform.toml" && entry.depth() > 1 {
                folder_configs
                    .entry(rel.clone())
                    .or_insert_with(|| read_toml(root, &rel, diagnostics));
            }
            if rel.ends_with(".sql") {
                owner.entry(rel).or_insert(ri);
            }
        }
    }
    // Buffers not saved yet belong to the deepest root that would own them on disk.
    for rel in overlay.files.keys() {
        if !rel.ends_with(".sql") || owner.contains_key(rel) || excludes.is_match(rel) {
            continue;
        }
        let found = order.iter().copied().find(|&ri| {
            let r = &roots[ri];
            rel.strip_prefix(&r.path)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|inner| !r.namespace.is_empty() || !inner.contains('/'))
        });
        if let Some(ri) = found {
            owner.insert(rel.clone(), ri);
        }
    }
    let workspace_origin = Origin {
        level: Level::Workspace,
        file: Some("phlo.toml".into()),
        detail: Some("[transform]".into()),
    };
    let workspace_settings = FolderSettings {
        materialized: config.transform.default_materialization,
        schema: config.transform.default_schema.clone(),
        owner: None,
        tags: None,
    };

    let mut models: Vec<ModelFile> = Vec::new();
    let mut reported_schemas: HashSet<(String, String)> = HashSet::new();
    for (rel, ri) in owner {
        let r = &roots[ri];
        let read = match overlay.files.get(&rel) {
            Some(text) => Ok(Ok(text.clone())),
            None => std::fs::read(root.join(&rel)).map(String::from_utf8),
        };
        let text = match read {
            // A UTF-8 byte order mark (some Windows editors write one) is not SQL.
            Ok(Ok(t)) => match t.strip_prefix('\u{feff}') {
                Some(rest) => rest.to_string(),
                None => t,
            },
            Ok(Err(_)) => {
                diagnostics.push(
                    Diagnostic::error(
                        codes::UNREADABLE_MODEL,
                        format!("model file `{rel}` is not UTF-8 text"),
                    )
                    .in_file(&rel)
                    .with_help("save the file as UTF-8"),
                );
                continue;
            }
            Err(e) => {
                diagnostics.push(
                    Diagnostic::error(
                        codes::UNREADABLE_MODEL,
                        format!("cannot read model file `{rel}`: {e}"),
                    )
                    .in_file(&rel)
                    .with_help("check the file's permissions"),
                );
                continue;
            }
        };
        if r.namespace.is_empty() {
            diagnostics.push(
                Diagnostic::error(codes::MODEL_OUTSIDE_NAMESPACE, format!("model `{rel}` is not inside a namespace folder"))
                    .in_file(&rel)
                    .with_help("move it into transforms/<namespace>/, or set `namespace = \"…\"` in transforms/transform.toml"),
            );
            continue;
        }
        let inner = rel[r.path.len() + 1..].trim_end_matches(".sql").to_string();
        let segments: Vec<String> = std::iter::once(r.namespace.clone())
            .chain(inner.split('/').map(|s| s.to_lowercase()))
            .collect();
        if let Some(reason) = segments[1..].iter().find_map(|s| check_segment(s).err()) {
            diagnostics.push(
                Diagnostic::error(
                    codes::INVALID_NAME,
                    format!("model file `{rel}` does not give a valid model name: {reason}"),
                )
                .in_file(&rel)
                .with_help("name model files and their folders with letters, digits and `_` (for example `daily_totals.sql`)"),
            );
            continue;
        }
        let name = ModelName::from_segments(&segments);

        let (directives, directive_diags) = Directives::parse(&text, &rel);
        diagnostics.extend(directive_diags);
        let mut cfg = EffectiveConfig::new(&r.namespace);
        cfg.apply_settings(&workspace_settings, &workspace_origin);
        if let Some(mode) = config.transform.analysis {
            cfg.apply_analysis(mode, &workspace_origin);
        }
        if let Some(file) = &r.config_file {
            cfg.apply_settings(
                &r.config.settings(),
                &Origin {
                    level: Level::Root,
                    file: Some(file.clone()),
                    detail: None,
                },
            );
        }
        // Folder layers, shallow to deep: the root's [folder."a/b"] sections, then a/b/transform.toml.
        let folders: Vec<&str> = inner.split('/').collect();
        for depth in 1..folders.len() {
            let sub = folders[..depth].join("/");
            if let Some(settings) = r.config.folder.get(&sub) {
                let origin = Origin {
                    level: Level::Folder,
                    file: r.config_file.clone(),
                    detail: Some(format!("[folder.\"{sub}\"]")),
                };
                cfg.apply_settings(settings, &origin);
            }
            let file = format!("{}/{sub}/transform.toml", r.path);
            if let Some(Some(fc)) = folder_configs.get(&file) {
                if fc.namespace.is_some() {
                    diagnostics.push(
                        Diagnostic::error(codes::INVALID_CONFIG, "`namespace` can only be set in a transform root's transform.toml")
                            .in_file(&file)
                            .with_help("remove `namespace` here, or declare this folder as a root in phlo.toml [transforms] include"),
                    );
                }
                cfg.apply_settings(
                    &fc.settings(),
                    &Origin {
                        level: Level::Folder,
                        file: Some(file.clone()),
                        detail: None,
                    },
                );
            }
        }
        cfg.apply_directives(&directives, &rel);
        if let Err(reason) = check_name(&cfg.schema.value) {
            let origin = &cfg.schema.origin;
            let file = origin.file.clone().unwrap_or_else(|| rel.clone());
            if reported_schemas.insert((file.clone(), cfg.schema.value.clone())) {
                let mut d = Diagnostic::error(
                    codes::INVALID_NAME,
                    format!(
                        "schema `{}` is not a valid name: {reason}",
                        cfg.schema.value
                    ),
                )
                .in_file(&file)
                .with_help("name schemas with letters, digits and `_`");
                if let Some(line) = key_line(root, &file, "schema") {
                    d = d.at(line, 1);
                }
                diagnostics.push(d);
            }
            continue;
        }
        if let Some(pin) = &directives.id {
            if let Err(reason) = check_name(&pin.value) {
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_NAME,
                        format!("`@id {}` is not a valid model id: {reason}", pin.value),
                    )
                    .in_file(&rel)
                    .at(pin.line, 1)
                    .with_help("an id is a dotted name such as `assay.results_v1`"),
                );
                continue;
            }
        }
        let id = directives
            .id
            .as_ref()
            .map(|i| i.value.clone())
            .unwrap_or_else(|| name.to_string());
        models.push(ModelFile {
            name,
            id,
            path: rel,
            namespace: r.namespace.clone(),
            root: ri,
            text,
            directives,
            config: cfg,
        });
    }
    models.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.path.cmp(&b.path)));
    report_duplicates(&models, diagnostics);
    models.dedup_by(|b, a| a.name == b.name);
    models
}

fn report_duplicates(models: &[ModelFile], diagnostics: &mut Diagnostics) {
    let mut by_name: BTreeMap<&str, Vec<&ModelFile>> = BTreeMap::new();
    let mut by_id: BTreeMap<&str, Vec<&ModelFile>> = BTreeMap::new();
    for m in models {
        by_name.entry(m.name.as_str()).or_default().push(m);
        by_id.entry(m.id.as_str()).or_default().push(m);
    }
    for (what, groups) in [("name", by_name), ("id", by_id)] {
        for (key, group) in groups {
            if group.len() > 1 && !(what == "id" && group.iter().all(|m| m.directives.id.is_none()))
            {
                let paths: Vec<String> = group.iter().map(|m| m.path.clone()).collect();
                diagnostics.push(
                    Diagnostic::error(
                        codes::DUPLICATE_MODEL,
                        format!("{} model files share the {what} `{key}`", group.len()),
                    )
                    .in_file(&group[1].path)
                    .with_note(format!("files: {}", paths.join(", ")))
                    .with_help(
                        "rename one file, or give the roots different namespaces in transform.toml",
                    ),
                );
            }
        }
    }
}

fn load_tests(root: &Path, diagnostics: &mut Diagnostics) -> Vec<TestFile> {
    let dir = root.join("tests");
    let mut out = Vec::new();
    if !dir.is_dir() {
        return out;
    }
    for entry in walkdir::WalkDir::new(&dir)
        .sort_by_file_name()
        .into_iter()
        .flatten()
    {
        let path = entry.path();
        if !entry.file_type().is_file() || path.extension().is_none_or(|e| e != "sql") {
            continue;
        }
        let rel = rel_string(root, path);
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let name = rel
                    .trim_start_matches("tests/")
                    .trim_end_matches(".sql")
                    .replace('/', ".");
                out.push(TestFile {
                    name,
                    path: rel,
                    text,
                });
            }
            Err(e) => diagnostics.push(
                Diagnostic::error(
                    codes::UNREADABLE_MODEL,
                    format!("cannot read test file `{rel}`: {e}"),
                )
                .in_file(&rel)
                .with_help("make the file readable UTF-8 text"),
            ),
        }
    }
    out
}
