//! Human renderings of the reports. JSON output serialises the same structs.

use phlo_transform_compiler::Compilation;
use phlo_transform_core::{Diagnostic, Diagnostics};
use phlo_transform_exec::RunReport;
use phlo_transform_plan::Plan;
use phlo_transform_project::Workspace;
use std::fmt::Write;

/// Prints `d` (text or JSON) and returns the exit code of a command it stopped.
pub fn fatal(d: Diagnostic, json: bool) -> u8 {
    fatal_all(vec![d], json)
}

/// Prints `diags` (text or JSON) and returns the exit code of a command they stopped.
pub fn fatal_all(diags: Vec<Diagnostic>, json: bool) -> u8 {
    diagnostics(&Diagnostics(diags), None, json);
    super::EXIT_ERRORS
}

/// Diagnostics to stderr, rustc-like (with JSON output they go in the JSON document instead).
pub fn diagnostics(diags: &Diagnostics, ws: Option<&Workspace>, json: bool) {
    if json && ws.is_none() {
        println!("{}", serde_json::json!({ "diagnostics": diags }));
        return;
    }
    if json {
        return;
    }
    for d in diags.iter() {
        let source = match (ws, &d.file) {
            (Some(ws), Some(f)) => ws.file_text(f),
            _ => None,
        };
        eprintln!("{}\n", d.render(source.as_deref()));
    }
}

pub fn summary_line(c: &Compilation) -> String {
    format!(
        "{} models, {} sources, {} tests: {} error(s), {} warning(s)",
        c.models.len(),
        c.workspace.sources.len(),
        c.tests.len(),
        c.diagnostics.error_count(),
        c.diagnostics.warning_count()
    )
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
pub fn plan(p: &Plan) -> String {
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

/// ` (in transforms/x.sql)` for a failure of a model's own query.
fn at(e: &phlo_transform_exec::ErrorInfo) -> String {
    e.file
        .as_ref()
        .map(|f| format!(" (in {f})"))
        .unwrap_or_default()
}

/// `  STATUS   name  detail` of a run report, without trailing spaces when there is no detail.
fn row(out: &mut String, status: &str, name: &str, width: usize, detail: &str) {
    let line = format!("  {:<8} {name:<width$}  {detail}", status.to_uppercase());
    let _ = writeln!(out, "{}", line.trim_end());
}

pub fn run(r: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Run:  {}  (plan {})", r.run_id, r.plan_id);
    let width = r
        .models
        .iter()
        .map(|m| m.name.len())
        .chain(r.tests.iter().map(|t| t.name.len()))
        .max()
        .unwrap_or(0);
    for m in &r.models {
        let detail = match (&m.error, m.rows, m.duration_ms) {
            (Some(e), _, _) if e.attempt > 1 => {
                format!("{}: {} (attempt {}){}", e.code, e.message, e.attempt, at(e))
            }
            (Some(e), _, _) => format!("{}: {}{}", e.code, e.message, at(e)),
            (None, Some(rows), Some(ms)) => format!(
                "{rows} rows in {ms} ms{}",
                if m.reused_commit {
                    " (already committed)"
                } else {
                    ""
                }
            ),
            (None, None, Some(ms)) => format!("view in {ms} ms"),
            _ => m.outdated.clone().unwrap_or_default(),
        };
        row(&mut out, &m.status, &m.name, width, &detail);
        if let Some(help) = m.error.as_ref().and_then(|e| e.help.as_ref()) {
            let _ = writeln!(out, "  {:<8} {:<width$}  help: {help}", "", "");
        }
    }
    if !r.tests.is_empty() {
        let _ = writeln!(out, "Tests");
        for t in &r.tests {
            let detail = t
                .error
                .as_ref()
                .map(|e| format!("{}: {}", e.code, e.message))
                .or_else(|| t.reason.clone())
                .unwrap_or_default();
            row(&mut out, &t.status, &t.name, width, &detail);
        }
    }
    let c = &r.counts;
    let tests_failed = r.tests.iter().filter(|t| !t.ok()).count();
    let tests_cached = r.tests.iter().filter(|t| t.status == "cached").count();
    let mut models = format!(
        "{} passed, {} failed, {} skipped, {} blocked",
        c.passed, c.failed, c.skipped, c.blocked
    );
    for (n, what) in [(c.cached, "cached"), (c.cancelled, "cancelled")] {
        if n > 0 {
            let _ = write!(models, ", {n} {what}");
        }
    }
    let _ = writeln!(
        out,
        "\n{}: {models}; tests {} passed, {} failed{}",
        r.status.to_uppercase(),
        r.tests.len() - tests_failed - tests_cached,
        tests_failed,
        if tests_cached > 0 {
            format!(", {tests_cached} cached")
        } else {
            String::new()
        }
    );
    out
}
