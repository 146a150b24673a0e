//! The workspace's artifacts with the design-time OpenLineage document (`openlineage.json`):
//! the compiler's [`ArtifactDir`] writes them; this crate builds the document and the part of
//! its stamp that is not the compilation (namespace, warehouse).

use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::{ArtifactDir, Compilation, DesignEvents};
use phlo_transform_core::Diagnostic;
use std::path::Path;

use crate::config::OpenLineageConfig;
use crate::design::design_events;

/// The artifacts of `c` into `dir` ([`ArtifactDir::write_compile`]), with the design-time
/// OpenLineage document of the workspace's `[openlineage]` and the environment, for the local
/// engine's warehouse at `warehouse`.
pub fn write_compile_artifacts(
    dir: &ArtifactDir,
    c: &Compilation,
    warehouse: &Path,
    lineage: LineageArtifacts,
) -> Result<(), Diagnostic> {
    let config = OpenLineageConfig::from_env(&c.workspace, warehouse);
    let design = design_document(c, &config);
    dir.write_compile(c, lineage, &design)
}

/// The lineage documents alone ([`ArtifactDir::write_lineage`]): what `lineage` writes.
pub fn write_lineage_artifacts(
    dir: &ArtifactDir,
    c: &Compilation,
    warehouse: &Path,
    wanted: LineageArtifacts,
) -> Result<(), Diagnostic> {
    let config = OpenLineageConfig::from_env(&c.workspace, warehouse);
    let design = design_document(c, &config);
    dir.write_lineage(c, wanted, &design)
}

fn design_document<'a>(c: &'a Compilation, config: &'a OpenLineageConfig) -> DesignEvents<'a> {
    DesignEvents {
        context: format!("{}\n{}", config.namespace, config.warehouse.display()),
        json: Box::new(move || {
            serde_json::to_string(&design_events(c, config)).expect("events serialise")
        }),
    }
}
