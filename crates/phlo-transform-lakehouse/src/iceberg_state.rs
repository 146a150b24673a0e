//! An Iceberg table's state read natively from its metadata file (SPEC §69): current snapshot,
//! schema and partition spec ids, properties and the snapshot history — what planning compares
//! and what a write records as its output identity.
//!
//! Locations are URIs as the catalog stores them. `file:` URIs and plain paths are read as they
//! are; Trino's `local:///x` (its native local file system) is `x` under the catalog's
//! `local.location`, which the caller passes as `local_root`.

use iceberg::spec::{Operation, TableMetadata};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use url::Url;

/// One snapshot of the table's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub timestamp_ms: i64,
    /// `append`, `overwrite`, `replace` or `delete`.
    pub operation: String,
    pub schema_id: Option<i32>,
    /// The snapshot summary (`added-records`, `trino_query_id`, …).
    pub summary: BTreeMap<String, String>,
}

/// A partition field of the default spec: `day(ts)` is `{name: "ts_day", transform: "day",
/// source: "ts"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionFieldInfo {
    pub name: String,
    pub transform: String,
    pub source: String,
}

/// What the metadata file says about the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IcebergTableState {
    pub metadata_location: String,
    pub table_uuid: String,
    pub format_version: u8,
    pub current_snapshot_id: Option<i64>,
    pub current_schema_id: i32,
    pub default_spec_id: i32,
    pub partition_fields: Vec<PartitionFieldInfo>,
    pub properties: BTreeMap<String, String>,
    pub last_updated_ms: i64,
    /// Every snapshot still in the metadata, oldest first.
    pub snapshots: Vec<SnapshotInfo>,
}

impl IcebergTableState {
    pub fn current_snapshot(&self) -> Option<&SnapshotInfo> {
        let id = self.current_snapshot_id?;
        self.snapshots.iter().find(|s| s.id == id)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IcebergStateError {
    pub location: String,
    pub message: String,
}

impl std::fmt::Display for IcebergStateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Iceberg metadata {}: {}", self.location, self.message)
    }
}

impl std::error::Error for IcebergStateError {}

/// The file a metadata location names on this machine.
pub fn local_path(location: &str, local_root: Option<&Path>) -> Result<PathBuf, IcebergStateError> {
    let fail = |message: String| IcebergStateError {
        location: location.to_owned(),
        message,
    };
    match Url::parse(location) {
        Ok(url) if url.scheme() == "file" => url
            .to_file_path()
            .map_err(|()| fail("not a local file URI".into())),
        Ok(url) if url.scheme() == "local" => {
            let root = local_root.ok_or_else(|| {
                fail("a `local://` location needs the catalog's local root (local.location)".into())
            })?;
            let relative = url.path().trim_start_matches('/');
            if relative.split('/').any(|part| part == "..") {
                return Err(fail("the location leaves the local root".into()));
            }
            Ok(root.join(relative))
        }
        Ok(url) if url.scheme().len() > 1 => Err(fail(format!(
            "`{}://` storage is not readable from this machine",
            url.scheme()
        ))),
        _ => Ok(PathBuf::from(location)),
    }
}

/// Reads and summarises the metadata file at `location`.
pub fn read_table_state(
    location: &str,
    local_root: Option<&Path>,
) -> Result<IcebergTableState, IcebergStateError> {
    let fail = |message: String| IcebergStateError {
        location: location.to_owned(),
        message,
    };
    let path = local_path(location, local_root)?;
    let bytes = std::fs::read(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    if location.ends_with(".gz.metadata.json") {
        return Err(fail(
            "gzip-compressed table metadata is not supported".into(),
        ));
    }
    let metadata: TableMetadata = serde_json::from_slice(&bytes)
        .map_err(|e| fail(format!("not Iceberg table metadata: {e}")))?;
    let schema = metadata.current_schema();
    let spec = metadata.default_partition_spec();
    let partition_fields = spec
        .fields()
        .iter()
        .map(|f| PartitionFieldInfo {
            name: f.name.clone(),
            transform: f.transform.to_string(),
            source: schema
                .name_by_field_id(f.source_id)
                .unwrap_or("?")
                .to_owned(),
        })
        .collect();
    let mut snapshots: Vec<SnapshotInfo> = metadata
        .snapshots()
        .map(|s| SnapshotInfo {
            id: s.snapshot_id(),
            parent_id: s.parent_snapshot_id(),
            timestamp_ms: s.timestamp_ms(),
            operation: operation_name(&s.summary().operation).to_owned(),
            schema_id: s.schema_id(),
            summary: s
                .summary()
                .additional_properties
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
        .collect();
    snapshots.sort_by_key(|s| (s.timestamp_ms, s.id));
    Ok(IcebergTableState {
        metadata_location: location.to_owned(),
        table_uuid: metadata.uuid().to_string(),
        format_version: metadata.format_version() as u8,
        current_snapshot_id: metadata.current_snapshot_id(),
        current_schema_id: metadata.current_schema_id(),
        default_spec_id: metadata.default_partition_spec_id(),
        partition_fields,
        properties: metadata
            .properties()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        last_updated_ms: metadata.last_updated_ms(),
        snapshots,
    })
}

fn operation_name(operation: &Operation) -> &'static str {
    match operation {
        Operation::Append => "append",
        Operation::Replace => "replace",
        Operation::Overwrite => "overwrite",
        Operation::Delete => "delete",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_scheme_resolves_under_the_root() {
        let root = Path::new("/srv/warehouse");
        assert_eq!(
            local_path(
                "local:///iceberg/s/t-1/metadata/00001.metadata.json",
                Some(root)
            )
            .unwrap(),
            PathBuf::from("/srv/warehouse/iceberg/s/t-1/metadata/00001.metadata.json")
        );
        assert_eq!(
            local_path("file:///tmp/m.json", None).unwrap(),
            PathBuf::from("/tmp/m.json")
        );
        assert!(local_path("local:///x", None).is_err());
        // URL parsing removes `..`: a location cannot leave the root.
        assert!(local_path("local:///../etc/passwd", Some(root))
            .unwrap()
            .starts_with(root));
        assert!(local_path("s3://bucket/m.json", Some(root)).is_err());
    }
}
