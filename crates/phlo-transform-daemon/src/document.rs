//! The documents the daemon answers with: a report in the `--json` envelope, as the command
//! line prints it. A leaf: reads and operations both import it.

use phlo_transform_core::{Diagnostic, Envelope};
use serde::Serialize;
use serde_json::Value;

/// `report`'s fields, then `diagnostics`.
pub fn envelope(report: &impl Serialize, diagnostics: &[Diagnostic]) -> Value {
    serde_json::to_value(Envelope {
        report,
        diagnostics,
    })
    .expect("reports serialise")
}

/// A report without fields: what stopped is all in the diagnostics.
#[derive(Serialize)]
pub struct Nothing {}
