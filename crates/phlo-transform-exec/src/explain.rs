//! The `explain <model>` report (SPEC §80): identity, dependencies, recorded state and the
//! build decision with the same structured reasons `plan` gives.

use phlo_transform_compiler::Dependency;
use phlo_transform_plan::schema_change::SchemaChange;
use phlo_transform_plan::PlannedModel;
use phlo_transform_project::Materialization;
use phlo_transform_state::MaterializedVersion;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Explanation {
    /// `name`, as in every other model report (`inspect`, `list`, `plan`).
    pub name: String,
    pub uri: String,
    pub id: String,
    pub path: String,
    pub materialization: Materialization,
    pub depends_on: Vec<Dependency>,
    pub version: Option<String>,
    pub recorded: Option<MaterializedVersion>,
    pub environment: String,
    /// `None` for an ephemeral model: it is inlined, never planned.
    pub planned: Option<PlannedModel>,
    pub schema_change: Option<SchemaChange>,
}
