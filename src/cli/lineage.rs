//! `lineage` and `impact`: reports over the compilation's one `LineageGraph` (SPEC §55–57).

use clap::ValueEnum;
use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::lineage::{NodeKind, Target};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::SelectorSpec;
use std::collections::BTreeSet;

use super::render::{self, fatal, Output};
use super::selection::ScopeArgs;
use super::{compile, Paths, EXIT_OK};

/// What `lineage` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LineageFormat {
    /// A readable chain (or the report as JSON with --json).
    #[default]
    Text,
    /// The canonical lineage document (nodes and edges), scoped to the target.
    Graph,
    /// The OpenLineage design-time document: a JSON array of JobEvents and DatasetEvents.
    Openlineage,
}

/// Compiles; lineage is reported even when some models have errors (their lineage is
/// `unknown`), but the errors are shown.
fn compile_for_lineage(
    paths: &Paths,
    json: bool,
) -> Result<(&'static Compilation, Output<'static>), u8> {
    let c = compile(paths).map_err(|d| fatal(d, json))?;
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    Ok((c, out))
}

fn unknown_target(target: &str, suggestions: Vec<String>) -> Diagnostic {
    Diagnostic::error(
        codes::UNKNOWN_MODEL,
        format!("no model, source or column named `{target}`"),
    )
    .with_suggestions(suggestions)
    .with_help(
        "name a model or source (`shared.orders`, `model://shared/orders`) or one of its columns (`shared.orders.amount`); `phlo-transform list` shows the models",
    )
}

pub async fn lineage(
    paths: &Paths,
    target: Option<&str>,
    format: LineageFormat,
    scope: &ScopeArgs,
    json: bool,
) -> u8 {
    let (c, mut out) = match compile_for_lineage(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let g = c.lineage();
    // Asking for lineage writes lineage.json and openlineage.json when they are not current.
    if let Err(d) = super::commands::write_lineage_artifacts(paths, c, LineageArtifacts::Wanted) {
        out.diagnostics([d]);
    }
    let target = match target.map(|t| g.resolve(t).map_err(|s| unknown_target(t, s))) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(d)) => return out.fail([d]),
    };
    // Selectors scope the output to the selected models' lineage.
    let selected = match selected_targets(c, scope) {
        Ok(s) => s,
        Err(diags) => return out.fail(diags),
    };
    let scope_nodes: Option<BTreeSet<usize>> = match (target, selected) {
        (None, None) => None,
        (t, s) => Some(
            t.into_iter()
                .chain(s.into_iter().flatten())
                .flat_map(|t| g.subgraph(t))
                .collect(),
        ),
    };
    match (format, target) {
        // Documents whose shape is fixed (the lineage graph, OpenLineage): no envelope.
        (LineageFormat::Graph, _) => render::document(&g.document_for(scope_nodes.as_ref())),
        (LineageFormat::Openlineage, _) => {
            let config = phlo_transform_openlineage::OpenLineageConfig::from_env(
                &c.workspace,
                &paths.warehouse,
            );
            let scope: Option<BTreeSet<&str>> = scope_nodes.as_ref().map(|nodes| {
                nodes
                    .iter()
                    .filter(|&&n| g.nodes[n].kind == NodeKind::Dataset)
                    .map(|&n| g.nodes[n].name.as_str())
                    .collect()
            });
            let keep = |name: &str| scope.as_ref().is_none_or(|s| s.contains(name));
            render::document(&phlo_transform_openlineage::design_events_for(
                c, &config, &keep,
            ));
        }
        (LineageFormat::Text, None) => out.report(&c.lineage_overview(scope_nodes.as_ref())),
        (LineageFormat::Text, Some(Target::Dataset(d))) => out.report(&g.model_report(d)),
        (LineageFormat::Text, Some(Target::Column(col))) => out.report(&g.column_report(col)),
    }
    EXIT_OK
}

pub async fn impact(paths: &Paths, target: Option<&str>, scope: &ScopeArgs, json: bool) -> u8 {
    let (c, out) = match compile_for_lineage(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let mut targets = Vec::new();
    if let Some(t) = target {
        match c.lineage().resolve(t) {
            Ok(t) => targets.push(t),
            Err(suggestions) => return out.fail([unknown_target(t, suggestions)]),
        }
    }
    match selected_targets(c, scope) {
        Ok(selected) => targets.extend(selected.into_iter().flatten()),
        Err(diags) => return out.fail(diags),
    }
    if targets.is_empty() {
        return out.fail([
            Diagnostic::error(codes::EMPTY_SELECTION, "nothing to analyse: name a target or select models")
                .with_help("`phlo-transform impact raw.orders.amount`, or `impact -s changed --since main` for the blast radius of a diff"),
        ]);
    }
    out.report(&c.lineage().impact_of_all(&targets));
    EXIT_OK
}

/// The dataset targets of the models `scope` selects (`None` without selectors). `changed`
/// works with `--since` (git); recorded state is not read here.
fn selected_targets(
    c: &Compilation,
    scope: &ScopeArgs,
) -> Result<Option<Vec<Target>>, Vec<Diagnostic>> {
    let spec = scope.spec_with(&[]);
    if spec == SelectorSpec::default() {
        return Ok(None);
    }
    let selection = phlo_transform_plan::select(c, &spec, &BTreeSet::new)?;
    Ok(Some(
        selection
            .acted_on()
            .filter_map(|i| c.lineage().resolve(c.models[i].name.as_str()).ok())
            .collect(),
    ))
}
