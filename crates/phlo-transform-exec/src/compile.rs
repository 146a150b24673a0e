//! A workspace compiled for the target a command runs against: what the compiler is given
//! beyond the files (the target's dialect, the relations only its warehouse has, the names it
//! reserves) is asked of the target's driver ([`phlo_transform_adapter::WarehouseCatalog`]),
//! once for the CLI, a daemon and tests.

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::{CatalogSnapshot, Compilation, CompileCache};
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{Overlay, Workspace};
use std::path::Path;

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
    compile_for_target_with(root, adapter, read, &Overlay::default(), &cache)
}

/// [`compile_for_target`] with the model files of `overlay` read from it (an editor's
/// buffers) and `cache` as the compile cache (an in-memory one in a long-lived process).
pub fn compile_for_target_with(
    root: &Path,
    adapter: Option<&str>,
    read: SchemaRead,
    overlay: &Overlay,
    cache: &CompileCache,
) -> Result<Compilation, Diagnostic> {
    let mut ws = Workspace::load_with(root, overlay)?;
    let target = ws.adapter_target(adapter)?;
    let catalog = phlo_transform_adapter::driver(target.kind());
    if let Some(dialect) = catalog.dialect() {
        ws.config.transform.dialect = Some(dialect.to_string());
    }
    catalog.add_named_sources(&mut ws, &target, root)?;
    let (snapshot, mut diags) = CatalogSnapshot::load(&ws);
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
