//! What `plan` reports when compile errors stop it: no plan can be made, but the schema
//! changes against the recorded state say which change broke which reader (SPEC §51).

use crate::schema_change::SchemaChange;
use phlo_transform_compiler::report::ModelRow;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct BlockedPlan<'a> {
    pub models: Vec<ModelRow<'a>>,
    pub schema_changes: Vec<SchemaChange>,
}
