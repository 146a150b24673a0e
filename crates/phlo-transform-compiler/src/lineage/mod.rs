//! The canonical `LineageGraph` (SPEC §55–57): model, dataset, column and test nodes joined by
//! input, output, derives, contains and tests edges. Sources and model outputs are both
//! `dataset://` nodes. Every lineage report, the artifacts and the OpenLineage export read
//! this one structure; none re-derives its own.

mod diff;
mod query;

pub use crate::plan_lineage::{
    column_lineage, ColumnDerivations, Derivation, Directness, InputColumn, Transformation,
};
pub use diff::{
    compare, ColumnChanges, ColumnEntry, ColumnRename, ColumnRetype, Consumer, ConsumerStatus,
    EdgeChanges, EdgeEntry, FieldChange, LineageDiff, ModelChanges, ModelEntry, ModelRename,
    Orphaned, SourceChanges, UnknownLineage,
};
pub use query::{
    ColumnReport, DatasetStep, ImpactReport, ImpactedColumn, InputEdge, ModelColumn, ModelReport,
    Reach, Target,
};

use crate::catalog::CatalogSnapshot;
use crate::model::CompiledModel;
use crate::schemas::SourceSchema;
use crate::tests::{CompiledTest, TestKind};
use phlo_transform_project::Workspace;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Format version of the lineage document.
pub const DOCUMENT_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Model,
    Dataset,
    Column,
    Test,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    /// dataset → model: the model reads the dataset.
    Input,
    /// model → dataset: the model produces the dataset.
    Output,
    /// dataset → column.
    Contains,
    /// column → column.
    Derives,
    /// dataset or column → test.
    Tests,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Proven from the plan.
    Exact,
    /// Analysis was incomplete: the edges shown are all that is known, not all there is.
    Unknown,
}

/// What produces a dataset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetOrigin {
    Source,
    Model,
}

#[derive(Clone, Debug, Serialize)]
pub struct Node {
    pub id: String,
    pub kind: NodeKind,
    /// Display name: `shared.orders`, `shared.orders.amount`, a test's name.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<DatasetOrigin>,
    /// A column's dataset node id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub data_type: Option<String>,
    /// Models and columns: `unknown` when lineage analysis was incomplete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// Why lineage is unknown, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Models: file path; tests: kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub materialization: Option<String>,
    /// Models: the workflow owning the model's transform root, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
}

impl Node {
    fn new(id: String, kind: NodeKind, name: String) -> Node {
        Node {
            id,
            kind,
            name,
            origin: None,
            dataset: None,
            data_type: None,
            confidence: None,
            reason: None,
            path: None,
            materialization: None,
            workflow: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    pub directness: Option<Directness>,
    pub transformation: Option<Transformation>,
    pub confidence: Option<Confidence>,
    pub expression: Option<Arc<str>>,
}

/// The indexed, deterministic lineage graph of a compilation.
#[derive(Debug, Default)]
pub struct LineageGraph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    index: HashMap<String, usize>,
    outgoing: Vec<Vec<usize>>,
    incoming: Vec<Vec<usize>>,
}

pub fn model_id(name: &str) -> String {
    phlo_transform_core::ModelName::parse(name).uri()
}

pub fn dataset_id(name: &str) -> String {
    format!("dataset://{name}")
}

pub fn column_id(dataset: &str, column: &str) -> String {
    format!("dataset://{dataset}#{column}")
}

pub fn test_id(name: &str) -> String {
    format!("test://{name}")
}

/// What the lineage graph is built from: the parts of a compilation it reads.
pub struct LineageInputs<'a> {
    pub models: &'a [std::sync::Arc<CompiledModel>],
    pub catalog: &'a CatalogSnapshot,
    pub tests: &'a [CompiledTest],
    pub workspace: &'a Workspace,
}

