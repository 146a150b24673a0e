//! What identifies the current contents of one source, as the catalog snapshot records it.
//! Apart from `catalog` so that the REST-catalog sources (`rest_sources`) build it without
//! depending on the snapshot that calls them.

use phlo_transform_project::SourceFormat;
use serde::Serialize;
use std::path::PathBuf;

use crate::schemas::SourceSchema;

/// An instant a dataset is current as of (UTC).
pub type AsOf = chrono::DateTime<chrono::Utc>;

/// What identifies the current contents of one source.
#[derive(Clone, Debug, Serialize)]
pub struct SourceState {
    pub name: String,
    pub format: SourceFormat,
    /// Compact, comparable identity, e.g. `sha256:ab12…,size:2048`, `delta:v3`,
    /// `iceberg:snapshot:123,schema:0`.
    pub state: String,
    /// The newest source state this contents reflects, read with the state: a Delta table's
    /// commit time of the version read, an Iceberg table's current snapshot time, a file's
    /// modification time. `None` when the data does not say (a schema-only source, a table
    /// without a snapshot); the planner then takes the engine's freshness measurement of it,
    /// when the source declares one (`phlo_transform_plan::as_of`).
    #[serde(skip)]
    pub as_of: Option<AsOf>,
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

/// When the current snapshot of Iceberg table metadata was committed (`timestamp-ms` of the
/// snapshot `current-snapshot-id` names); `None` for a table without a snapshot.
pub(crate) fn iceberg_as_of(metadata: &serde_json::Value) -> Option<AsOf> {
    let current = metadata.get("current-snapshot-id")?.as_i64()?;
    let snapshot = metadata
        .get("snapshots")?
        .as_array()?
        .iter()
        .find(|s| s.get("snapshot-id").and_then(|v| v.as_i64()) == Some(current))?;
    chrono::DateTime::from_timestamp_millis(snapshot.get("timestamp-ms")?.as_i64()?)
}

/// A file's modification time; `None` where the platform does not keep one.
pub(crate) fn modified_as_of(meta: &std::fs::Metadata) -> Option<AsOf> {
    meta.modified().ok().map(AsOf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iceberg_table_is_as_of_its_current_snapshot() {
        let metadata = serde_json::json!({
            "current-snapshot-id": 2,
            "snapshots": [
                { "snapshot-id": 1, "timestamp-ms": 1_700_000_000_000_i64 },
                { "snapshot-id": 2, "timestamp-ms": 1_700_000_500_250_i64 },
            ],
        });
        assert_eq!(
            iceberg_as_of(&metadata).map(|t| t.timestamp_millis()),
            Some(1_700_000_500_250)
        );
        assert_eq!(
            iceberg_as_of(&serde_json::json!({ "current-snapshot-id": -1 })),
            None
        );
    }
}
