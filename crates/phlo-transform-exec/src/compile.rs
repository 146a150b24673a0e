//! A workspace compiled for the target a command runs against: what the compiler is given
//! beyond the files (the target's dialect, the relations only its warehouse has, the names it
//! reserves) is asked of the target's driver ([`phlo_transform_adapter::WarehouseCatalog`]),
//! once for the CLI, a daemon and tests.

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::{CatalogSnapshot, Compilation, CompileCache};
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{Overlay, Workspace};
use std::path::Path;
use std::sync::Mutex;

/// Loads the workspace at `root` and compiles it for the target `adapter` names (`None`: the
/// workspace's `[adapter]`, else the embedded engine). The target's dialect types the models
/// (its functions, its type names); the relations only its warehouse has become sources typed
/// from its metadata (Trino: `catalog.schema.table`) or its catalog (PostgreSQL, DuckDB,
/// through the schema cache as `read` says); model names the target reserves are errors.
/// Parsing and typing reuse the workspace's compile cache (`.phlo/cache/compile`).
pub fn compile_for_target(
    root: &Path,
    adapter: Option<&str>,
    read: SchemaRead,
) -> Result<Compilation, Diagnostic> {
    let cache = CompileCache::for_workspace(root);
    let sources = SourceStates::default();
    compile_for_target_with(root, adapter, read, &Overlay::default(), &cache, &sources)
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
    let mut ws = Workspace::load_with(root, overlay)?;
    let target = ws.adapter_target(adapter)?;
    let catalog = phlo_transform_adapter::driver(target.kind());
    if let Some(dialect) = catalog.dialect() {
        ws.config.transform.dialect = Some(dialect.to_string());
    }
    catalog.add_named_sources(&mut ws, &target, root)?;
    let (snapshot, mut diags) = sources.load(&ws);
    diags.extend(catalog.reserved_names(&ws, &target));
    // The relations nothing resolves come from the compile's own parse of the models.
    Ok(Compilation::compile_with(
        ws,
        snapshot,
        diags,
        cache,
        &mut |ws, missing| catalog.sources_for_missing(ws, &target, root, read, missing),
    ))
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
