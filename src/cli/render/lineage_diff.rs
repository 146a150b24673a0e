//! `lineage --diff`: the library's `LineageDiffReport` as text.

use super::Report;
use phlo_transform_compiler::lineage::{ConsumerStatus, EdgeEntry, LineageDiff};
use phlo_transform_exec::lineage_diff::LineageDiffReport;
use std::fmt::Write;

impl Report for LineageDiffReport {
    fn human(&self) -> String {
        let mut out = String::new();
        let b = &self.base;
        let _ = writeln!(
            out,
            "Lineage since {} (merge-base {}; HEAD {}{})",
            b.requested_ref,
            short(&b.commit),
            short(&b.head),
            if b.worktree_dirty {
                ", work tree with changes"
            } else {
                ""
            }
        );
        if self.base_errors > 0 {
            let _ = writeln!(
                out,
                "The base has {} compile error(s): its models with errors are compared without columns.",
                self.base_errors
            );
        }
        if let Some(e) = &self.evidence {
            let _ = writeln!(
                out,
                "Recorded as evidence {} for `{}`@{} (promote's lineage_diff gate reads it).",
                e.evidence_id, e.reference, e.hash
            );
        }
        if self.diff.is_empty() {
            let _ = writeln!(out, "\nNo lineage changes.");
            return out;
        }
        print_diff(&mut out, &self.diff);
        out
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// A node id of the lineage document as a name: `dataset://a.b#c` → `a.b.c`,
/// `model://a/b` → `a.b`, `test://t` → `test t`.
fn name(id: &str) -> String {
    if let Some(rest) = id.strip_prefix("dataset://") {
        return rest.replace('#', ".");
    }
    if let Some(rest) = id.strip_prefix("model://") {
        return rest.replace('/', ".");
    }
    match id.strip_prefix("test://") {
        Some(t) => format!("test {t}"),
        None => id.to_string(),
    }
}

fn section(out: &mut String, title: &str, lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}:");
    for l in lines {
        let _ = writeln!(out, "  {l}");
    }
}

fn path(p: &Option<String>) -> String {
    p.as_deref().map(|p| format!("  ({p})")).unwrap_or_default()
}

fn edge(sign: char, e: &EdgeEntry) -> String {
    let json = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let mut how = vec![json(serde_json::json!(e.kind))];
    if let Some(d) = e.directness {
        how.push(json(serde_json::json!(d)));
    }
    if let Some(t) = e.transformation {
        how.push(json(serde_json::json!(t)));
    }
    let expression = e
        .expression
        .as_deref()
        .map(|x| format!("  `{x}`"))
        .unwrap_or_default();
    format!(
        "{sign} {} → {}  [{}]{expression}",
        name(&e.from),
        name(&e.to),
        how.join(", ")
    )
}

fn print_diff(out: &mut String, d: &LineageDiff) {
    let m = &d.models;
    let mut models: Vec<String> = Vec::new();
    models.extend(
        m.added
            .iter()
            .map(|e| format!("+ {}{}", e.name, path(&e.path))),
    );
    models.extend(
        m.removed
            .iter()
            .map(|e| format!("- {}{}", e.name, path(&e.path))),
    );
    models.extend(m.renamed.iter().map(|r| {
        let paths = match (&r.from_path, &r.to_path) {
            (Some(a), Some(b)) => format!("  ({a} → {b})"),
            _ => String::new(),
        };
        format!("~ {} → {} (renamed){paths}", r.from, r.to)
    }));
    models.extend(m.changed.iter().map(|c| {
        let v = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
        format!("~ {} {}: {} → {}", c.model, c.field, v(&c.from), v(&c.to))
    }));
    section(out, "Models", models);

    let mut sources: Vec<String> = Vec::new();
    sources.extend(d.sources.added.iter().map(|s| format!("+ {s}")));
    sources.extend(d.sources.removed.iter().map(|s| format!("- {s}")));
    section(out, "Sources", sources);

    let c = &d.columns;
    let ty = |t: &Option<String>| t.as_deref().map(|t| format!("  {t}")).unwrap_or_default();
    let mut columns: Vec<String> = Vec::new();
    columns.extend(
        c.added
            .iter()
            .map(|e| format!("+ {}.{}{}", e.dataset, e.column, ty(&e.data_type))),
    );
    columns.extend(
        c.removed
            .iter()
            .map(|e| format!("- {}.{}{}", e.dataset, e.column, ty(&e.data_type))),
    );
    columns.extend(
        c.renamed
            .iter()
            .map(|r| format!("~ {}.{} → {} (renamed)", r.dataset, r.from, r.to)),
    );
    columns.extend(
        c.retyped
            .iter()
            .map(|r| format!("~ {}.{}  {} → {}", r.dataset, r.column, r.from, r.to)),
    );
    section(out, "Columns", columns);

    let mut edges: Vec<String> = d.edges.added.iter().map(|e| edge('+', e)).collect();
    edges.extend(d.edges.removed.iter().map(|e| edge('-', e)));
    section(out, "Lineage edges", edges);

    let mut orphaned: Vec<String> = Vec::new();
    for o in &d.orphaned {
        let verb = if o.change == "renamed" {
            "was renamed; still named by"
        } else {
            "was read by"
        };
        orphaned.push(format!("{} {verb}:", name(&o.removed)));
        for c in &o.consumers {
            let status = match c.status {
                ConsumerStatus::LineageUnknown => "lineage unknown now",
                ConsumerStatus::ReadsElsewhere => "reads elsewhere now",
            };
            let kind = serde_json::json!(c.kind);
            orphaned.push(format!(
                "  {} ({}, {status})",
                name(&c.id),
                kind.as_str().unwrap_or_default()
            ));
        }
    }
    section(out, "Consumers of what was removed or renamed", orphaned);

    let unknown = d
        .unknown
        .iter()
        .map(|u| {
            let side = |s: &str, r: &Option<String>| r.as_ref().map(|r| format!("{s}: {r}"));
            let why: Vec<String> = [side("base", &u.base), side("now", &u.candidate)]
                .into_iter()
                .flatten()
                .collect();
            format!("{} ({})", u.model, why.join("; "))
        })
        .collect();
    section(out, "Lineage unknown (columns not compared)", unknown);
}
