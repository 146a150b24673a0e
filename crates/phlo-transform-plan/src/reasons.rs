//! Reasons: stable machine-readable kinds (SPEC §40) with a human detail and a subject.

use crate::as_of::Advanced;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonKind {
    SqlSemanticChange,
    /// The canonical SQL changed but the logical plan did not (an addition to SPEC §40's list).
    SqlAstChange,
    ConfigChange,
    DependencyChange,
    UpstreamRebuild,
    SourceChange,
    CompilerSemanticsChange,
    MissingRelation,
    UnknownState,
    Unchanged,
    /// `--force`: built although unchanged.
    Forced,
    /// Outside the selection but read by it: built only when missing.
    SelectedDependency,
    /// The incremental strategy or key the table was built with changed: FULL REBUILD
    /// (SPEC §29), never a silent incremental continuation.
    IncrementalChange,
    /// A source the model reads (or an upstream model's) is stale under
    /// `freshness_policy = "block"` (SPEC §34).
    SourceStale,
    /// The recorded materialisation was written by another adapter, or before adapters were
    /// recorded (SPEC §39): rebuilt by this one.
    AdapterChange,
    /// Another environment's materialisation of the same version is adopted without building:
    /// same version, same adapter, and its recorded output identity still matches (SPEC §39).
    CacheReuse,
    /// Another environment's materialisation could not be adopted (another version or
    /// adapter): built here.
    CacheMiss,
    /// The recorded output identity no longer matches the physical relation: built here.
    OutputDrift,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    pub kind: ReasonKind,
    pub detail: String,
    /// The dependency or source the reason is about.
    pub subject: Option<String>,
    /// A `source_change` whose source advanced past what the model is current as of: both
    /// instants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advanced: Option<Advanced>,
}

impl Reason {
    pub fn new(kind: ReasonKind, detail: impl Into<String>, subject: Option<String>) -> Self {
        Reason {
            kind,
            detail: detail.into(),
            subject,
            advanced: None,
        }
    }
}
