//! What `lineage` and `impact` look at (SPEC §55–57): the target a person named (a model, a
//! source or a column) and the models a selection picks, as nodes of the compilation's
//! lineage graph. Recorded state is never read: `changed` works with `--since` (git).

use phlo_transform_compiler::lineage::{NodeKind, Target};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use std::collections::BTreeSet;

use crate::selector::{select, SelectorSpec};

/// The part of the lineage graph `lineage` shows.
pub struct LineageScope {
    /// The named target, if one was.
    pub target: Option<Target>,
    /// The nodes of the target's and the selected models' lineage; `None`: the whole graph
    /// (no target, no selection).
    pub nodes: Option<BTreeSet<usize>>,
}

impl LineageScope {
    /// `target` (resolved in `c`'s lineage graph) and the models `spec` selects, with their
    /// lineage. P008 with suggestions for a target that names nothing.
    pub fn new(
        c: &Compilation,
        target: Option<&str>,
        spec: &SelectorSpec,
    ) -> Result<Self, Vec<Diagnostic>> {
        let g = c.lineage();
        let target = target
            .map(|t| resolve(c, t))
            .transpose()
            .map_err(|d| vec![d])?;
        let selected = selected_targets(c, spec)?;
        let nodes = match (target, selected) {
            (None, None) => None,
            (t, s) => Some(
                t.into_iter()
                    .chain(s.into_iter().flatten())
                    .flat_map(|t| g.subgraph(t))
                    .collect(),
            ),
        };
        Ok(LineageScope { target, nodes })
    }

    /// The names of the datasets in scope (OpenLineage's events are per dataset); `None`:
    /// every dataset.
    pub fn datasets<'c>(&self, c: &'c Compilation) -> Option<BTreeSet<&'c str>> {
        let g = c.lineage();
        self.nodes.as_ref().map(|nodes| {
            nodes
                .iter()
                .filter(|&&n| g.nodes[n].kind == NodeKind::Dataset)
                .map(|&n| g.nodes[n].name.as_str())
                .collect()
        })
    }
}

/// What `impact` analyses: `target` and the models `spec` selects. L004 when that is
/// nothing, P008 for a target that names nothing.
pub fn impact_targets(
    c: &Compilation,
    target: Option<&str>,
    spec: &SelectorSpec,
) -> Result<Vec<Target>, Vec<Diagnostic>> {
    let mut targets = Vec::new();
    if let Some(t) = target {
        targets.push(resolve(c, t).map_err(|d| vec![d])?);
    }
    targets.extend(selected_targets(c, spec)?.into_iter().flatten());
    if targets.is_empty() {
        return Err(vec![Diagnostic::error(
            codes::EMPTY_SELECTION,
            "nothing to analyse: name a target or select models",
        )
        .with_help("`phlo-transform impact raw.orders.amount`, or `impact -s changed --since main` for the blast radius of a diff")]);
    }
    Ok(targets)
}

/// The lineage node `target` names, or P008 with the names it is close to.
fn resolve(c: &Compilation, target: &str) -> Result<Target, Diagnostic> {
    c.lineage().resolve(target).map_err(|suggestions| {
        Diagnostic::error(
            codes::UNKNOWN_MODEL,
            format!("no model, source or column named `{target}`"),
        )
        .with_suggestions(suggestions)
        .with_help(
            "name a model or source (`shared.orders`, `model://shared/orders`) or one of its columns (`shared.orders.amount`); `phlo-transform list` shows the models",
        )
    })
}

/// The dataset targets of the models `spec` selects (`None` without selectors).
fn selected_targets(
    c: &Compilation,
    spec: &SelectorSpec,
) -> Result<Option<Vec<Target>>, Vec<Diagnostic>> {
    if *spec == SelectorSpec::default() {
        return Ok(None);
    }
    let selection = select(c, spec, &BTreeSet::new)?;
    Ok(Some(
        selection
            .acted_on()
            .filter_map(|i| c.lineage().resolve(c.models[i].name.as_str()).ok())
            .collect(),
    ))
}
