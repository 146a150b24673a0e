//! Model versions (decision 5, SPEC §35): sha256 over a versioned tuple of the canonical SQL,
//! the configuration that affects data, the upstream model versions and the source states.
//! The parts are kept apart so that the planner can say which one changed.

use phlo_transform_core::Fingerprint;
use phlo_transform_project::EffectiveConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bump when what goes into a version changes; every model then rebuilds once.
pub const VERSION_FORMAT: &str = "phlo-transform/model-version/1";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelVersion {
    /// The model version: what `state` compares.
    pub version: String,
    /// Hash of the canonical SQL (relations replaced by the identity they resolve to).
    pub sql_hash: String,
    /// Hash of the data-affecting configuration.
    pub config_hash: String,
    /// Upstream model id → its version.
    pub upstream: BTreeMap<String, String>,
    /// Source name → its state.
    pub sources: BTreeMap<String, String>,
}

impl ModelVersion {
    pub fn compute(
        canonical_sql: &str,
        config: &EffectiveConfig,
        upstream: BTreeMap<String, String>,
        sources: BTreeMap<String, String>,
    ) -> ModelVersion {
        let sql_hash = Fingerprint::new("sql")
            .field("canonical", canonical_sql)
            .finish();
        let config_hash = config_hash(config);
        let mut f = Fingerprint::new(VERSION_FORMAT);
        f.field(
            "canonical_format",
            phlo_transform_sql::canonical::CANONICAL_FORMAT_VERSION,
        )
        .field("sql", &sql_hash)
        .field("config", &config_hash);
        for (id, v) in &upstream {
            f.field("upstream", id).field("version", v);
        }
        for (name, state) in &sources {
            f.field("source", name).field("state", state);
        }
        ModelVersion {
            version: f.finish(),
            sql_hash,
            config_hash,
            upstream,
            sources,
        }
    }

    /// The first 12 hex digits, for people.
    pub fn short(&self) -> &str {
        &self.version[..12]
    }
}

/// Only what changes the data or its physical form: owner and tags never rebuild a model.
fn config_hash(config: &EffectiveConfig) -> String {
    let mut f = Fingerprint::new("config");
    f.field("materialized", config.materialized.value.as_str())
        .field("schema", &config.schema.value);
    if let Some(strategy) = &config.incremental.value {
        f.field("incremental", strategy.to_string());
        f.field("key", config.key.value.join(","));
    }
    f.finish()
}
