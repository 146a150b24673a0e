//! `manifest.json` and `graph.json` (SPEC §71–73) as serialisable documents built from a
//! compilation. The CLI writes them; the daemon will serve the same structs.
//!
//! The lineage documents (`lineage.json`, `openlineage.json`) are an order of magnitude
//! larger (hundreds of megabytes at 10,000 models), so they are written only when asked for
//! or when stale (issue 17); [`LineageArtifacts`] decides which, from a stamp of everything
//! they are made of.

use phlo_transform_core::Fingerprint;
use phlo_transform_project::{EffectiveConfig, SourceFormat, SourceOrigin};
use serde::Serialize;

use crate::compile::Compilation;
use crate::model::Dependency;
use crate::tests::TestKind;

pub const ARTIFACT_SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
pub struct Manifest<'a> {
    pub schema_version: u32,
    pub compiler_version: &'static str,
    pub workspace: String,
    pub transform_roots: Vec<RootEntry<'a>>,
    pub models: Vec<ModelEntry<'a>>,
    pub sources: Vec<SourceEntry<'a>>,
    pub tests: Vec<TestEntry<'a>>,
}

#[derive(Serialize)]
pub struct RootEntry<'a> {
    pub path: &'a str,
    pub namespace: &'a str,
}

#[derive(Serialize)]
pub struct ModelEntry<'a> {
    pub name: &'a str,
    pub id: &'a str,
    pub uri: String,
    pub path: &'a str,
    pub namespace: &'a str,
    pub materialization: &'static str,
    pub depends_on: Vec<Dependency>,
    pub config: &'a EffectiveConfig,
    pub version: Option<&'a str>,
    pub sql_hash: Option<&'a str>,
    pub config_hash: Option<&'a str>,
    pub tests: Vec<&'a str>,
    /// Inferred output schema (`{"status": "known", "columns": [...]}` or unknown with reason).
    pub schema: Option<&'a crate::ModelSchema>,
    pub contract: Option<&'a crate::contracts::Contract>,
    pub has_errors: bool,
}

#[derive(Serialize)]
pub struct SourceEntry<'a> {
    pub name: &'a str,
    pub uri: String,
    pub format: SourceFormat,
    pub location: &'a str,
    pub origin: SourceOrigin,
    pub state: Option<&'a str>,
    pub used_by: Vec<&'a str>,
}

#[derive(Serialize)]
pub struct TestEntry<'a> {
    pub name: &'a str,
    #[serde(flatten)]
    pub kind: &'a TestKind,
    pub targets: Vec<&'a str>,
}

#[derive(Serialize)]
pub struct GraphDocument {
    pub schema_version: u32,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

#[derive(Serialize)]
pub struct GraphNode {
    pub id: String,
    pub kind: &'static str,
    pub name: String,
}

#[derive(Serialize)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    pub kind: &'static str,
}

impl Compilation {
    pub fn manifest(&self) -> Manifest<'_> {
        let ws = &self.workspace;
        // Tests by model and readers by source, gathered in one pass each: looking them up
        // per model costs models × tests (10⁸ at 10,000 models).
        let mut tests_of: Vec<Vec<&str>> = vec![Vec::new(); self.models.len()];
        for t in &self.tests {
            for &i in &t.targets {
                tests_of[i].push(t.name.as_str());
            }
        }
        let mut used_by: std::collections::HashMap<&str, Vec<&str>> =
            std::collections::HashMap::new();
        for m in &self.models {
            for s in &m.sources {
                used_by.entry(s.as_str()).or_default().push(m.name.as_str());
            }
        }
        let models = self
            .models
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let file = &ws.models[i];
                ModelEntry {
                    name: m.name.as_str(),
                    id: &m.id,
                    uri: m.name.uri(),
                    path: &m.path,
                    namespace: &file.namespace,
                    materialization: m.materialization.as_str(),
                    depends_on: self.dependencies(i),
                    config: &file.config,
                    version: m.version.as_ref().map(|v| v.version.as_str()),
                    sql_hash: m.version.as_ref().map(|v| v.sql_hash.as_str()),
                    config_hash: m.version.as_ref().map(|v| v.config_hash.as_str()),
                    tests: std::mem::take(&mut tests_of[i]),
                    schema: m.schema.as_ref(),
                    contract: self.contracts.get(&i),
                    has_errors: m.has_errors,
                }
            })
            .collect();
        let sources = ws
            .sources
            .iter()
            .map(|s| SourceEntry {
                name: &s.name,
                uri: s.uri(),
                format: s.format,
                location: &s.location,
                origin: s.origin,
                state: self
                    .catalog
                    .sources
                    .get(&s.name)
                    .map(|st| st.state.as_str()),
                used_by: used_by.get(s.name.as_str()).cloned().unwrap_or_default(),
            })
            .collect();
        Manifest {
            schema_version: ARTIFACT_SCHEMA_VERSION,
            compiler_version: env!("CARGO_PKG_VERSION"),
            workspace: ws.root.display().to_string(),
            transform_roots: ws
                .roots
                .iter()
                .filter(|r| !r.namespace.is_empty())
                .map(|r| RootEntry {
                    path: &r.path,
                    namespace: &r.namespace,
                })
                .collect(),
            models,
            sources,
            tests: self
                .tests
                .iter()
                .map(|t| TestEntry {
                    name: &t.name,
                    kind: &t.kind,
                    targets: t
                        .targets
                        .iter()
                        .map(|&i| self.models[i].name.as_str())
                        .collect(),
                })
                .collect(),
        }
    }

    pub fn graph_document(&self) -> GraphDocument {
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for s in &self.workspace.sources {
            nodes.push(GraphNode {
                id: s.uri(),
                kind: "source",
                name: s.name.clone(),
            });
        }
        for (i, m) in self.models.iter().enumerate() {
            nodes.push(GraphNode {
                id: m.name.uri(),
                kind: "model",
                name: m.name.to_string(),
            });
            for s in &m.sources {
                edges.push(GraphEdge {
                    from: format!("source://{}", s.replace('.', "/")),
                    to: m.name.uri(),
                    kind: "source",
                });
            }
            for &u in &self.models[i].upstream {
                edges.push(GraphEdge {
                    from: self.models[u].name.uri(),
                    to: m.name.uri(),
                    kind: "model",
                });
            }
        }
        for t in &self.tests {
            let id = format!("test://{}", t.name);
            nodes.push(GraphNode {
                id: id.clone(),
                kind: "test",
                name: t.name.clone(),
            });
            for &i in &t.targets {
                edges.push(GraphEdge {
                    from: self.models[i].name.uri(),
                    to: id.clone(),
                    kind: "test",
                });
            }
        }
        GraphDocument {
            schema_version: ARTIFACT_SCHEMA_VERSION,
            nodes,
            edges,
        }
    }
}

