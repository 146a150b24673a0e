//! Human renderings of the reports. JSON output serialises the same structs.

use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostics;
use phlo_transform_exec::RunReport;
use phlo_transform_plan::Plan;
use phlo_transform_project::Workspace;
use std::fmt::Write;

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

/// The SPEC §40 layout.
pub fn plan(p: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Plan:        {}", p.plan_id);
    let _ = writeln!(out, "Adapter:     {}", p.adapter);
    let _ = writeln!(out, "Environment: {}", p.environment);
    let _ = writeln!(out, "Selection:   all\n");
    let s = &p.summary;
    let _ = writeln!(
        out,
        "Models ({}) — {} build, {} skip, {} cached",
        p.models.len(),
        s.build,
        s.skip,
        s.cached
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
    out
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
            (Some(e), _, _) => format!("{}: {}", e.code, e.message),
            (None, Some(rows), Some(ms)) => format!(
                "{rows} rows in {ms} ms{}",
                if m.reused_commit {
                    " (already committed)"
                } else {
                    ""
                }
            ),
            (None, None, Some(ms)) => format!("view in {ms} ms"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:<8} {:<width$}  {detail}",
            m.status.to_uppercase(),
            m.name
        );
    }
    if !r.tests.is_empty() {
        let _ = writeln!(out, "Tests");
        for t in &r.tests {
            let detail = t
                .error
                .as_ref()
                .map(|e| format!("{}: {}", e.code, e.message))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {:<8} {:<width$}  {detail}",
                t.status.to_uppercase(),
                t.name
            );
        }
    }
    let c = &r.counts;
    let tests_failed = r.tests.iter().filter(|t| t.status != "passed").count();
    let _ = writeln!(
        out,
        "\n{}: {} passed, {} failed, {} skipped, {} blocked; tests {} passed, {} failed",
        r.status.to_uppercase(),
        c.passed,
        c.failed,
        c.skipped,
        c.blocked,
        r.tests.len() - tests_failed,
        tests_failed
    );
    out
}
