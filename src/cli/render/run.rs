//! `run`, `apply` and `test`: one row per model and test, then the counts.

use super::Report;
use phlo_transform_exec::RunReport;
use std::fmt::Write;

impl Report for RunReport {
    fn human(&self) -> String {
        run(self)
    }
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

fn run(r: &RunReport) -> String {
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
