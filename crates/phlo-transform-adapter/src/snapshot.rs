//! A model's Delta table as of an earlier version, and the versions phlo-transform wrote
//! (for `diff --from/--to`). Read-only: nothing here writes to the warehouse.

use datafusion::catalog::TableProvider;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_lakehouse::delta_log;
use serde::Serialize;
use std::sync::Arc;

use crate::error::err;
use crate::local::LocalEngine;
use crate::AdapterError;

/// Which state of a Delta table to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeltaAt {
    Latest,
    Version(u64),
    /// An RFC 3339 timestamp: the newest version committed at or before it.
    Timestamp(String),
}

/// One commit of a model's table, as its log records it.
#[derive(Clone, Debug, Serialize)]
pub struct TableVersion {
    pub delta_version: u64,
    /// `phlo.model_version` of a phlo-transform data write; `None` for other commits.
    pub model_version: Option<String>,
    /// Commit time, milliseconds since the epoch.
    pub timestamp: Option<i64>,
    pub operation: Option<String>,
}

impl LocalEngine {
    /// Whether the model has a Delta table in this environment (its pinned table, else its
    /// own).
    pub fn has_table(&self, model: &str) -> bool {
        self.read_location(&self.relation_name(model))
            .is_ok_and(|(p, _)| crate::delta::has_commit(&p))
    }

    /// The model's table as of `at`, and the Delta version that is. `Latest` is the version
    /// the environment reads (a pinned table's pinned version).
    pub async fn table_at(
        &self,
        model: &str,
        at: &DeltaAt,
    ) -> Result<(Arc<dyn TableProvider>, u64), AdapterError> {
        let (path, pinned) = self.read_location(&self.relation_name(model))?;
        let at = &match (at, pinned) {
            (DeltaAt::Latest, Some(v)) => DeltaAt::Version(v.max(0) as u64),
            _ => at.clone(),
        };
        let unavailable =
            |e: String| err(codes::RELATION_UNAVAILABLE, format!("table `{model}`: {e}"));
        let url = deltalake::ensure_table_uri(path.to_string_lossy())
            .map_err(|e| unavailable(e.to_string()))?;
        let table = match at {
            DeltaAt::Latest => deltalake::open_table(url).await,
            DeltaAt::Version(v) => deltalake::open_table_with_version(url, *v).await,
            DeltaAt::Timestamp(ts) => deltalake::open_table_with_ds(url, ts).await,
        }
        .map_err(|e| unavailable(e.to_string()))?;
        let version = table.version().unwrap_or_default();
        table
            .update_datafusion_session(&self.session().state())
            .map_err(|e| unavailable(e.to_string()))?;
        let provider = table
            .table_provider()
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        Ok((provider, version))
    }

    /// Every commit still in the model's log (JSON commit files), oldest first.
    pub fn table_versions(&self, model: &str) -> Result<Vec<TableVersion>, AdapterError> {
        let table = self.read_location(&self.relation_name(model))?.0;
        let unreadable = |e: std::io::Error| {
            err(
                codes::RELATION_UNAVAILABLE,
                format!("table `{model}`: cannot read its Delta log: {e}"),
            )
        };
        let mut out = Vec::new();
        for commit in delta_log::commits(&table).map_err(unreadable)? {
            let text = std::fs::read_to_string(&commit.path).map_err(unreadable)?;
            let info = text
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find_map(|v| v.get("commitInfo").cloned())
                .unwrap_or_default();
            out.push(TableVersion {
                delta_version: commit.version,
                model_version: info
                    .get("phlo.model_version")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
                timestamp: info.get("timestamp").and_then(|v| v.as_i64()),
                operation: info
                    .get("operation")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
            });
        }
        Ok(out)
    }
}
