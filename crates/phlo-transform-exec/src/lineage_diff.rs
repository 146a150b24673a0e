//! `lineage --diff <git-ref>` (SPEC §55): the workspace at merge-base(ref, HEAD), read from
//! Git's objects into a temporary directory, compiled for the same target as the work tree's
//! compilation, and the two lineage graphs compared ([`phlo_transform_compiler::lineage::compare`]).
//! Every front end calls [`lineage_diff`] and renders the [`LineageDiffReport`].

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::lineage::{compare, LineageDiff};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::git_tree::{self, GitBase};
use serde::Serialize;

/// What `lineage --diff` reports: the commit compared with, and what changed from it to the
/// work tree.
#[derive(Debug, Serialize)]
pub struct LineageDiffReport {
    pub base: GitBase,
    /// Errors of the base's compilation (its models with errors are listed under `unknown`).
    pub base_errors: usize,
    #[serde(flatten)]
    pub diff: LineageDiff,
}

/// Compares `candidate` (the work tree's compilation, for `adapter`'s target) with the
/// workspace as it was at merge-base(`reference`, HEAD), compiled for the same target.
pub fn lineage_diff(
    candidate: &Compilation,
    adapter: Option<&str>,
    reference: &str,
) -> Result<LineageDiffReport, Diagnostic> {
    let tree = git_tree::materialise(&candidate.workspace.root, reference)?;
    let base = crate::compile_for_target(&tree.workspace(), adapter, SchemaRead::Cached)?;
    Ok(LineageDiffReport {
        base_errors: base.diagnostics.error_count(),
        diff: compare(base.lineage(), candidate.lineage()),
        base: tree.base.clone(),
    })
}
