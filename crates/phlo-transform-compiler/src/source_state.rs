//! What identifies the current contents of one source, as the catalog snapshot records it.
//! Apart from `catalog` so that the REST-catalog sources (`rest_sources`) build it without
//! depending on the snapshot that calls them.

use phlo_transform_project::SourceFormat;
use serde::Serialize;
use std::path::PathBuf;

use crate::schemas::SourceSchema;

/// What identifies the current contents of one source.
#[derive(Clone, Debug, Serialize)]
pub struct SourceState {
    pub name: String,
    pub format: SourceFormat,
    /// Compact, comparable identity, e.g. `sha256:ab12…,size:2048`, `delta:v3`,
    /// `iceberg:snapshot:123,schema:0`.
    pub state: String,
    /// The file the engine should read (for Iceberg: the current metadata.json).
    #[serde(skip)]
    pub read_path: PathBuf,
    /// Column names and types, or why they are unknown.
    #[serde(skip)]
    pub schema: SourceSchema,
    /// Why the local engine cannot read the data, when that is known before running (a REST
    /// catalog table whose metadata is not a local file, or a catalog that did not answer).
    #[serde(skip)]
    pub unreadable_data: Option<String>,
}

/// `iceberg:snapshot:<current-snapshot-id>,schema:<current-schema-id>` of table metadata.
pub(crate) fn iceberg_state(metadata: &serde_json::Value) -> String {
    let snapshot = metadata
        .get("current-snapshot-id")
        .and_then(|v| v.as_i64())
        .unwrap_or(-1);
    let schema = metadata
        .get("current-schema-id")
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    format!("iceberg:snapshot:{snapshot},schema:{schema}")
}
