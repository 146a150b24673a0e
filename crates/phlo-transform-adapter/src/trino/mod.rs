//! The Trino engine: a client for Trino's statement protocol, the adapter on it (Iceberg tables
//! on Nessie, views in a views catalog), and warehouse sources typed from Trino's metadata.

pub(crate) mod branches;
pub mod client;
mod engine;
mod identity;
mod rows;
mod sources;

use phlo_transform_core::diagnostic::codes;
use phlo_transform_project::AdapterTarget;
use std::path::Path;
use url::Url;

use crate::AdapterError;
pub use client::{Trino, TrinoConfig, TrinoError};
pub(crate) use engine::BATCH_SUFFIX;
pub use engine::{TrinoEngine, TrinoSettings};
pub use sources::{add_warehouse_sources, warehouse_sources};

/// The engine settings of a `type = "trino"` target (relative `local_root`s are taken from the
/// workspace root).
pub fn settings(target: &AdapterTarget, root: &Path) -> Result<TrinoSettings, AdapterError> {
    let s = &target.settings;
    let invalid = |what: String| {
        AdapterError::new(
            codes::UNKNOWN_ADAPTER,
            format!("adapter `{}`: {what}", target.name),
        )
    };
    let url = s.url.as_deref().unwrap_or_default();
    let url = Url::parse(url).map_err(|e| invalid(format!("url `{url}`: {e}")))?;
    let nessie = match &s.nessie {
        Some(n) => Some((
            Url::parse(&n.url)
                .map_err(|e| invalid(format!("[adapter.nessie] url `{}`: {e}", n.url)))?,
            n.reference.clone().unwrap_or_else(|| "main".into()),
        )),
        None => None,
    };
    Ok(TrinoSettings {
        url,
        user: s.user.clone().unwrap_or_else(|| "phlo".into()),
        password: target
            .password()
            .map_err(|d| AdapterError::new(d.code, d.message))?,
        catalog: s.catalog.clone().unwrap_or_else(|| "iceberg".into()),
        views_catalog: s.views_catalog.clone(),
        default_schema: s.default_schema.clone(),
        nessie,
        local_root: s.local_root.as_ref().map(|r| root.join(r)),
    })
}
