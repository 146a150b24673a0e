//! `ref`, `promote` and `rollback`: the environments' reports.

use super::Report;
use phlo_transform_exec::environments::promote::Promotion;
use phlo_transform_exec::environments::report::{
    InEnvironment, PointerRow, RefCreated, RefDeleted, RefDetail, RefList,
};
use phlo_transform_exec::environments::rollback::Rollback;
use std::fmt::Write;

impl Report for RefList {
    fn human(&self) -> String {
        let mut out = String::new();
        for r in &self.refs {
            let from = r
                .created_from
                .as_ref()
                .map(|f| format!("  from {}@{}", f.reference, f.hash))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{:<24} {}  {} model(s){from}",
                r.name, r.hash, r.models
            );
        }
        out
    }
}

impl Report for RefDetail {
    fn human(&self) -> String {
        let mut out = String::new();
        let s = &self.summary;
        let _ = writeln!(out, "Reference:   {}", s.name);
        let _ = writeln!(out, "Hash:        {}", s.hash);
        let _ = writeln!(out, "Environment: {}", s.environment);
        if let (Some(branch), Some(catalog)) = (&self.branch, &self.catalog) {
            let _ = writeln!(
                out,
                "Branch:      {branch} (Nessie), read through catalog {catalog}"
            );
        }
        if let Some(f) = &s.created_from {
            let _ = writeln!(out, "Created from: {}@{}", f.reference, f.hash);
        }
        if let Some(run) = &self.run {
            let _ = writeln!(out, "Last run:    {} (at hash {})", run.run_id, run.hash);
        }
        let _ = writeln!(out, "Models:");
        for p in &self.pointers {
            pointer_line(&mut out, p);
        }
        for e in &self.events {
            let _ = writeln!(out, "{} {} at {}", e.kind, e.event_id, e.at);
        }
        out
    }
}

impl Report for RefCreated {
    fn human(&self) -> String {
        let s = &self.detail.summary;
        format!(
            "Created `{}` from `{}` at {} ({} model(s) shared)\n",
            s.name, self.from, s.hash, s.models
        )
    }
}

impl Report for RefDeleted {
    fn human(&self) -> String {
        format!("Deleted `{}` (was at {})\n", self.deleted, self.hash)
    }
}

impl Report for Promotion {
    fn human(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Promote {}@{} → {}@{}",
            self.from, self.from_hash, self.to, self.to_hash
        );
        for g in &self.gates {
            let mark = if g.passed { "PASS" } else { "FAIL" };
            let _ = writeln!(out, "  {mark}  {:<10} {}", g.name, g.detail);
        }
        let _ = match (&self.promotion_id, self.check) {
            (Some(id), _) => writeln!(
                out,
                "Published: `{}` now holds `{}`'s tables (promotion {id})",
                self.to, self.from
            ),
            (None, true) => writeln!(out, "Checked only (--check): nothing published"),
            (None, false) => writeln!(out, "Nothing published"),
        };
        out
    }
}

impl Report for Rollback {
    fn human(&self) -> String {
        let what = self
            .model
            .as_deref()
            .map(|m| format!("`{m}` in "))
            .unwrap_or_default();
        format!(
            "Rolled back {what}`{}` to {}: {} → {} (rollback {})\n",
            self.reference, self.to, self.hash_before, self.hash_after, self.rollback_id
        )
    }
}

impl<R: Report> Report for InEnvironment<R> {
    fn human(&self) -> String {
        let mut out = self.report.human();
        let e = &self.environment;
        let _ = writeln!(out, "\nIn `{}`@{}, read from:", e.reference, e.hash);
        if e.reads.is_empty() {
            let _ = writeln!(out, "  (nothing: it points at none of these models)");
        }
        for p in &e.reads {
            pointer_line(&mut out, p);
        }
        out
    }
}

/// One pointer of an environment: the model, where it is read (and at which Delta version),
/// and the environment that built it.
fn pointer_line(out: &mut String, p: &PointerRow) {
    let version = p
        .delta_version
        .map(|v| format!(" @ v{v}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  {:<32} {}{version}  (built in {})",
        p.model, p.location, p.built_in
    );
}
