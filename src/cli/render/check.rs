//! `check` and `list`: the compiler's model rows; `init`: the files it wrote.

use super::Report;
use phlo_transform_compiler::report::{CheckReport, CompileCounts};
use phlo_transform_plan::list::ListReport;
use std::fmt::Write;

/// `3 models, 1 sources, 2 tests: 0 error(s), 1 warning(s)`.
pub fn summary_line(c: &CompileCounts) -> String {
    format!(
        "{} models, {} sources, {} tests: {} error(s), {} warning(s)",
        c.models, c.sources, c.tests, c.errors, c.warnings
    )
}

impl Report for CheckReport<'_> {
    fn human(&self) -> String {
        let mut out = String::new();
        if self.counts.errors == 0 && self.build_order.len() <= 20 {
            let _ = writeln!(out, "Build order: {}", self.build_order.join(" → "));
        }
        let _ = writeln!(out, "Checked {}", summary_line(&self.counts));
        out
    }
}

impl Report for ListReport<'_> {
    fn human(&self) -> String {
        let width = self.name_width;
        let mut out = String::new();
        for m in &self.models {
            let _ = writeln!(
                out,
                "{:<width$}  {:<11} {}",
                m.name,
                m.materialization.as_str(),
                m.path
            );
        }
        out
    }
}

impl Report for phlo_transform_exec::clean::CleanReport {
    fn human(&self) -> String {
        if self.removed.is_empty() {
            return "Nothing to remove.\n".into();
        }
        self.removed
            .iter()
            .map(|r| format!("removed {r}\n"))
            .collect()
    }
}

impl Report for phlo_transform_project::dbt_import::ImportReport {
    fn human(&self) -> String {
        let mut out = format!(
            "Imported the dbt project `{}` into {}: {} model(s), {} source(s), {} data test(s)\n",
            self.project,
            self.root,
            self.models.len(),
            self.sources.len(),
            self.tests.len()
        );
        for m in &self.models {
            let _ = writeln!(out, "  {}  {}  {}", m.name, m.materialization, m.path);
        }
        if !self.unconverted.is_empty() {
            let _ = writeln!(out, "Left out ({}):", self.unconverted.len());
            for u in &self.unconverted {
                let _ = writeln!(out, "  {}:{}  {}: {}", u.file, u.line, u.left_out, u.reason);
            }
        }
        let _ = writeln!(out, "Check it: phlo-transform -C {} check", self.root);
        out
    }
}

impl Report for phlo_transform_project::init::InitReport {
    fn human(&self) -> String {
        let mut out = format!("Created a workspace in {}:\n", self.root);
        for f in &self.files {
            let _ = writeln!(out, "  {f}");
        }
        let _ = writeln!(
            out,
            "Build it: phlo-transform -C {} run   (README.md says what is there)",
            self.root
        );
        out
    }
}

impl Report for phlo_transform_exec::docs::DocsReport {
    fn human(&self) -> String {
        format!(
            "wrote {} pages ({} models, {} sources, {} runs of history) to {}\nopen {}\n",
            self.pages, self.models, self.sources, self.runs, self.out, self.index
        )
    }
}
