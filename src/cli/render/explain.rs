//! `explain <model>`: identity, recorded state, decision and reasons.

use super::{schema_changes, Report};
use phlo_transform_compiler::Dependency;
use phlo_transform_exec::explain::Explanation;
use std::fmt::Write;

impl Report for Explanation {
    fn human(&self) -> String {
        let mut out = String::new();
        text(&mut out, self).expect("writing to a String cannot fail");
        out
    }
}

fn text(out: &mut String, e: &Explanation) -> std::fmt::Result {
    writeln!(out, "Model:         {}", e.name)?;
    writeln!(out, "ID:            {}", e.uri)?;
    writeln!(out, "Path:          {}", e.path)?;
    writeln!(out, "Materialised:  {}", e.materialization)?;
    if !e.depends_on.is_empty() {
        writeln!(out, "Depends on:")?;
        for d in &e.depends_on {
            let (kind, name) = match d {
                Dependency::Model(n) => ("model", n),
                Dependency::Source(n) => ("source", n),
            };
            writeln!(out, "  {name} ({kind})")?;
        }
    }
    writeln!(
        out,
        "Version:       {}",
        e.version.as_deref().unwrap_or("-")
    )?;
    match &e.recorded {
        Some(r) => writeln!(
            out,
            "Recorded:      {} in {} (materialised {})",
            r.version, r.environment, r.materialized_at
        )?,
        None => writeln!(out, "Recorded:      nothing in {}", e.environment)?,
    }
    match &e.planned {
        None => writeln!(
            out,
            "Decision:      none (ephemeral: inlined into the models that read it)"
        )?,
        Some(p) => {
            writeln!(out, "Decision:      {}", p.decision.label().to_lowercase())?;
            if let Some(change) = p.sql_change {
                let change = serde_json::to_value(change).expect("serialises");
                writeln!(out, "SQL change:    {}", change.as_str().unwrap_or("?"))?;
            }
            writeln!(out, "Reasons:")?;
            for r in &p.reasons {
                writeln!(out, "  {}", r.detail)?;
            }
        }
    }
    if let Some(s) = &e.schema_change {
        write!(out, "{}", schema_changes(std::slice::from_ref(s)))?;
    }
    Ok(())
}
