//! dbt-compatible artifacts (`run --artifacts dbt`, `[artifacts] dbt = true`): after a run,
//! `target/manifest.json` (dbt's manifest schema v12) and `target/run_results.json` (run
//! results v6), made from the compilation and the run report, for the tools that read dbt's
//! artifacts (catalogs' dbt ingestion, dbt-docs, observability packages). docs/dbt.md says
//! what maps to what.

mod ids;
mod manifest;
mod run_results;
mod types;

pub use ids::Relations;

use phlo_transform_compiler::{ArtifactDir, Compilation};
use phlo_transform_core::Diagnostic;
use std::path::{Path, PathBuf};

use crate::RunReport;

/// The folder under the workspace root the documents are written to: dbt's default
/// `target-path`, where the tools look.
pub const DIR: &str = "target";

/// The files written there.
pub const FILES: [&str; 2] = ["manifest.json", "run_results.json"];

/// Where the documents of the workspace at `root` go.
pub fn dir(root: &Path) -> PathBuf {
    root.join(DIR)
}

/// Writes both documents for the run `report` of `command` (`run`, `apply`) over `c`, with
/// the relations of the engine it ran on.
pub fn write(
    root: &Path,
    c: &Compilation,
    relations: &Relations,
    report: &RunReport,
    command: &str,
) -> Result<(), Diagnostic> {
    let generated_at = crate::failure::now();
    let invocation = manifest::Invocation {
        invocation_id: &report.run_id,
        started_at: &report.started_at,
        generated_at: &generated_at,
    };
    let ids = ids::Ids::new(c);
    let out = ArtifactDir::new(dir(root));
    out.write(
        FILES[0],
        &manifest::manifest(c, &ids, relations, &invocation),
    )?;
    out.write(
        FILES[1],
        &run_results::run_results(c, &ids, relations, report, command, &invocation),
    )
}
