//! The two configuration files: `phlo.toml` at the workspace root and `transform.toml` in a
//! transform root or any folder below one. Unknown keys are errors, not silently ignored.

use serde::Deserialize;
use std::collections::BTreeMap;

use crate::directives::{AnalysisMode, Materialization};

/// `phlo.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceConfig {
    #[serde(default)]
    pub transform: TransformSection,
    /// `[transforms] include/exclude` (SPEC §7); same meaning as `[transform.discovery]`.
    #[serde(default)]
    pub transforms: Discovery,
    #[serde(default)]
    pub source: BTreeMap<String, SourceSection>,
    #[serde(default)]
    pub vars: BTreeMap<String, toml::Value>,
    /// `[model."assay.results"]`: contracts and renames (SPEC §31). The key is a model name
    /// or a unique suffix of one.
    #[serde(default)]
    pub model: BTreeMap<String, ModelSection>,
    /// `[openlineage]`: where run events go. `OPENLINEAGE__*` variables override it.
    #[serde(default)]
    pub openlineage: OpenLineageSection,
    /// `[schema]`: how `plan` classifies schema changes (SPEC §50).
    #[serde(default)]
    pub schema: SchemaPolicy,
    /// `[adapter]`: the default target (the local engine when absent).
    pub adapter: Option<crate::adapter::AdapterSection>,
    /// `[adapters.<name>]`: named targets, chosen with `--adapter <name>`.
    #[serde(default)]
    pub adapters: BTreeMap<String, crate::adapter::AdapterSection>,
    /// `[artifacts]`: the artifacts of other tools a run also writes.
    #[serde(default)]
    pub artifacts: ArtifactsSection,
    /// `[cache]`: where the compile cache is shared with a team and CI.
    #[serde(default)]
    pub cache: CacheSection,
}

/// `[cache]`. `url` is where the compile cache is shared besides the workspace's own
/// `.phlo/cache/compile`: a directory (a path, relative to the workspace, or a `file://`
/// URL), a `postgres://` URL, `"state"` (the PostgreSQL state store) or `"none"`. Without
/// it, a PostgreSQL state store holds the shared cache. `PHLO_CACHE_URL` overrides it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSection {
    pub url: Option<String>,
}

/// `[artifacts]`. `dbt = true`: every `run` and `apply` also writes dbt's `manifest.json`
/// (schema v12) and `run_results.json` (v6) into `target/`, as `--artifacts dbt` does, for
/// the tools that read dbt's artifacts.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactsSection {
    #[serde(default)]
    pub dbt: bool,
}

/// `[schema]` policy. A nullable addition is SAFE and a numeric widening REVIEW unless these
/// say otherwise; `breaking_changes = "error"` makes a plan with a BREAKING change fail.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchemaPolicy {
    pub allow_nullable_additions: bool,
    pub allow_numeric_widening: bool,
    pub breaking_changes: BreakingChanges,
}

impl Default for SchemaPolicy {
    fn default() -> Self {
        SchemaPolicy {
            allow_nullable_additions: true,
            allow_numeric_widening: true,
            breaking_changes: BreakingChanges::Warn,
        }
    }
}

/// What a BREAKING schema change does to a plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BreakingChanges {
    /// Reported; the plan goes ahead.
    #[default]
    Warn,
    /// The plan is rejected (L011).
    Error,
}

/// `[openlineage]`. The API key is deliberately not a key here: secrets stay out of phlo.toml
/// (`OPENLINEAGE__API_KEY` only).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenLineageSection {
    /// The collector's base URL (`http://marquez:5000`).
    pub url: Option<String>,
    /// Path of the lineage endpoint below `url`; default `api/v1/lineage`.
    pub endpoint: Option<String>,
    /// JSON Lines file the same events are appended to (relative to the workspace root).
    pub file: Option<String>,
    /// Namespace of the jobs; default `phlo-transform`.
    pub namespace: Option<String>,
    /// HTTP timeout per attempt, and the bound of the drain at exit; default 10.
    pub timeout_seconds: Option<u64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// What the model is, for documentation and the dbt artifacts (SPEC §100).
    pub description: Option<String>,
    pub contract: Option<ContractSection>,
    /// Declared columns, in order.
    #[serde(default)]
    pub columns: toml::Table,
    /// `new_name = "old_name"`: a column renamed, so diffs classify it as a named rename.
    #[serde(default)]
    pub renames: BTreeMap<String, String>,
    /// `[model."x".diff]`: what `diff` accepts as a difference (SPEC §54).
    pub diff: Option<DiffSection>,
}

/// `[model."x".diff]`: thresholds a data diff of the model must stay within.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffSection {
    pub max_removed_rows: Option<u64>,
    pub max_added_rows: Option<u64>,
    /// Largest allowed (added + removed + modified) / base rows.
    pub max_changed_fraction: Option<f64>,
    /// `[model."x".diff.columns.c]`.
    #[serde(default)]
    pub columns: BTreeMap<String, DiffColumnSection>,
}

/// `[model."x".diff.columns.c]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffColumnSection {
    /// Values within this absolute difference are equal (numeric columns).
    pub tolerance: Option<f64>,
    /// Largest allowed number of changed values in the column.
    pub max_changed_values: Option<u64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContractSection {
    /// When true, the model's columns must be exactly the declared ones.
    #[serde(default)]
    pub enforced: bool,
}

