//! The JSON document every report is delivered in, by every front end (the command line's
//! `--json`, the daemon's reads): the report's own fields, then `diagnostics`. One type, so a
//! script that reads `check --json` reads `GET /v1/check` unchanged.

use crate::Diagnostic;
use serde::Serialize;

/// A report's fields flattened, with every diagnostic the command met (warnings included).
#[derive(Serialize)]
pub struct Envelope<'a, R> {
    #[serde(flatten)]
    pub report: &'a R,
    pub diagnostics: &'a [Diagnostic],
}
