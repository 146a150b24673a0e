//! The `inspect` reports: one model (identity, dependencies, consumers, tests, schema, column
//! lineage, version and recorded state), one source, or the SQL an adapter sends for a model.

use phlo_transform_adapter::Relation;
use phlo_transform_compiler::lineage::{ModelColumn, Target};
use phlo_transform_compiler::{Compilation, Dependency, ModelSchema, SqlChange};
use phlo_transform_project::directives::Directives;
use phlo_transform_project::effective::EffectiveConfig;
use phlo_transform_project::sources::{SourceFormat, SourceOrigin};
use phlo_transform_project::Materialization;
use phlo_transform_state::MaterializedVersion;
use serde::Serialize;

/// `inspect <model>`.
#[derive(Debug, Serialize)]
pub struct ModelInspection<'a> {
    /// `model`.
    pub kind: &'static str,
    pub name: &'a str,
    pub id: &'a str,
    pub uri: String,
    pub path: &'a str,
    pub namespace: &'a str,
    pub materialization: Materialization,
    /// The adapter naming the relation; `None` when it could not be opened.
    pub adapter: Option<String>,
    pub relation: Option<String>,
    pub relation_parts: Option<Vec<String>>,
    pub depends_on: Vec<Dependency>,
    pub used_by: Vec<&'a str>,
    pub tests: Vec<&'a str>,
    pub directives: &'a Directives,
    pub schema: &'a Option<ModelSchema>,
    /// The relation columns each output column comes from (its direct lineage inputs).
    pub column_lineage: Vec<ModelColumn>,
    pub state: ModelState,
    /// The effective configuration, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<&'a EffectiveConfig>,
    /// `@key`, shown in text.
    #[serde(skip)]
    pub key: &'a [String],
}

/// A model's desired version against the one recorded for the environment.
#[derive(Debug, Serialize)]
pub struct ModelState {
    pub desired: Option<String>,
    pub current: Option<String>,
    /// `current`, `changed`, `not materialised`, or `unknown (compile errors)`.
    pub status: &'static str,
    pub sql_change: Option<SqlChange>,
    pub materialized_at: Option<String>,
    /// The adapter's proof of the contents written (`iceberg:snapshot:…,schema:…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_identity: Option<String>,
    /// What the adapter read of the relation after the write (Iceberg: snapshot, schema,
    /// partition spec, properties; SPEC §69).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physical_state: Option<serde_json::Value>,
    /// What the recorded materialisation is current as of (freshness clocks); `None` when
    /// unknown or never materialised.
    pub current_as_of: Option<phlo_transform_state::AsOf>,
}

