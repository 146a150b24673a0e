//! `lineage` and `impact`: reports over the compilation's one `LineageGraph` (SPEC §55–57).

use clap::ValueEnum;
use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::lineage::{
    ColumnReport, Confidence, ImpactReport, LineageGraph, ModelReport, NodeKind, Reach, Target,
};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics};
use phlo_transform_plan::SelectorSpec;
use std::collections::BTreeSet;

use super::selection::ScopeArgs;
use super::{compile, render, Paths, EXIT_ERRORS, EXIT_OK};

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

fn fail(d: Diagnostic, json: bool) -> u8 {
    render::diagnostics(&Diagnostics(vec![d]), None, json);
    EXIT_ERRORS
}

/// Compiles; lineage is reported even when some models have errors (their lineage is
/// `unknown`), but the errors are shown.
fn compile_for_lineage(paths: &Paths, json: bool) -> Result<&'static Compilation, u8> {
    let c = compile(paths).map_err(|d| fail(d, json))?;
    if !json {
        render::diagnostics(&c.diagnostics, Some(&c.workspace), false);
    }
    Ok(c)
}

fn resolve(g: &LineageGraph, target: &str, json: bool) -> Result<Target, u8> {
    g.resolve(target).map_err(|suggestions| {
        fail(
            Diagnostic::error(
                codes::UNKNOWN_MODEL,
                format!("no model, source or column named `{target}`"),
            )
            .with_suggestions(suggestions)
            .with_help(
                "name a model or source (`shared.orders`, `model://shared/orders`) or one of its columns (`shared.orders.amount`); `phlo-transform list` shows the models",
            ),
            json,
        )
    })
}

pub async fn lineage(
    paths: &Paths,
    target: Option<&str>,
    format: LineageFormat,
    scope: &ScopeArgs,
    json: bool,
) -> u8 {
    let c = match compile_for_lineage(paths, json) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let g = c.lineage();
    // Asking for lineage writes lineage.json and openlineage.json when they are not current.
    if let Err(d) = super::commands::write_lineage_artifacts(paths, c, LineageArtifacts::Wanted) {
        if !json {
            render::diagnostics(&Diagnostics(vec![d]), None, false);
        }
    }
    let target = match target.map(|t| resolve(g, t, json)).transpose() {
        Ok(t) => t,
        Err(code) => return code,
    };
    // Selectors scope the output to the selected models' lineage.
    let selected = match selected_targets(c, scope, json) {
        Ok(s) => s,
        Err(code) => return code,
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
    match format {
        LineageFormat::Graph => {
            print_json(&g.document_for(scope_nodes.as_ref()));
        }
        LineageFormat::Openlineage => {
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
            print_json(&phlo_transform_openlineage::design_events_for(
                c, &config, &keep,
            ));
        }
        LineageFormat::Text => match target {
            None => {
                if json {
                    print_json(&g.document_for(scope_nodes.as_ref()));
                } else {
                    print_overview(c, scope_nodes.as_ref());
                }
            }
            Some(Target::Dataset(d)) => {
                let report = g.model_report(d);
                if json {
                    print_json(&report);
                } else {
                    print_model(&report);
                }
            }
            Some(Target::Column(col)) => {
                let report = g.column_report(col);
                if json {
                    print_json(&report);
                } else {
                    print_column(&report);
                }
            }
        },
    }
    EXIT_OK
}

pub async fn impact(paths: &Paths, target: Option<&str>, scope: &ScopeArgs, json: bool) -> u8 {
    let c = match compile_for_lineage(paths, json) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut targets = Vec::new();
    if let Some(t) = target {
        match resolve(c.lineage(), t, json) {
            Ok(t) => targets.push(t),
            Err(code) => return code,
        }
    }
    match selected_targets(c, scope, json) {
        Ok(selected) => targets.extend(selected.into_iter().flatten()),
        Err(code) => return code,
    }
    if targets.is_empty() {
        return fail(
            Diagnostic::error(codes::EMPTY_SELECTION, "nothing to analyse: name a target or select models")
                .with_help("`phlo-transform impact raw.orders.amount`, or `impact -s changed --since main` for the blast radius of a diff"),
            json,
        );
    }
    let report = c.lineage().impact_of_all(&targets);
    if json {
        print_json(&report);
    } else {
        print_impact(&report);
    }
    EXIT_OK
}

/// The dataset targets of the models `scope` selects (`None` without selectors). `changed`
/// works with `--since` (git); recorded state is not read here.
fn selected_targets(
    c: &Compilation,
    scope: &ScopeArgs,
    json: bool,
) -> Result<Option<Vec<Target>>, u8> {
    let spec = scope.spec_with(&[]);
    if spec == SelectorSpec::default() {
        return Ok(None);
    }
    match phlo_transform_plan::select(c, &spec, &BTreeSet::new) {
        Ok(selection) => Ok(Some(
            selection
                .acted_on()
                .filter_map(|i| c.lineage().resolve(c.models[i].name.as_str()).ok())
                .collect(),
        )),
        Err(diags) => {
            render::diagnostics(&Diagnostics(diags), None, json);
            Err(EXIT_ERRORS)
        }
    }
}

fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("reports serialise")
    );
}

