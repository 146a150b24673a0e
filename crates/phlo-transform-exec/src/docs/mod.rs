//! `docs` (SPEC §100, issue 41): a static documentation site of the workspace in one folder
//! that opens from the file system (file://) with no server and no network. Everything is
//! generated here or vendored in the crate (`assets/`, `include_str!`): an index with a
//! client-side search, a page per model and per source (schema, lineage diagram, tests, run
//! history, highlighted SQL) and a graph view that draws a neighbourhood, not the whole DAG.
//!
//! The data comes from what other commands already report: `inspect`'s
//! [`ModelInspection`](crate::inspect::ModelInspection) and
//! [`SourceInspection`](crate::inspect::SourceInspection), the compilation's lineage graph,
//! and the state's history ([`crate::history`]). Output is deterministic: the same workspace
//! and state give the same bytes (the only times shown are the state's).

mod html;
mod pages;
mod scripts;
mod site;
mod sql;
mod svg;
mod write;

pub use site::Site;
pub use write::{DocsReport, MARKER};

use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use std::path::Path;

use crate::target::CommandTarget;

/// The site's folder under the artifacts (`.phlo/transform/docs/`) when `--out` is not given.
pub fn default_out(artifacts: &Path) -> std::path::PathBuf {
    artifacts.join("docs")
}

/// Writes the site of `c` (with the history of `target`'s state) into `out`, replacing an
/// earlier site there; a folder that holds something else is refused (W001).
pub async fn docs(
    c: &Compilation,
    target: &CommandTarget<'_>,
    out: &Path,
) -> Result<DocsReport, Diagnostic> {
    let store = target.open_state_read_only().await?;
    let site = Site::gather(c, store.as_ref()).await?;
    write::write_site(&site, out)
}