impl<'a> ModelInspection<'a> {
    /// Model `i` of `c`, named by `adapter` (its name and the model's relation) when one is
    /// open, against `recorded`; `with_config` adds the effective configuration.
    pub fn new(
        c: &'a Compilation,
        i: usize,
        adapter: Option<(String, Relation)>,
        recorded: Option<&MaterializedVersion>,
        with_config: bool,
    ) -> Self {
        let m = &c.models[i];
        let file = &c.workspace.models[i];
        let desired = m.version.as_ref().map(|v| v.version.clone());
        let status = match (&desired, recorded) {
            (None, _) => "unknown (compile errors)",
            (Some(_), None) => "not materialised",
            (Some(d), Some(r)) if *d == r.version => "current",
            _ => "changed",
        };
        let sql_change = match (recorded, &m.version) {
            (Some(r), Some(v)) => Some(SqlChange::classify(
                r.text_hash.as_deref(),
                &r.sql_hash,
                r.plan_hash.as_deref(),
                v,
            )),
            _ => None,
        };
        let column_lineage = match c.lineage().resolve(m.name.as_str()) {
            Ok(Target::Dataset(d)) => c.lineage().model_report(d).columns,
            _ => Vec::new(),
        };
        // An ephemeral model has no relation of its own.
        let named = adapter.map(|(name, relation)| {
            let relation = (m.materialization != Materialization::Ephemeral).then_some(relation);
            (name, relation)
        });
        let relation = named.as_ref().and_then(|(_, r)| r.clone());
        ModelInspection {
            kind: "model",
            name: m.name.as_str(),
            id: &m.id,
            uri: m.name.uri(),
            path: &m.path,
            namespace: &file.namespace,
            materialization: m.materialization,
            adapter: named.map(|(name, _)| name),
            relation: relation.as_ref().map(|r| r.to_string()),
            relation_parts: relation.map(|r| r.parts),
            depends_on: c.dependencies(i),
            used_by: c
                .graph
                .downstream(i)
                .iter()
                .map(|&d| c.models[d].name.as_str())
                .collect(),
            tests: c
                .tests
                .iter()
                .filter(|t| t.targets.contains(&i))
                .map(|t| t.name.as_str())
                .collect(),
            directives: &file.directives,
            schema: &m.schema,
            column_lineage,
            state: ModelState {
                desired,
                current: recorded.map(|r| r.version.clone()),
                status,
                sql_change,
                materialized_at: recorded.map(|r| r.materialized_at.clone()),
                output_identity: recorded.and_then(|r| r.output_identity.clone()),
                physical_state: recorded.and_then(|r| r.physical_state.clone()),
                current_as_of: recorded.and_then(|r| r.current_as_of),
            },
            config: with_config.then_some(&file.config),
            key: &file.config.key.value,
        }
    }
}

/// `inspect <source>`.
#[derive(Debug, Serialize)]
pub struct SourceInspection<'a> {
    /// `source`.
    pub kind: &'static str,
    pub name: &'a str,
    pub format: SourceFormat,
    pub location: &'a str,
    pub origin: SourceOrigin,
    pub owner: Option<&'a str>,
    pub description: Option<&'a str>,
    /// `None` when it could not be read.
    pub state: Option<&'a str>,
    /// What its data is current as of, as read now (a Delta commit's time, an Iceberg
    /// snapshot's, a file's modification time); `None` when the data does not say.
    pub current_as_of: Option<phlo_transform_state::AsOf>,
    /// `None` when its schema is unknown.
    pub columns: Option<Vec<SourceColumn>>,
    pub used_by: Vec<&'a str>,
}

#[derive(Debug, Serialize)]
pub struct SourceColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: String,
}

impl<'a> SourceInspection<'a> {
    /// The source `name`; `None` when the workspace declares none of that name.
    pub fn new(c: &'a Compilation, name: &str) -> Option<Self> {
        let decl = c.workspace.sources.iter().find(|s| s.name == name)?;
        let state = c.catalog.sources.get(name);
        let columns = state.and_then(|s| match &s.schema {
            phlo_transform_compiler::schemas::SourceSchema::Known(schema) => Some(
                schema
                    .fields()
                    .iter()
                    .map(|f| SourceColumn {
                        name: f.name().clone(),
                        data_type: f.data_type().to_string(),
                    })
                    .collect(),
            ),
            phlo_transform_compiler::schemas::SourceSchema::Unknown(_) => None,
        });
        Some(SourceInspection {
            kind: "source",
            name: &decl.name,
            format: decl.format,
            location: &decl.location,
            origin: decl.origin,
            owner: decl.owner.as_deref(),
            description: decl.description.as_deref(),
            state: state.map(|s| s.state.as_str()),
            current_as_of: state.and_then(|s| s.as_of),
            columns,
            used_by: c
                .models
                .iter()
                .filter(|m| m.sources.iter().any(|s| s == name))
                .map(|m| m.name.as_str())
                .collect(),
        })
    }
}

/// `inspect <model> --sql`: the statements the adapter sends to materialise the model.
#[derive(Debug, Serialize)]
pub struct ModelSql<'a> {
    pub name: &'a str,
    pub adapter: String,
    pub relation: String,
    pub statements: Vec<String>,
}