fn print_overview(c: &Compilation, scope: Option<&BTreeSet<usize>>) {
    let g = c.lineage();
    for m in &c.models {
        let Ok(Target::Dataset(d)) = g.resolve(m.name.as_str()) else {
            continue;
        };
        if scope.is_some_and(|s| !s.contains(&d)) {
            continue;
        }
        let report = g.model_report(d);
        let inputs: Vec<String> = report
            .upstream
            .iter()
            .filter(|s| s.depth == 1)
            .map(|s| s.name.clone())
            .collect();
        println!(
            "{}  ←  {}{}",
            report.dataset,
            if inputs.is_empty() {
                "(no inputs)".to_string()
            } else {
                inputs.join(", ")
            },
            confidence_suffix(report.confidence)
        );
    }
}

fn confidence_suffix(c: Confidence) -> &'static str {
    match c {
        Confidence::Exact => "",
        Confidence::Unknown => "  [lineage unknown]",
    }
}

/// Prints datasets level by level, joined by arrows, oldest first.
fn print_chain(levels: &[Vec<String>]) {
    for (i, level) in levels.iter().enumerate() {
        if i > 0 {
            println!("    ↓");
        }
        println!("{}", level.join(", "));
    }
}

fn levels(steps: impl Iterator<Item = (usize, String)>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for (depth, name) in steps {
        if out.len() < depth {
            out.resize_with(depth, Vec::new);
        }
        out[depth - 1].push(name);
    }
    out
}

fn print_model(r: &ModelReport) {
    let mut chain: Vec<Vec<String>> = levels(r.upstream.iter().map(|s| (s.depth, s.name.clone())));
    chain.reverse();
    chain.push(vec![r.dataset.clone()]);
    chain.extend(levels(
        r.downstream.iter().map(|s| (s.depth, s.name.clone())),
    ));
    print_chain(&chain);
    if r.origin == "source" {
        println!("\n{} is a source", r.dataset);
    }
    if r.confidence == Confidence::Unknown {
        println!(
            "\nColumn lineage: unknown ({})",
            r.reason.as_deref().unwrap_or("analysis incomplete")
        );
    }
    if !r.columns.is_empty() {
        println!("\nColumns:");
        let width = r.columns.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for col in &r.columns {
            let mut from = if col.direct.is_empty() {
                "(no column inputs)".to_string()
            } else {
                col.direct.join(", ")
            };
            if !col.indirect.is_empty() {
                from.push_str(&format!("  | indirect: {}", col.indirect.join(", ")));
            }
            let unknown = match col.confidence {
                Confidence::Unknown => "  [confidence: unknown]",
                Confidence::Exact => "",
            };
            println!("  {:<width$}  ← {from}{unknown}", col.name);
        }
    }
}

fn print_column(r: &ColumnReport) {
    let ty = r.data_type.as_deref().unwrap_or("?");
    println!("{}  {ty}", r.column);
    if r.confidence == Confidence::Unknown {
        println!("confidence: unknown (part of this column's derivation could not be analysed)");
    }
    let edges = |title: &str, edges: &[phlo_transform_compiler::lineage::InputEdge]| {
        if edges.is_empty() {
            return;
        }
        println!("\n{title}:");
        let width = edges.iter().map(|e| e.column.len()).max().unwrap_or(0);
        for e in edges {
            let kind = serde_json::to_value(e.transformation).expect("serialises");
            println!(
                "  {:<width$}  {:<14}  {}",
                e.column,
                kind.as_str().unwrap_or_default(),
                e.expression.as_deref().unwrap_or("")
            );
        }
    };
    edges("Direct inputs", &r.direct);
    edges(
        "Indirect inputs (join keys, filters, grouping, sort, window keys, conditions)",
        &r.indirect,
    );
    let direct_chain = |reach: &[Reach]| {
        levels(
            reach
                .iter()
                .filter(|s| s.via == phlo_transform_compiler::lineage::Directness::Direct)
                .map(|s| (s.depth, s.name.clone())),
        )
    };
    let mut chain = direct_chain(&r.upstream);
    chain.reverse();
    chain.push(vec![r.column.clone()]);
    chain.extend(direct_chain(&r.downstream));
    println!("\nChain (direct):");
    print_chain(&chain);
    let indirect: Vec<&str> = r
        .upstream
        .iter()
        .filter(|s| s.via == phlo_transform_compiler::lineage::Directness::Indirect)
        .map(|s| s.name.as_str())
        .collect();
    if !indirect.is_empty() {
        println!("\nUpstream through indirect edges: {}", indirect.join(", "));
    }
}

fn print_impact(r: &ImpactReport) {
    println!("Impact of {}", r.target);
    println!("\nColumns ({}):", r.columns.len());
    for c in &r.columns {
        let via = match c.via {
            phlo_transform_compiler::lineage::Directness::Direct => "",
            phlo_transform_compiler::lineage::Directness::Indirect => "  (indirect)",
        };
        println!("  {}  {}{via}", c.depth, c.column);
    }
    let list = |title: &str, items: &[String]| {
        println!(
            "\n{title} ({}): {}",
            items.len(),
            if items.is_empty() {
                "none".to_string()
            } else {
                items.join(", ")
            }
        );
    };
    list("Models", &r.models);
    list("Tests", &r.tests);
    list("Workflows", &r.workflows);
    if !r.unknown.is_empty() {
        list(
            "Downstream models with unknown lineage (may be affected)",
            &r.unknown,
        );
    }
}
