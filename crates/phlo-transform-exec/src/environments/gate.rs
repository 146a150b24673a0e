//! One promotion gate's verdict (SPEC §47): a leaf, so every module that evaluates a gate can
//! build one without importing the promotion itself.

use serde::Serialize;

/// One gate's verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Gate {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

impl Gate {
    pub(super) fn new(name: &'static str, passed: bool, detail: impl Into<String>) -> Self {
        Gate {
            name,
            passed,
            detail: detail.into(),
        }
    }
}
