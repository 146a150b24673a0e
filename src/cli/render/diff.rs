//! `diff`: the library renders a model diff's text (docs/diff.md describes it); a branch
//! diff's is its datasets, one block each, with the changed models' diffs inside.

use super::Report;
use phlo_transform_diff::{DiffReport, SchemaDiff};
use phlo_transform_exec::environments::branch_diff::{BranchDiff, DatasetDiff, Status};
use std::fmt::Write;

impl Report for DiffReport {
    fn human(&self) -> String {
        self.render_text()
    }
}

impl Report for BranchDiff {
    fn human(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Branch diff {}@{} → {}@{}{}",
            self.from.reference,
            self.from.hash,
            self.to.reference,
            self.to.hash,
            if self.full { " (--full)" } else { "" }
        );
        let s = &self.summary;
        let _ = writeln!(
            out,
            "  {} added, {} removed, {} changed, {} unchanged, {} absent\n",
            s.added, s.removed, s.changed, s.unchanged, s.absent
        );
        for d in &self.datasets {
            dataset(&mut out, d, &self.from.reference, &self.to.reference);
        }
        let verdict = if self.passed {
            "passed"
        } else {
            "violated (see the diagnostics)"
        };
        let _ = writeln!(
            out,
            "Diff policies: {verdict}; recorded as evidence {}",
            self.evidence_id
        );
        out
    }
}

fn count(n: Option<u64>) -> String {
    n.map(|n| n.to_string()).unwrap_or_else(|| "-".into())
}

fn dataset(out: &mut String, d: &DatasetDiff, from: &str, to: &str) {
    let rows = match d.status {
        Status::Absent => "built in neither".to_string(),
        Status::Unchanged => format!("rows {}", count(d.rows.to)),
        _ => format!(
            "rows {from} {} → {to} {} ({})",
            count(d.rows.from),
            count(d.rows.to),
            d.rows
                .delta
                .map(|n| format!("{n:+}"))
                .unwrap_or_else(|| "-".into())
        ),
    };
    let _ = writeln!(
        out,
        "{:<9} {}  {rows}",
        d.status.as_str().to_uppercase(),
        d.model
    );
    if d.status != Status::Unchanged {
        schema(out, &d.schema);
    }
    if let Some(data) = &d.data {
        for line in data.render_text().lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
}

fn schema(out: &mut String, s: &SchemaDiff) {
    for c in &s.added {
        let _ = writeln!(out, "    + {} {}", c.name, c.data_type);
    }
    for c in &s.removed {
        let _ = writeln!(out, "    - {} {}", c.name, c.data_type);
    }
    for c in &s.retyped {
        let _ = writeln!(out, "    ~ {} {} → {}", c.name, c.base, c.candidate);
    }
    let nullable = |n: bool| if n { "nullable" } else { "not null" };
    for c in &s.nullability {
        let _ = writeln!(
            out,
            "    ~ {} {} → {}",
            c.name,
            nullable(c.base),
            nullable(c.candidate)
        );
    }
}
