//! `manifest.json` and `graph.json` (SPEC §71–73) as serialisable documents built from a
//! compilation. The CLI writes them; the daemon will serve the same structs.

use phlo_transform_project::{EffectiveConfig, SourceFormat, SourceOrigin};
use serde::Serialize;

use crate::compile::{Compilation, Dependency};
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
                    tests: self
                        .tests
                        .iter()
                        .filter(|t| t.targets.contains(&i))
                        .map(|t| t.name.as_str())
                        .collect(),
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
                used_by: self
                    .models
                    .iter()
                    .filter(|m| m.sources.contains(&s.name))
                    .map(|m| m.name.as_str())
                    .collect(),
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
