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
    /// Fingerprints that classify a change (SPEC §99) and are *not* part of `version`:
    /// the raw file text, and the unoptimized logical plan (`None` when the model is untyped).
    pub fingerprints: Fingerprints,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprints {
    pub text: String,
    pub plan: Option<String>,
}

/// How the SQL of a model changed between two versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqlChange {
    None,
    /// Formatting or comments only: same canonical SQL.
    Text,
    /// The canonical SQL differs but the logical plan is the same (`a AS x` vs `a x`,
    /// `SELECT *` vs the same explicit list).
    Ast,
    /// The logical plan differs (or could not be compared).
    Semantic,
}

impl SqlChange {
    /// Compares recorded (`old_*`) and desired SQL fingerprints.
    pub fn classify(
        old_text: Option<&str>,
        old_sql: &str,
        old_plan: Option<&str>,
        new: &ModelVersion,
    ) -> SqlChange {
        if old_sql == new.sql_hash {
            return if old_text.is_some_and(|t| t != new.fingerprints.text) {
                SqlChange::Text
            } else {
                SqlChange::None
            };
        }
        match (old_plan, new.fingerprints.plan.as_deref()) {
            (Some(a), Some(b)) if a == b => SqlChange::Ast,
            _ => SqlChange::Semantic,
        }
    }
}

/// Fingerprint of an unoptimized plan's indented display with schemas, pinned to the
/// DataFusion version whose printer produced it.
pub fn plan_fingerprint(plan_text: &str) -> String {
    Fingerprint::new("phlo-transform/plan/datafusion-53")
        .field("plan", plan_text)
        .finish()
}

impl ModelVersion {
    pub fn compute(
        canonical_sql: &str,
        config: &EffectiveConfig,
        upstream: BTreeMap<String, String>,
        sources: BTreeMap<String, String>,
        fingerprints: Fingerprints,
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
            fingerprints,
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
