//! The selector flags (SPEC §82), flattened into every command that selects models.

use clap::Args;
use phlo_transform_plan::SelectorSpec;

#[derive(Args, Clone, Debug, Default)]
pub struct SelectionArgs {
    /// Selector terms: NAME, model://URI, 'prefix.*', a unique suffix, tag:X, namespace:X,
    /// source:X, changed, all; `+` before/after adds upstream/downstream models.
    #[arg(value_name = "SELECTOR")]
    pub terms: Vec<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Shorthand for the `changed` term: desired version differs from recorded state.
    #[arg(long)]
    pub changed: bool,
    /// Add every upstream model of the matched models.
    #[arg(long)]
    pub upstream: bool,
    /// Add every downstream model of the matched models.
    #[arg(long)]
    pub downstream: bool,
    /// Build the selected models even when unchanged (plan, apply, run).
    #[arg(long)]
    pub force: bool,
}

/// The selector flags every selecting command shares; `lineage` and `impact`, whose
/// positional argument is a target, take only these.
#[derive(Args, Clone, Debug, Default)]
pub struct ScopeArgs {
    /// Include models (same grammar as the positional terms; repeatable, union).
    #[arg(short = 's', long = "select", value_name = "SELECTOR")]
    pub select: Vec<String>,
    /// Remove models, last and absolutely: an excluded model is never built (repeatable).
    #[arg(long, value_name = "SELECTOR")]
    pub exclude: Vec<String>,
    /// Keep only models carrying this tag (repeatable: every tag).
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// Keep only models of this workflow, `workflows/<name>/` (repeatable: any of them).
    #[arg(long, value_name = "NAME")]
    pub workflow: Vec<String>,
    /// `changed` compares against merge-base(GIT_REF, HEAD) and the working tree instead.
    #[arg(long, value_name = "GIT_REF")]
    pub since: Option<String>,
}

impl ScopeArgs {
    /// The selection these flags ask for, with `terms` prepended to `--select`.
    pub fn spec_with(&self, terms: &[String]) -> SelectorSpec {
        SelectorSpec {
            include: terms.iter().chain(&self.select).cloned().collect(),
            exclude: self.exclude.clone(),
            tags: self.tag.clone(),
            workflows: self.workflow.clone(),
            since: self.since.clone(),
            ..SelectorSpec::default()
        }
    }
}

impl SelectionArgs {
    /// True when no selector flag or term was given.
    pub fn is_empty(&self) -> bool {
        self.spec() == SelectorSpec::default()
    }

    pub fn spec(&self) -> SelectorSpec {
        let mut spec = self.scope.spec_with(&self.terms);
        if self.changed {
            spec.include.push("changed".into());
        }
        SelectorSpec {
            upstream: self.upstream,
            downstream: self.downstream,
            force: self.force,
            ..spec
        }
    }
}
