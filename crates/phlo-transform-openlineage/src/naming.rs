//! Dataset identities, after the OpenLineage naming conventions
//! (https://openlineage.io/docs/spec/naming) so that a catalog receiving lineage from other
//! tools reading the same files matches the same nodes:
//!
//! - a model the local engine writes (table, incremental) is its Delta table directory:
//!   namespace `file`, name the absolute path `<warehouse>/<relation>`; a view is its
//!   definition file `<warehouse>/<relation>.view.json` (the relation is the model's name, or
//!   its `default_schema` placement: `phlo_transform_adapter::naming::local_model`);
//! - a source with a location is that file or directory (`file`, absolute path);
//! - an Iceberg REST catalog table: namespace the catalog's base URL (no userinfo), name
//!   `namespace.table`;
//! - anything with no physical location (ephemeral models, schema-only sources): namespace
//!   the configured job namespace, name the logical name.

use crate::config::{redact_url, OpenLineageConfig};
use phlo_transform_adapter::naming::local_model;
use phlo_transform_compiler::Compilation;
use phlo_transform_project::Materialization;
use serde_json::{json, Value};
use std::path::Path;

/// The namespace of datasets on the local file system.
pub const FILE_NAMESPACE: &str = "file";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetId {
    pub namespace: String,
    pub name: String,
}

impl DatasetId {
    /// `{namespace, name}`, the start of a dataset object.
    pub fn to_json(&self) -> Value {
        json!({ "namespace": self.namespace, "name": self.name })
    }
}

fn file(path: &Path) -> DatasetId {
    DatasetId {
        namespace: FILE_NAMESPACE.to_string(),
        name: path.to_string_lossy().replace('\\', "/"),
    }
}

/// The dataset a model named `name` with `materialization` produces.
pub fn model(
    config: &OpenLineageConfig,
    name: &str,
    materialization: Materialization,
) -> DatasetId {
    let relation = local_model(name, config.default_schema.as_deref());
    match materialization {
        Materialization::Table | Materialization::Incremental => {
            file(&config.warehouse.join(relation))
        }
        Materialization::View => file(&config.warehouse.join(format!("{relation}.view.json"))),
        Materialization::Ephemeral => DatasetId {
            namespace: config.namespace.clone(),
            name: name.to_string(),
        },
    }
}

/// The dataset `name` (a model's output or a source) of the compilation.
pub fn dataset(c: &Compilation, config: &OpenLineageConfig, name: &str) -> DatasetId {
    if let Some(i) = c.model_index(name) {
        return model(config, name, c.models[i].materialization);
    }
    let decl = c.workspace.sources.iter().find(|s| s.name == name);
    match decl {
        Some(s) if s.rest.is_some() => {
            let rest = s.rest.as_ref().expect("checked");
            DatasetId {
                namespace: redact_url(&rest.catalog).trim_end_matches('/').to_string(),
                name: rest.qualified(),
            }
        }
        Some(s) if !s.location.is_empty() => file(&s.path),
        _ => DatasetId {
            namespace: config.namespace.clone(),
            name: name.to_string(),
        },
    }
}
