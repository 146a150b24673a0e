//! `lineage --diff <git-ref>` (SPEC §55): the workspace at merge-base(ref, HEAD), read from
//! Git's objects into a temporary directory, compiled for the same target as the work tree's
//! compilation, and the two lineage graphs compared ([`phlo_transform_compiler::lineage::compare`]).
//! Every front end calls [`lineage_diff`] (or [`lineage_diff_in`], which records it as a
//! candidate's evidence) and renders the [`LineageDiffReport`].

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::lineage::{compare, LineageDiff};
use phlo_transform_compiler::{Compilation, CompileCache, DirPackStore};
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::git_tree::{self, GitBase};
use phlo_transform_project::Overlay;
use serde::Serialize;
use std::sync::Arc;

use crate::environments::lineage_gate::LineageEvidence;
use crate::target::CommandTarget;

/// What `lineage --diff` reports: the commit compared with, and what changed from it to the
/// work tree.
#[derive(Debug, Serialize)]
pub struct LineageDiffReport {
    pub base: GitBase,
    /// Errors of the base's compilation (its models with errors are listed under `unknown`).
    pub base_errors: usize,
    #[serde(flatten)]
    pub diff: LineageDiff,
    /// With `--ref <candidate>`: the evidence recorded for the candidate's promotion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<LineageEvidence>,
}

/// Compares `candidate` (the work tree's compilation, for `adapter`'s target) with the
/// workspace as it was at merge-base(`reference`, HEAD), compiled for the same target.
pub fn lineage_diff(
    candidate: &Compilation,
    adapter: Option<&str>,
    reference: &str,
) -> Result<LineageDiffReport, Diagnostic> {
    let tree = git_tree::materialise(&candidate.workspace.root, reference)?;
    // The base is mostly the candidate's models: the candidate's own compile cache answers
    // them, and learns the base's.
    let mut cache = CompileCache::for_workspace(&tree.workspace());
    if cache.is_enabled() {
        let own = candidate
            .workspace
            .root
            .join(phlo_transform_compiler::cache::DIR);
        cache = cache.with_shared(Arc::new(DirPackStore::own(own)));
    }
    let base = crate::compile_for_target_with(
        &tree.workspace(),
        adapter,
        SchemaRead::Cached,
        &Overlay::default(),
        &cache,
        &crate::SourceStates::default(),
    )?;
    Ok(LineageDiffReport {
        base_errors: base.diagnostics.error_count(),
        diff: compare(base.lineage(), candidate.lineage()),
        base: tree.base.clone(),
        evidence: None,
    })
}

/// [`lineage_diff`] where `target` runs; with an environment (`--ref <candidate>`), the diff
/// is also recorded as the candidate's lineage-diff evidence, which `promote`'s
/// `lineage_diff` gate reads.
pub async fn lineage_diff_in(
    candidate: &Compilation,
    target: &CommandTarget<'_>,
    reference: &str,
) -> Result<LineageDiffReport, Diagnostic> {
    let mut report = lineage_diff(candidate, target.adapter, reference)?;
    if let Some(name) = target.reference {
        let environments = target.environments().await?;
        let recorded = environments
            .record_lineage_diff(name, candidate, &report.base, &report.diff.orphaned)
            .await?;
        report.evidence = Some(recorded);
    }
    Ok(report)
}
