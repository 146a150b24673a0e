//! Discovery (SPEC §6–11): transform roots, namespaces, model identities and files.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics, ModelName};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
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

#[derive(Debug)]
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
        let models = load_models(&root, &config, &roots, &excludes, &mut diagnostics);

        let (mut sources, source_diags) = sources::declared(&root, &config.source);
        diagnostics.extend(source_diags);
        let dir = config
            .transform
            .sources_dir
            .as_deref()
            .unwrap_or(DEFAULT_SOURCES_DIR);
        for found in sources::by_convention(&root, dir) {
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
    let walker = walkdir::WalkDir::new(root)
        .min_depth(1)
        .max_depth(8)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_type().is_dir() && !skip_dir(&e.file_name().to_string_lossy()));
    for entry in walker.flatten() {
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
            for sub in std::fs::read_dir(root.join(&dir))
                .into_iter()
                .flatten()
                .flatten()
            {
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
    roots.into_values().collect()
}

fn load_models(
    root: &Path,
    config: &WorkspaceConfig,
    roots: &[TransformRoot],
    excludes: &GlobSet,
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
        for entry in walker.flatten() {
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
    for (rel, ri) in owner {
        let r = &roots[ri];
        let text = match std::fs::read(root.join(&rel)).map(String::from_utf8) {
            Ok(Ok(t)) => t,
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
