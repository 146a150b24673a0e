//! `gates`: the tests with their newest results, the contracts and the source freshness
//! requirements.

use super::Report;
use phlo_transform_compiler::TestKind;
use phlo_transform_exec::gates::GatesReport;
use std::fmt::Write;

impl Report for GatesReport<'_> {
    fn human(&self) -> String {
        let mut out = String::new();
        let scope = self
            .model
            .map_or_else(|| "the workspace".to_string(), |model| format!("`{model}`"));
        let _ = writeln!(out, "Quality gates of {scope}:");
        let _ = writeln!(out, "\nTests ({})", self.tests.len());
        for t in &self.tests {
            let kind = match t.kind {
                TestKind::NotNull { column } => format!("not null {column}"),
                TestKind::Unique { columns } => format!("unique {}", columns.join(", ")),
                TestKind::Custom { path } => format!("custom {path}"),
            };
            let last = t
                .last
                .as_ref()
                .map_or("never run".to_string(), |n| n.status.clone());
            let _ = writeln!(
                out,
                "  {:<10} {}  ({kind}; on {})",
                last,
                t.name,
                t.models.join(", ")
            );
        }
        let _ = writeln!(out, "\nContracts ({})", self.contracts.len());
        for k in &self.contracts {
            let enforced = if k.contract.enforced {
                "enforced"
            } else {
                "not enforced"
            };
            let _ = writeln!(
                out,
                "  {}  {} columns, {enforced}",
                k.model,
                k.contract.columns.len()
            );
        }
        let _ = writeln!(out, "\nSource freshness ({})", self.freshness.len());
        for f in &self.freshness {
            let _ = writeln!(
                out,
                "  {}  younger than {} ({:?})",
                f.source, f.requirement.max_age, f.requirement.policy
            );
        }
        out
    }
}
