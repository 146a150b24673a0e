//! A workspace compiled for the target a command runs against: what the compiler is given
//! beyond the files (the target's dialect, the relations only its warehouse has, the names it
//! reserves) is asked of the target's driver ([`phlo_transform_adapter::WarehouseCatalog`]),
//! once for the CLI, a daemon and tests.

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::{CatalogSnapshot, Compilation, CompileCache, DirPackStore};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::pack_store::PackStore;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{Overlay, Workspace};
use phlo_transform_state::{PostgresPackStore, StateLocation};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Loads the workspace at `root` and compiles it for the target `adapter` names (`None`: the
/// workspace's `[adapter]`, else the embedded engine). The target's dialect types the models
/// (its functions, its type names); the relations only its warehouse has become sources typed
/// from its metadata (Trino: `catalog.schema.table`) or its catalog (PostgreSQL, DuckDB,
/// through the schema cache as `read` says); model names the target reserves are errors.
/// Parsing and typing reuse the workspace's compile cache (`.phlo/cache/compile`) and the
/// shared one ([`shared_cache`]; `state` is where the command's state lives).
pub fn compile_for_target(
    root: &Path,
    adapter: Option<&str>,
    read: SchemaRead,
    state: Option<&StateLocation>,
) -> Result<Compilation, Diagnostic> {
    let ws = Workspace::load_with(root, &Overlay::default())?;
    let mut cache = CompileCache::for_workspace(root);
    let mut diags = Vec::new();
    if cache.is_enabled() {
        match shared_cache(&ws, state) {
            Ok(Some(store)) => cache = cache.with_shared(store),
            Ok(None) => {}
            Err(d) => diags.push(d),
        }
    }
    compile_loaded(ws, diags, adapter, read, &cache, &SourceStates::default())
}

/// [`compile_for_target`] with the model files of `overlay` read from it (an editor's
/// buffers), `cache` as the compile cache (an in-memory one in a long-lived process) and the
/// sources' states reused from `sources` while the workspace declares the same sources.
pub fn compile_for_target_with(
    root: &Path,
    adapter: Option<&str>,
    read: SchemaRead,
    overlay: &Overlay,
    cache: &CompileCache,
    sources: &SourceStates,
) -> Result<Compilation, Diagnostic> {
    let ws = Workspace::load_with(root, overlay)?;
    compile_loaded(ws, Vec::new(), adapter, read, cache, sources)
}

/// `previous` (compiled for `adapter`'s target by [`compile_for_target_with`]) with the model
/// files `edits` (workspace-relative path, text) changed, compiled from it: only the edited
/// models and what reads them are compiled again (`Compilation::with_edited_texts`). `None`
/// when the edit needs a whole compile (a file's directives changed, a path is no model, …).
pub fn recompile_edited(
    previous: &Compilation,
    adapter: Option<&str>,
    read: SchemaRead,
    edits: &[(String, String)],
    cache: &CompileCache,
) -> Option<Compilation> {
    let ws = &previous.workspace;
    let target = ws.adapter_target(adapter).ok()?;
    let catalog = phlo_transform_adapter::driver(target.kind());
    let root = ws.root.clone();
    previous.with_edited_texts(edits, cache, &mut |ws, missing| {
        catalog.sources_for_missing(ws, &target, &root, read, missing)
    })
}

fn compile_loaded(
    mut ws: Workspace,
    mut diags: Vec<Diagnostic>,
    adapter: Option<&str>,
    read: SchemaRead,
    cache: &CompileCache,
    sources: &SourceStates,
) -> Result<Compilation, Diagnostic> {
    let root = ws.root.clone();
    let target = ws.adapter_target(adapter)?;
    let catalog = phlo_transform_adapter::driver(target.kind());
    if let Some(dialect) = catalog.dialect() {
        ws.config.transform.dialect = Some(dialect.to_string());
    }
    catalog.add_named_sources(&mut ws, &target, &root)?;
    let (snapshot, loaded) = sources.load(&ws);
    diags.extend(loaded);
    diags.extend(catalog.reserved_names(&ws, &target));
    // The relations nothing resolves come from the compile's own parse of the models.
    Ok(Compilation::compile_with(
        ws,
        snapshot,
        diags,
        cache,
        &mut |ws, missing| catalog.sources_for_missing(ws, &target, &root, read, missing),
    ))
}

/// Overrides `[cache] url` (CI sets it once for every workspace it checks).
pub const CACHE_URL_ENV: &str = "PHLO_CACHE_URL";

/// The store the workspace shares its compile cache in, besides its own directory:
/// `PHLO_CACHE_URL`, else `[cache] url`, else the state store when it is PostgreSQL. A
/// directory is a path (relative to the workspace) or a `file://` URL; `"state"` is the
/// PostgreSQL state store; `"none"` turns sharing off. Another scheme is C002.
pub fn shared_cache(
    ws: &Workspace,
    state: Option<&StateLocation>,
) -> Result<Option<Arc<dyn PackStore>>, Diagnostic> {
    let from_env = std::env::var(CACHE_URL_ENV).ok().filter(|v| !v.is_empty());
    let configured = from_env.is_none() && ws.config.cache.url.is_some();
    let Some(url) = from_env.or_else(|| ws.config.cache.url.clone()) else {
        return Ok(match state {
            Some(StateLocation::Postgres(url)) => Some(Arc::new(PostgresPackStore::new(url))),
            _ => None,
        });
    };
    let invalid = |message: String, help: &str| {
        let d = Diagnostic::error(codes::INVALID_CONFIG, message).with_help(help);
        if !configured {
            return d.with_note(format!("set by {CACHE_URL_ENV}"));
        }
        let text = std::fs::read_to_string(ws.root.join("phlo.toml")).unwrap_or_default();
        let line = phlo_transform_project::config::key_line(&text, "cache", "url");
        d.in_file("phlo.toml").at(line, 1)
    };
    let lower = url.to_ascii_lowercase();
    if lower == "none" {
        return Ok(None);
    }
    if lower == "state" {
        return match state {
            Some(StateLocation::Postgres(url)) => Ok(Some(Arc::new(PostgresPackStore::new(url)))),
            _ => Err(invalid(
                "`[cache] url = \"state\"` needs a PostgreSQL state store (`--state postgres://…` or PHLO_STATE_URL)".into(),
                "pass a PostgreSQL --state, or give the cache a directory or postgres:// URL of its own",
            )),
        };
    }
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        return Ok(Some(Arc::new(PostgresPackStore::new(&url))));
    }
    let path = match url.strip_prefix("file://") {
        Some(path) => path.to_string(),
        None if url.contains("://") => {
            phlo_transform_core::secrets::register_url(&url);
            return Err(invalid(
                format!(
                    "the compile cache URL `{}` has a scheme phlo-transform cannot store a cache in",
                    phlo_transform_core::secrets::redact_url(&url)
                ),
                "use a directory (a path or file://), a postgres:// URL, \"state\" or \"none\"",
            ));
        }
        None => url,
    };
    let path = ws.root.join(path);
    Ok(Some(Arc::new(DirPackStore::shared(path))))
}