/// When the lineage documents are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineageArtifacts {
    /// The user asked for lineage (`lineage`, `run`): write them unless they are current.
    Wanted,
    /// `check`, `plan`: keep documents that exist current, but create none; at 10,000 models
    /// they would cost as much as the compile itself.
    RefreshExisting,
}

impl LineageArtifacts {
    /// Whether to write, given the stamp recorded with the documents on disk (`None`: there
    /// are none) and the current one ([`Compilation::lineage_stamp`]).
    pub fn should_write(self, recorded: Option<&str>, current: &str) -> bool {
        match (self, recorded) {
            (_, Some(r)) => r != current,
            (LineageArtifacts::Wanted, None) => true,
            (LineageArtifacts::RefreshExisting, None) => false,
        }
    }
}

impl Compilation {
    /// A digest of everything the lineage documents are built from: each model's name, path,
    /// materialization, errors, version and fingerprints (canonical SQL, configuration,
    /// inputs, file text, plan) and schema; the sources' states and schemas; the tests; and
    /// `context`, what the caller's documents also depend on (the OpenLineage namespace and
    /// warehouse). Equal stamps mean equal documents, so a current document is not rewritten.
    pub fn lineage_stamp(&self, context: &str) -> String {
        let mut f = Fingerprint::new("phlo-transform/lineage-artifacts/1");
        f.field("compiler", env!("CARGO_PKG_VERSION"));
        f.field("context", context);
        for (i, m) in self.models.iter().enumerate() {
            f.field("model", m.name.as_str())
                .field("path", &m.path)
                .field("materialization", m.materialization.as_str())
                .field("errors", if m.has_errors { "1" } else { "0" });
            match &m.version {
                Some(v) => {
                    f.field("version", &v.version)
                        .field("text", &v.fingerprints.text)
                        .field("plan", v.fingerprints.plan.as_deref().unwrap_or(""));
                }
                None => {
                    f.field("text", &self.workspace.models[i].text);
                }
            }
            for d in self.dependencies(i) {
                let (Dependency::Model(n) | Dependency::Source(n)) = d;
                f.field("input", n);
            }
            match &m.schema {
                Some(crate::ModelSchema::Known { columns, .. }) => {
                    for c in columns {
                        f.field("column", &c.name).field("type", &c.data_type);
                    }
                }
                Some(crate::ModelSchema::Unknown { reason }) => {
                    f.field("unknown", reason);
                }
                None => {
                    f.field("untyped", "");
                }
            }
        }
        for (name, state) in &self.catalog.sources {
            f.field("source", name).field("state", &state.state);
            match &state.schema {
                crate::schemas::SourceSchema::Known(schema) => {
                    for field in schema.fields() {
                        f.field("column", field.name())
                            .field("type", field.data_type().to_string());
                    }
                }
                crate::schemas::SourceSchema::Unknown(reason) => {
                    f.field("unknown", reason);
                }
            }
        }
        for s in &self.workspace.sources {
            f.field("declared", &s.name)
                .field("description", s.description.as_deref().unwrap_or(""));
        }
        for t in &self.tests {
            f.field("test", &t.name)
                .field("kind", serde_json::to_string(&t.kind).unwrap_or_default());
            for &i in &t.targets {
                f.field("target", self.models[i].name.as_str());
            }
        }
        f.finish()
    }
}
