//! `plan`: the SPEC §40 layout, and the schema changes `plan`, `explain` and a failed
//! compilation show.

use super::Report;
use phlo_transform_plan::Plan;
use std::fmt::Write;

impl Report for Plan {
    fn human(&self) -> String {
        plan(self)
    }
}

/// `assay.results+ — 1 selected, 4 expanded, 2 dependencies, 1 excluded`.
fn selection_line(p: &Plan) -> String {
    let sel = &p.selection;
    let spec = &sel.spec;
    let mut terms: Vec<String> = spec.include.clone();
    if terms.is_empty() {
        terms.push(
            if spec.since.is_some() {
                "changed"
            } else {
                "all"
            }
            .into(),
        );
    }
    terms.extend(spec.exclude.iter().map(|t| format!("--exclude {t}")));
    terms.extend(spec.tags.iter().map(|t| format!("--tag {t}")));
    terms.extend(spec.workflows.iter().map(|w| format!("--workflow {w}")));
    for (on, flag) in [
        (spec.upstream, "--upstream"),
        (spec.downstream, "--downstream"),
        (spec.force, "--force"),
    ] {
        if on {
            terms.push(flag.into());
        }
    }
    if let Some(r) = &spec.since {
        terms.push(format!("--since {r}"));
    }
    // Ephemeral models are selected too, but listed apart from the planned ones.
    let ephemeral = sel
        .matched
        .iter()
        .filter(|n| p.ephemeral.contains(n))
        .count();
    let mut counts = vec![if ephemeral > 0 {
        format!("{} selected ({ephemeral} ephemeral)", sel.matched.len())
    } else {
        format!("{} selected", sel.matched.len())
    }];
    for (n, what) in [
        (sel.expanded.len(), "expanded"),
        (sel.required.len(), "dependencies"),
        (sel.excluded.len(), "excluded"),
    ] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    format!("{} — {}", terms.join(" "), counts.join(", "))
}

/// The SPEC §40 layout.
fn plan(p: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Plan:        {}", p.plan_id);
    let _ = writeln!(out, "Adapter:     {}", p.adapter);
    let _ = writeln!(out, "Environment: {}", p.environment);
    let _ = writeln!(out, "Selection:   {}\n", selection_line(p));
    for w in &p.warnings {
        let _ = writeln!(out, "warning[{}]: {}\n", w.code, w.message);
    }
    if !p.sources.is_empty() {
        let _ = writeln!(out, "Sources ({}) — freshness", p.sources.len());
        for f in &p.sources {
            let age = match f.age_seconds {
                Some(a) => phlo_transform_project::freshness::format_age(a),
                None => "unknown".into(),
            };
            let _ = writeln!(
                out,
                "  {}\n    age: {age}\n    required: <{}\n    status: {}{}{}",
                f.source,
                f.required,
                f.status.label(),
                if f.blocks() {
                    " (policy block: readers are blocked)"
                } else {
                    ""
                },
                f.reason
                    .as_deref()
                    .map(|r| format!("\n    reason: {r}"))
                    .unwrap_or_default(),
            );
        }
        out.push('\n');
    }
    let s = &p.summary;
    let _ = writeln!(
        out,
        "Models ({}) — {} build, {} skip, {} cached{}",
        p.models.len(),
        s.build,
        s.skip,
        s.cached,
        if s.blocked > 0 {
            format!(", {} blocked", s.blocked)
        } else {
            String::new()
        }
    );
    let width = p.models.iter().map(|m| m.name.len()).max().unwrap_or(0);
    for m in &p.models {
        let _ = writeln!(
            out,
            "  {:<6} {:<width$}  [{}] {}",
            m.decision.label(),
            m.name,
            m.materialization,
            m.relation
        );
        // Git provenance (SPEC §82): why `changed` matched, apart from the rebuild reasons.
        let git = p.selection.git.iter().flat_map(|g| &g.models);
        for c in git.filter(|c| c.name == m.name).flat_map(|c| &c.causes) {
            let _ = writeln!(out, "           selected because {c}");
        }
        for r in &m.reasons {
            let _ = writeln!(out, "           {}", r.detail);
        }
    }
    if !p.ephemeral.is_empty() {
        let _ = writeln!(
            out,
            "\nEphemeral ({}) — inlined into their dependents",
            p.ephemeral.len()
        );
        for e in &p.ephemeral {
            let _ = writeln!(out, "  {e}");
        }
    }
    let _ = writeln!(out, "\nTests ({})", p.tests.len());
    for t in &p.tests {
        let _ = writeln!(out, "  {}", t.name);
    }
    out.push_str(&schema_changes(&p.schema_changes));
    out
}

/// The SPEC §49/§51 layout: each model's column changes with their class, then the
/// downstream models a removal or change reaches.
pub fn schema_changes(changes: &[phlo_transform_plan::schema_change::SchemaChange]) -> String {
    use phlo_transform_plan::schema_change::{describe_references, ChangeKind};
    let mut out = String::new();
    for s in changes {
        let _ = writeln!(
            out,
            "\nSchema changes: {}  [{}]",
            s.model,
            s.severity.label()
        );
        for ch in &s.changes {
            let what = match ch.kind {
                ChangeKind::Added => {
                    format!("{} {}", ch.column, ch.to_type.as_deref().unwrap_or(""))
                }
                ChangeKind::Removed => {
                    format!("{} {}", ch.column, ch.from_type.as_deref().unwrap_or(""))
                }
                ChangeKind::TypeChanged => format!(
                    "{} {} -> {}",
                    ch.column,
                    ch.from_type.as_deref().unwrap_or("?"),
                    ch.to_type.as_deref().unwrap_or("?")
                ),
                ChangeKind::NullabilityChanged => format!("{} nullability", ch.column),
                ChangeKind::Renamed => format!(
                    "{} (renamed from {})",
                    ch.column,
                    ch.previous_name.as_deref().unwrap_or("?")
                ),
            };
            let _ = writeln!(
                out,
                "  {} {what:<40} {:<8} {}",
                ch.kind.sign(),
                ch.severity.label(),
                ch.rule
            );
        }
        if !s.downstream.is_empty() {
            let _ = writeln!(out, "  Affected downstream models:");
            for a in &s.downstream {
                let _ = writeln!(
                    out,
                    "    {}  {}",
                    a.model,
                    describe_references(&a.references)
                );
            }
        }
    }
    out
}

impl Report for phlo_transform_plan::BlockedPlan<'_> {
    /// Only the schema changes: the diagnostics said the rest.
    fn human(&self) -> String {
        schema_changes(&self.schema_changes)
    }
}