/// The sources' states of the last compile (schemas, identities, what could not be read),
/// kept for the next compile of a long-lived process: reading them again (a CSV's inferred
/// schema, Parquet footers, Delta logs) took about 40 % of a recompile in memory. Reused only
/// while the workspace declares exactly the same sources; [`SourceStates::forget`] when files
/// change on disk, since a source's data may have.
#[derive(Default)]
pub struct SourceStates {
    last: Mutex<Option<Loaded>>,
}

struct Loaded {
    /// Every declared source, as declared.
    declared: Vec<String>,
    snapshot: CatalogSnapshot,
    diagnostics: Vec<Diagnostic>,
}

impl SourceStates {
    /// Reads the sources again on the next compile.
    pub fn forget(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn load(&self, ws: &Workspace) -> (CatalogSnapshot, Vec<Diagnostic>) {
        let declared: Vec<String> = ws.sources.iter().map(|s| format!("{s:?}")).collect();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = last.as_ref().filter(|l| l.declared == declared) {
            return (l.snapshot.clone(), l.diagnostics.clone());
        }
        let (snapshot, diagnostics) = CatalogSnapshot::load(ws);
        *last = Some(Loaded {
            declared,
            snapshot: snapshot.clone(),
            diagnostics: diagnostics.clone(),
        });
        (snapshot, diagnostics)
    }
}
