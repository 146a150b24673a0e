//! `state runs | show | model | failures`: the state database's reports.

use super::Report;
use phlo_transform_exec::history::{
    EvidenceReport, FailuresReport, ModelReport, RunDetail, RunsReport,
};
use phlo_transform_state::NodeRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

impl Report for RunsReport {
    fn human(&self) -> String {
        render_runs(self)
    }
}

impl Report for RunDetail {
    fn human(&self) -> String {
        render_run(self)
    }
}

impl Report for ModelReport {
    fn human(&self) -> String {
        render_model(self)
    }
}

impl Report for EvidenceReport {
    fn human(&self) -> String {
        let mut out = String::new();
        if self.evidence.is_empty() {
            let _ = writeln!(out, "No evidence recorded about `{}`.", self.reference);
            return out;
        }
        let _ = writeln!(out, "Evidence about `{}`, newest first:", self.reference);
        for e in &self.evidence {
            let _ = writeln!(
                out,
                "  {:<13} {}  at hash {}  ({})",
                e.kind, e.evidence_id, e.hash, e.at
            );
        }
        out
    }
}

impl Report for FailuresReport {
    fn human(&self) -> String {
        render_failures(self)
    }
}

fn counts(c: &BTreeMap<String, i64>) -> String {
    if c.is_empty() {
        return "-".into();
    }
    c.iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn duration(ms: Option<i64>) -> String {
    match ms {
        None => String::new(),
        Some(ms) if ms < 1000 => format!("{ms}ms"),
        Some(ms) => format!("{:.1}s", ms as f64 / 1000.0),
    }
}

fn short(version: &str) -> &str {
    &version[..12.min(version.len())]
}

fn render_runs(r: &RunsReport) -> String {
    let mut out = String::new();
    if r.runs.is_empty() {
        let _ = writeln!(out, "No runs recorded in {}.", r.state);
        return out;
    }
    let id_width = r.runs.iter().map(|s| s.run.run_id.len()).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "{:<id_width$}  {:<9}  {:<7}  {:<24}  {:<24}  MODELS / TESTS",
        "RUN", "STATUS", "COMMAND", "STARTED", "FINISHED"
    );
    for s in &r.runs {
        let _ = writeln!(
            out,
            "{:<id_width$}  {:<9}  {:<7}  {:<24}  {:<24}  {} / {}",
            s.run.run_id,
            s.run.status,
            s.run.command,
            s.run.started_at,
            s.run.finished_at.as_deref().unwrap_or("-"),
            counts(&s.models),
            counts(&s.tests)
        );
    }
    out
}

/// One line per node, its details in aligned columns (duration, rows, version, start): a
/// node without a row count (a view, a test) shows `-` rather than shifting the rest.
fn node_lines(out: &mut String, title: &str, nodes: &[NodeRecord]) {
    let _ = writeln!(out, "\n{title} ({})", nodes.len());
    let width = nodes.iter().map(|n| n.node.len()).max().unwrap_or(0);
    let details: Vec<[String; 4]> = nodes
        .iter()
        .map(|n| {
            [
                n.duration_ms.map(|d| duration(Some(d))),
                n.rows.map(|rows| format!("{rows} rows")),
                n.version.as_ref().map(|v| format!("version {}", short(v))),
                n.started_at.as_ref().map(|s| format!("started {s}")),
            ]
            .map(|d| d.unwrap_or_else(|| "-".into()))
        })
        .collect();
    let widths: Vec<usize> = (0..4)
        .map(|k| {
            details
                .iter()
                .map(|d| d[k].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (n, detail) in nodes.iter().zip(&details) {
        let columns: Vec<String> = detail
            .iter()
            .zip(&widths)
            .map(|(d, &w)| format!("{d:<w$}"))
            .collect();
        let line = format!(
            "  {:<8} {:<width$}  {}",
            n.status,
            n.node,
            columns.join("  ")
        );
        let _ = writeln!(out, "{}", line.trim_end());
        if let (Some(code), Some(message)) = (&n.error_code, &n.error_message) {
            let _ = writeln!(out, "           error[{code}]: {message}");
        }
    }
}

fn render_run(r: &RunDetail) -> String {
    let mut out = String::new();
    let run = &r.run;
    let _ = writeln!(out, "Run:         {}", run.run_id);
    let _ = writeln!(out, "Status:      {}", run.status);
    let _ = writeln!(out, "Command:     {}", run.command);
    let _ = writeln!(out, "Plan:        {}", run.plan_id);
    let _ = writeln!(out, "Environment: {}", run.environment);
    let _ = writeln!(out, "Started:     {}", run.started_at);
    let _ = writeln!(
        out,
        "Finished:    {}",
        run.finished_at.as_deref().unwrap_or("- (not finished)")
    );
    node_lines(&mut out, "Models", &r.models);
    node_lines(&mut out, "Tests", &r.tests);
    out
}

fn render_model(r: &ModelReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Model: {}", r.model);
    let _ = writeln!(out, "\nMaterialised ({})", r.materializations.len());
    if r.materializations.is_empty() {
        let _ = writeln!(out, "  (nothing: no run has materialised it)");
    }
    for m in &r.materializations {
        let _ = writeln!(
            out,
            "  {:<10} version {}  [{}] {}  run {} at {}  current as of {}",
            m.environment,
            short(&m.version),
            m.materialization,
            m.relation,
            m.run_id,
            m.materialized_at,
            super::as_of(m.current_as_of)
        );
    }
    let _ = writeln!(out, "\nHistory ({}), newest first", r.history.len());
    for h in &r.history {
        let mut detail = vec![duration(h.node.duration_ms)];
        if let Some(rows) = h.node.rows {
            detail.push(format!("{rows} rows"));
        }
        if let Some(v) = &h.node.version {
            detail.push(format!("version {}", short(v)));
        }
        detail.retain(|d| !d.is_empty());
        let _ = writeln!(
            out,
            "  {}  {}  {:<5} {:<8} {}",
            h.run_started_at,
            h.run_id,
            h.command,
            h.node.status,
            detail.join("  ")
        );
        if let (Some(code), Some(message)) = (&h.node.error_code, &h.node.error_message) {
            let _ = writeln!(out, "      error[{code}]: {message}");
        }
    }
    out
}

fn render_failures(r: &FailuresReport) -> String {
    let mut out = String::new();
    if r.failures.is_empty() {
        let _ = writeln!(out, "Nothing failed in the last {} run(s).", r.runs);
        return out;
    }
    let _ = writeln!(
        out,
        "{} failed node(s) in the last {} run(s), newest first:",
        r.failures.len(),
        r.runs
    );
    for f in &r.failures {
        let n = &f.node;
        let _ = writeln!(
            out,
            "  {:<6} {:<8} {}  run {} ({}, {})",
            n.kind, n.status, n.node, f.run_id, f.environment, f.run_started_at
        );
        if let Some(message) = &n.error_message {
            let code = n.error_code.as_deref().unwrap_or("-");
            let _ = writeln!(out, "         error[{code}]: {message}");
        }
    }
    out
}