impl LineageGraph {
    /// Builds the graph from a compilation: its sources, models, inferred schemas, per-model
    /// column lineage and tests.
    pub fn build(c: &LineageInputs) -> LineageGraph {
        let mut g = LineageGraph::default();
        let model_names: BTreeSet<&str> = c.models.iter().map(|m| m.name.as_str()).collect();

        // Sources a model of the same name shadows are unreachable (SPEC §12 order).
        for (name, state) in &c.catalog.sources {
            if model_names.contains(name.as_str()) {
                continue;
            }
            let ds = g.dataset(name, DatasetOrigin::Source);
            match &state.schema {
                SourceSchema::Known(schema) => {
                    for f in schema.fields() {
                        g.column(ds, name, f.name(), Some(f.data_type().to_string()), true);
                    }
                }
                SourceSchema::Unknown(reason) => {
                    g.nodes[ds].confidence = Some(Confidence::Unknown);
                    g.nodes[ds].reason = Some(reason.clone());
                }
            }
        }

        // Every model's dataset and typed columns first, in table order, so a reader whose
        // name sorts before the model it reads finds them there (and does not create them
        // untyped, out of order).
        let mut model_nodes = Vec::with_capacity(c.models.len());
        for (i, m) in c.models.iter().enumerate() {
            let name = m.name.as_str();
            let mut node = Node::new(model_id(name), NodeKind::Model, name.to_string());
            node.path = Some(m.path.clone());
            node.materialization = Some(m.materialization.as_str().to_string());
            node.workflow = workflow_of(c, i);
            let model = g.add(node);
            let ds = g.dataset(name, DatasetOrigin::Model);
            g.edge(model, ds, EdgeKind::Output);
            for dep in crate::model::dependencies(c.models, i) {
                let (crate::Dependency::Model(n) | crate::Dependency::Source(n)) = dep;
                let input = g.dataset_index(&n);
                g.edge(input, model, EdgeKind::Input);
            }
            // A model whose schema or lineage is unknown gets no column nodes.
            let columns = m.schema.as_ref().and_then(|s| s.columns());
            let outputs = match (columns, &m.column_lineage) {
                (Some(columns), Some(lineage)) => Some(
                    columns
                        .iter()
                        .zip(lineage)
                        .map(|(col, derived)| {
                            let ty = Some(col.data_type.clone());
                            g.column(ds, name, &col.name, ty, derived.exact)
                        })
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            };
            model_nodes.push((model, outputs));
        }

        for (m, (model, outputs)) in c.models.iter().zip(model_nodes) {
            let (Some(outputs), Some(lineage)) = (outputs, &m.column_lineage) else {
                g.nodes[model].confidence = Some(Confidence::Unknown);
                g.nodes[model].reason = Some(unknown_reason(m));
                continue;
            };
            let mut all_exact = true;
            for (&out, derived) in outputs.iter().zip(lineage) {
                all_exact &= derived.exact;
                let confidence = if derived.exact {
                    Confidence::Exact
                } else {
                    Confidence::Unknown
                };
                for d in &derived.derivations {
                    let from = g.column_index(&d.input.dataset, &d.input.column);
                    g.edges.push(Edge {
                        from,
                        to: out,
                        kind: EdgeKind::Derives,
                        directness: Some(d.directness),
                        transformation: Some(d.transformation),
                        confidence: Some(confidence),
                        expression: d.expression.clone(),
                    });
                }
            }
            g.nodes[model].confidence = Some(if all_exact {
                Confidence::Exact
            } else {
                Confidence::Unknown
            });
        }

        for t in c.tests {
            let mut node = Node::new(test_id(&t.name), NodeKind::Test, t.name.clone());
            node.path = Some(test_kind(&t.kind).to_string());
            let test = g.add(node);
            for &m in &t.targets {
                let model = c.models[m].name.as_str();
                let ds = g.dataset_index(model);
                g.edge(ds, test, EdgeKind::Tests);
                let columns: Vec<&String> = match &t.kind {
                    TestKind::NotNull { column } => vec![column],
                    TestKind::Unique { columns } => columns.iter().collect(),
                    TestKind::Custom { .. } => vec![],
                };
                for col in columns {
                    if let Some(&ci) = g.index.get(&column_id(model, col)) {
                        g.edge(ci, test, EdgeKind::Tests);
                    }
                }
            }
        }
        g.finish();
        g
    }

    pub fn node(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    pub fn outgoing(&self, node: usize) -> impl Iterator<Item = &Edge> {
        self.outgoing[node].iter().map(|&e| &self.edges[e])
    }

    pub fn incoming(&self, node: usize) -> impl Iterator<Item = &Edge> {
        self.incoming[node].iter().map(|&e| &self.edges[e])
    }

    /// The column nodes of a dataset, in column order.
    pub fn columns_of(&self, dataset: usize) -> Vec<usize> {
        self.outgoing(dataset)
            .filter(|e| e.kind == EdgeKind::Contains)
            .map(|e| e.to)
            .collect()
    }

    fn add(&mut self, node: Node) -> usize {
        if let Some(&i) = self.index.get(&node.id) {
            return i;
        }
        let i = self.nodes.len();
        self.index.insert(node.id.clone(), i);
        self.nodes.push(node);
        i
    }

    fn edge(&mut self, from: usize, to: usize, kind: EdgeKind) {
        self.edges.push(Edge {
            from,
            to,
            kind,
            directness: None,
            transformation: None,
            confidence: None,
            expression: None,
        });
    }

    fn dataset(&mut self, name: &str, origin: DatasetOrigin) -> usize {
        let i = self.dataset_index(name);
        self.nodes[i].origin = Some(origin);
        i
    }

    /// The dataset node of `name`, created (origin unknown yet) if needed.
    fn dataset_index(&mut self, name: &str) -> usize {
        self.add(Node::new(
            dataset_id(name),
            NodeKind::Dataset,
            name.to_string(),
        ))
    }

    fn column(
        &mut self,
        dataset: usize,
        dataset_name: &str,
        column: &str,
        data_type: Option<String>,
        exact: bool,
    ) -> usize {
        let id = column_id(dataset_name, column);
        if let Some(&i) = self.index.get(&id) {
            return i;
        }
        let mut node = Node::new(id, NodeKind::Column, format!("{dataset_name}.{column}"));
        node.dataset = Some(self.nodes[dataset].id.clone());
        node.data_type = data_type;
        node.confidence = Some(if exact {
            Confidence::Exact
        } else {
            Confidence::Unknown
        });
        let i = self.add(node);
        self.edge(dataset, i, EdgeKind::Contains);
        i
    }

    /// The column node of a scanned input; created, untyped, if the input's schema did not
    /// list it.
    fn column_index(&mut self, dataset: &str, column: &str) -> usize {
        match self.index.get(&column_id(dataset, column)) {
            Some(&i) => i,
            None => {
                let ds = self.dataset_index(dataset);
                self.column(ds, dataset, column, None, true)
            }
        }
    }

    fn finish(&mut self) {
        self.outgoing = vec![Vec::new(); self.nodes.len()];
        self.incoming = vec![Vec::new(); self.nodes.len()];
        for (i, e) in self.edges.iter().enumerate() {
            self.outgoing[e.from].push(i);
            self.incoming[e.to].push(i);
        }
    }

    /// The canonical lineage document (lineage.json).
    pub fn document(&self) -> LineageDocument<'_> {
        self.document_for(None)
    }

    /// The document restricted to `nodes` (and the edges between them); all when `None`.
    pub fn document_for(&self, nodes: Option<&BTreeSet<usize>>) -> LineageDocument<'_> {
        let keep = |i: usize| nodes.is_none_or(|n| n.contains(&i));
        LineageDocument {
            version: DOCUMENT_VERSION,
            nodes: (0..self.nodes.len())
                .filter(|&i| keep(i))
                .map(|i| &self.nodes[i])
                .collect(),
            edges: self
                .edges
                .iter()
                .filter(|e| keep(e.from) && keep(e.to))
                .map(|e| EdgeDocument {
                    from: &self.nodes[e.from].id,
                    to: &self.nodes[e.to].id,
                    kind: e.kind,
                    directness: e.directness,
                    transformation: e.transformation,
                    confidence: e.confidence,
                    expression: e.expression.as_deref(),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct LineageDocument<'a> {
    pub version: u32,
    pub nodes: Vec<&'a Node>,
    pub edges: Vec<EdgeDocument<'a>>,
}

#[derive(Serialize)]
pub struct EdgeDocument<'a> {
    pub from: &'a str,
    pub to: &'a str,
    pub kind: EdgeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directness: Option<Directness>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transformation: Option<Transformation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expression: Option<&'a str>,
}

fn test_kind(kind: &TestKind) -> &'static str {
    match kind {
        TestKind::NotNull { .. } => "not_null",
        TestKind::Unique { .. } => "unique",
        TestKind::Custom { .. } => "custom",
    }
}

/// `workflows/<name>/transforms/…` roots belong to workflow `<name>`.
fn workflow_of(c: &LineageInputs, model: usize) -> Option<String> {
    let root = &c.workspace.roots[c.workspace.models[model].root];
    let mut parts = root.path.split('/');
    (parts.next() == Some("workflows"))
        .then(|| parts.next().map(str::to_string))
        .flatten()
}

fn unknown_reason(m: &CompiledModel) -> String {
    match &m.schema {
        Some(crate::model::ModelSchema::Unknown { reason }) => reason.clone(),
        _ if m.has_errors => "the model has errors".to_string(),
        _ => "an upstream model has errors".to_string(),
    }
}