/// `[model."x".columns.c]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSection {
    #[serde(rename = "type")]
    pub data_type: Option<String>,
    pub nullable: Option<bool>,
    pub description: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformSection {
    #[serde(alias = "default_materialisation")]
    pub default_materialization: Option<Materialization>,
    pub default_schema: Option<String>,
    pub default_catalog: Option<String>,
    /// Folder (relative to the workspace) where sources are found by convention:
    /// `<dir>/<namespace>/<name>.parquet|.csv`, Delta directories, Iceberg tables.
    pub sources_dir: Option<String>,
    /// Dialect whose functions and type names models are checked against:
    /// `datafusion` (default), `trino`, `duckdb`, `postgres`.
    pub dialect: Option<String>,
    /// Type-checking mode for every model: `strict` (default), `baseline`, `off`.
    pub analysis: Option<AnalysisMode>,
    #[serde(default)]
    pub execution: ExecutionSection,
    #[serde(default)]
    pub state: StateSection,
    #[serde(default)]
    pub discovery: Discovery,
    /// Delta table maintenance of the local engine.
    #[serde(default)]
    pub maintenance: crate::maintenance::MaintenanceSection,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutionSection {
    pub max_concurrency: Option<usize>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSection {
    pub enabled: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Discovery {
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// `[source."raw.orders"]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSection {
    /// File or directory, relative to the workspace root (or absolute).
    pub location: Option<String>,
    /// `parquet`, `csv`, `delta` or `iceberg`; inferred from the location when absent.
    pub format: Option<String>,
    pub owner: Option<String>,
    pub description: Option<String>,
    /// Maximum age of the data (`6h`), measured on `timestamp_column` (SPEC §34).
    pub freshness: Option<String>,
    pub timestamp_column: Option<String>,
    /// `warn` (default) or `block`: what a stale source does to a plan.
    pub freshness_policy: Option<String>,
    /// `[source."x.y".columns] name = "bigint"`: the schema, in column order. Without a
    /// `location` the source is schema-only (typing, no data); with one it is the fallback when
    /// the data's own schema cannot be read.
    pub columns: Option<toml::Table>,
    /// Base URL of an Iceberg REST catalog (`http://host:8181`, possibly with a path): the
    /// source is then that catalog's table `table` instead of a `location`.
    pub catalog: Option<String>,
    /// `namespace.table` in the REST catalog (nested namespaces: `a.b.table`); default: the
    /// source's own name.
    pub table: Option<String>,
    /// Warehouse passed to the REST catalog's `/v1/config`.
    pub warehouse: Option<String>,
    /// Name of the environment variable holding a bearer token for the REST catalog (the token
    /// itself never goes in phlo.toml).
    pub token_env: Option<String>,
}

/// `transform.toml`. `namespace` is only meaningful in a transform root.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    pub namespace: Option<String>,
    #[serde(alias = "materialised")]
    pub materialized: Option<Materialization>,
    pub schema: Option<String>,
    pub owner: Option<String>,
    pub tags: Option<Vec<String>>,
    /// `[folder.marts]` / `[folder."marts/finance"]`: settings for a sub-folder.
    #[serde(default)]
    pub folder: BTreeMap<String, FolderSettings>,
}

/// The settings a root, a folder section or a folder's own `transform.toml` may set.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FolderSettings {
    #[serde(alias = "materialised")]
    pub materialized: Option<Materialization>,
    pub schema: Option<String>,
    pub owner: Option<String>,
    pub tags: Option<Vec<String>>,
}

/// Keys accepted in the other spelling, and the one the documentation uses.
const SPELLING_ALIASES: [(&str, &str); 2] = [
    ("materialised", "materialized"),
    ("default_materialisation", "default_materialization"),
];

/// The other spellings accepted for configuration keys.
pub(crate) fn alias_spellings() -> impl Iterator<Item = &'static str> {
    SPELLING_ALIASES.iter().map(|(alias, _)| *alias)
}

/// `(line, alias, key)` for each configuration key of `text` spelled the other way
/// (`materialised`): serde accepts them as aliases; this says where, for the hint. Only the
/// tables that have such a key are looked at (`[transform]`, the top level of a
/// transform.toml, its `[folder.*]` tables), never user data such as `[vars]`.
pub(crate) fn spelling_aliases(text: &str) -> Vec<(usize, &'static str, &'static str)> {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut tables: Vec<(String, &toml::Table)> = vec![(String::new(), &doc)];
    if let Some(t) = doc.get("transform").and_then(toml::Value::as_table) {
        tables.push(("transform".into(), t));
    }
    if let Some(folders) = doc.get("folder").and_then(toml::Value::as_table) {
        for (name, t) in folders {
            if let Some(t) = t.as_table() {
                tables.push((format!("folder.{name}"), t));
            }
        }
    }
    let mut found = Vec::new();
    for (header, table) in tables {
        for (alias, key) in SPELLING_ALIASES {
            if table.contains_key(alias) {
                found.push((key_line(text, &header, alias), alias, key));
            }
        }
    }
    found.sort();
    found
}

/// The line of `key = …` in the table `header` (`""` for the top level), 1-based; 1 when not
/// found.
pub fn key_line(text: &str, header: &str, key: &str) -> usize {
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(h) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            current = h.trim().replace(['"', ' '], "");
            continue;
        }
        let is_key = trimmed
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if is_key && current == header.replace('"', "") {
            return i + 1;
        }
    }
    1
}

impl RootConfig {
    /// The folder-level settings this file sets for its own directory.
    pub fn settings(&self) -> FolderSettings {
        FolderSettings {
            materialized: self.materialized,
            schema: self.schema.clone(),
            owner: self.owner.clone(),
            tags: self.tags.clone(),
        }
    }
}
