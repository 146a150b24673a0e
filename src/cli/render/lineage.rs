//! `lineage` and `impact`: the compiler's lineage reports as text.

use super::Report;
use phlo_transform_compiler::lineage::{
    ColumnReport, Confidence, ImpactReport, ModelReport, Reach,
};
use phlo_transform_compiler::report::LineageOverview;
use std::fmt::Write;

/// Renders with one of the `print_*` functions below.
fn render<T>(report: &T, print: fn(&mut String, &T)) -> String {
    let mut out = String::new();
    print(&mut out, report);
    out
}

impl Report for LineageOverview<'_> {
    fn human(&self) -> String {
        render(self, print_overview)
    }
}

impl Report for ModelReport {
    fn human(&self) -> String {
        render(self, print_model)
    }
}

impl Report for ColumnReport {
    fn human(&self) -> String {
        render(self, print_column)
    }
}

impl Report for ImpactReport {
    fn human(&self) -> String {
        render(self, print_impact)
    }
}

/// Each model with its direct inputs.
fn print_overview(out: &mut String, o: &LineageOverview) {
    for report in &o.models {
        let inputs: Vec<String> = report
            .upstream
            .iter()
            .filter(|s| s.depth == 1)
            .map(|s| s.name.clone())
            .collect();
        let _ = writeln!(
            out,
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
fn print_chain(out: &mut String, levels: &[Vec<String>]) {
    for (i, level) in levels.iter().enumerate() {
        if i > 0 {
            let _ = writeln!(out, "    ↓");
        }
        let _ = writeln!(out, "{}", level.join(", "));
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

fn print_model(out: &mut String, r: &ModelReport) {
    let mut chain: Vec<Vec<String>> = levels(r.upstream.iter().map(|s| (s.depth, s.name.clone())));
    chain.reverse();
    chain.push(vec![r.dataset.clone()]);
    chain.extend(levels(
        r.downstream.iter().map(|s| (s.depth, s.name.clone())),
    ));
    print_chain(out, &chain);
    if r.origin == "source" {
        let _ = writeln!(out, "\n{} is a source", r.dataset);
    }
    if r.confidence == Confidence::Unknown {
        let _ = writeln!(
            out,
            "\nColumn lineage: unknown ({})",
            r.reason.as_deref().unwrap_or("analysis incomplete")
        );
    }
    if !r.columns.is_empty() {
        let _ = writeln!(out, "\nColumns:");
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
            let _ = writeln!(out, "  {:<width$}  ← {from}{unknown}", col.name);
        }
    }
}

fn print_column(out: &mut String, r: &ColumnReport) {
    let ty = r.data_type.as_deref().unwrap_or("?");
    let _ = writeln!(out, "{}  {ty}", r.column);
    if r.confidence == Confidence::Unknown {
        let _ = writeln!(
            out,
            "confidence: unknown (part of this column's derivation could not be analysed)"
        );
    }
    let mut edges = |title: &str, edges: &[phlo_transform_compiler::lineage::InputEdge]| {
        if edges.is_empty() {
            return;
        }
        let _ = writeln!(out, "\n{title}:");
        let width = edges.iter().map(|e| e.column.len()).max().unwrap_or(0);
        for e in edges {
            let kind = serde_json::to_value(e.transformation).expect("serialises");
            let _ = writeln!(
                out,
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
    let _ = writeln!(out, "\nChain (direct):");
    print_chain(out, &chain);
    let indirect: Vec<&str> = r
        .upstream
        .iter()
        .filter(|s| s.via == phlo_transform_compiler::lineage::Directness::Indirect)
        .map(|s| s.name.as_str())
        .collect();
    if !indirect.is_empty() {
        let _ = writeln!(
            out,
            "\nUpstream through indirect edges: {}",
            indirect.join(", ")
        );
    }
}

fn print_impact(out: &mut String, r: &ImpactReport) {
    let _ = writeln!(out, "Impact of {}", r.target);
    let _ = writeln!(out, "\nColumns ({}):", r.columns.len());
    for c in &r.columns {
        let via = match c.via {
            phlo_transform_compiler::lineage::Directness::Direct => "",
            phlo_transform_compiler::lineage::Directness::Indirect => "  (indirect)",
        };
        let _ = writeln!(out, "  {}  {}{via}", c.depth, c.column);
    }
    let mut list = |title: &str, items: &[String]| {
        let _ = writeln!(
            out,
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
