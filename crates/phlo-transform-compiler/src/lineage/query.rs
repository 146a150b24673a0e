//! Reports over the lineage graph: a model's upstream and downstream chain, a column's inputs
//! and chain, and the impact of changing a model, source or column. Walks are breadth-first
//! over the indexed graph; nothing here re-derives lineage.

use super::{
    column_id, dataset_id, Confidence, DatasetOrigin, Directness, EdgeKind, LineageGraph, NodeKind,
    Transformation,
};
use serde::Serialize;
use std::collections::{BTreeSet, VecDeque};

/// What a `lineage`/`impact` argument names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A dataset node (a model's output or a source).
    Dataset(usize),
    Column(usize),
}

/// One input edge of a column.
#[derive(Clone, Debug, Serialize)]
pub struct InputEdge {
    pub column: String,
    pub transformation: Transformation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
}

/// A node reached by a walk: how far, and whether a path of direct edges only reaches it.
#[derive(Clone, Debug, Serialize)]
pub struct Reach {
    pub name: String,
    pub depth: usize,
    pub via: Directness,
}

#[derive(Clone, Debug, Serialize)]
pub struct ColumnReport {
    pub column: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub data_type: Option<String>,
    pub confidence: Confidence,
    pub direct: Vec<InputEdge>,
    pub indirect: Vec<InputEdge>,
    pub upstream: Vec<Reach>,
    pub downstream: Vec<Reach>,
}

/// One column of a model report, with its one-hop inputs.
#[derive(Clone, Debug, Serialize)]
pub struct ModelColumn {
    pub name: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub data_type: Option<String>,
    pub confidence: Confidence,
    pub direct: Vec<String>,
    pub indirect: Vec<String>,
}

/// A dataset reached by a model-level walk.
#[derive(Clone, Debug, Serialize)]
pub struct DatasetStep {
    pub name: String,
    pub origin: String,
    pub depth: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct ModelReport {
    pub dataset: String,
    pub origin: String,
    pub confidence: Confidence,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub upstream: Vec<DatasetStep>,
    pub downstream: Vec<DatasetStep>,
    pub columns: Vec<ModelColumn>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ImpactedColumn {
    pub column: String,
    pub model: String,
    pub depth: usize,
    pub via: Directness,
}

#[derive(Clone, Debug, Serialize)]
pub struct ImpactReport {
    pub target: String,
    pub columns: Vec<ImpactedColumn>,
    pub models: Vec<String>,
    pub tests: Vec<String>,
    pub workflows: Vec<String>,
    /// Downstream models whose column lineage is unknown: they read an affected dataset, and
    /// may or may not use what changed.
    pub unknown: Vec<String>,
}

impl LineageGraph {
    /// Resolves `text` to a dataset (`shared.orders`, `model://shared/orders`, a source name)
    /// or a column (`shared.orders.amount`). Unknown names give did-you-mean candidates.
    pub fn resolve(&self, text: &str) -> Result<Target, Vec<String>> {
        let name = phlo_transform_core::ModelName::parse(text).to_string();
        if let Some(i) = self.node(&dataset_id(&name)) {
            return Ok(Target::Dataset(i));
        }
        if let Some((dataset, column)) = name.rsplit_once('.') {
            if let Some(i) = self.node(&column_id(dataset, column)) {
                return Ok(Target::Column(i));
            }
        }
        let names = self
            .nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Dataset | NodeKind::Column))
            .map(|n| n.name.as_str());
        Err(phlo_transform_core::did_you_mean(&name, names))
    }

    pub fn column_report(&self, column: usize) -> ColumnReport {
        let node = &self.nodes[column];
        let (direct, indirect) = self.inputs(column);
        ColumnReport {
            column: node.name.clone(),
            data_type: node.data_type.clone(),
            confidence: node.confidence.unwrap_or(Confidence::Exact),
            direct,
            indirect,
            upstream: self.reach(&[column], Walk::Upstream),
            downstream: self.reach(&[column], Walk::Downstream),
        }
    }

    pub fn model_report(&self, dataset: usize) -> ModelReport {
        let node = &self.nodes[dataset];
        let producer = self.producer(dataset);
        let (confidence, reason) = match producer.map(|m| &self.nodes[m]) {
            Some(m) => (m.confidence, m.reason.clone()),
            None => (node.confidence, node.reason.clone()),
        };
        let columns = self
            .columns_of(dataset)
            .into_iter()
            .map(|c| {
                let (direct, indirect) = self.inputs(c);
                let names = |edges: Vec<InputEdge>| edges.into_iter().map(|e| e.column).collect();
                ModelColumn {
                    name: column_name(&self.nodes[c].name, &node.name),
                    data_type: self.nodes[c].data_type.clone(),
                    confidence: self.nodes[c].confidence.unwrap_or(Confidence::Exact),
                    direct: names(direct),
                    indirect: names(indirect),
                }
            })
            .collect();
        ModelReport {
            dataset: node.name.clone(),
            origin: origin_name(node.origin.as_ref()),
            confidence: confidence.unwrap_or(Confidence::Exact),
            reason,
            upstream: self.dataset_walk(dataset, Walk::Upstream),
            downstream: self.dataset_walk(dataset, Walk::Downstream),
            columns,
        }
    }

    /// What changing `target` reaches downstream.
    pub fn impact(&self, target: Target) -> ImpactReport {
        self.impact_of_all(&[target])
    }

    /// What changing all of `targets` at once reaches (`impact --since main`: the blast
    /// radius of a diff). The targets themselves are not reported as impacted.
    pub fn impact_of_all(&self, targets: &[Target]) -> ImpactReport {
        let name = targets
            .iter()
            .map(|&t| match t {
                Target::Column(n) | Target::Dataset(n) => self.nodes[n].name.as_str(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let target_datasets: Vec<usize> = targets
            .iter()
            .filter_map(|&t| match t {
                Target::Dataset(d) => Some(d),
                Target::Column(_) => None,
            })
            .collect();
        let start: Vec<usize> = targets
            .iter()
            .flat_map(|&t| match t {
                Target::Column(c) => vec![c],
                Target::Dataset(d) => self.columns_of(d),
            })
            .collect();
        let mut affected_datasets: BTreeSet<usize> =
            start.iter().filter_map(|&c| self.dataset_of(c)).collect();
        affected_datasets.extend(&target_datasets);
        let mut columns = Vec::new();
        let mut models = BTreeSet::new();
        let mut tests = BTreeSet::new();
        let mut touched: BTreeSet<usize> = start.iter().copied().collect();
        for (c, r) in self.reach_nodes(&start, Walk::Downstream) {
            touched.insert(c);
            let Some(ds) = self.dataset_of(c) else {
                continue;
            };
            affected_datasets.insert(ds);
            let model = self.nodes[ds].name.clone();
            models.insert(model.clone());
            columns.push(ImpactedColumn {
                column: self.nodes[c].name.clone(),
                model,
                depth: r.0,
                via: r.1,
            });
        }
        // A model target reaches every downstream reader, column lineage known or not.
        for &d in &target_datasets {
            for step in self.dataset_walk(d, Walk::Downstream) {
                if step.origin == "model" {
                    models.insert(step.name);
                }
            }
            for e in self.outgoing(d).filter(|e| e.kind == EdgeKind::Tests) {
                tests.insert(self.nodes[e.to].name.clone());
            }
        }
        for &c in &touched {
            for e in self.outgoing(c).filter(|e| e.kind == EdgeKind::Tests) {
                tests.insert(self.nodes[e.to].name.clone());
            }
        }
        // Custom tests read whole datasets: any affected dataset's custom tests are reached.
        let mut unknown = BTreeSet::new();
        for &ds in &affected_datasets {
            for e in self.outgoing(ds) {
                match e.kind {
                    EdgeKind::Tests if self.nodes[e.to].path.as_deref() == Some("custom") => {
                        tests.insert(self.nodes[e.to].name.clone());
                    }
                    EdgeKind::Input if self.nodes[e.to].confidence == Some(Confidence::Unknown) => {
                        unknown.insert(self.nodes[e.to].name.clone());
                    }
                    _ => {}
                }
            }
        }
        for &d in &target_datasets {
            models.remove(&self.nodes[d].name);
        }
        let workflows = models
            .iter()
            .chain(unknown.iter())
            .filter_map(|m| self.node(&super::model_id(m)))
            .filter_map(|m| self.nodes[m].workflow.clone())
            .collect::<BTreeSet<_>>();
        ImpactReport {
            target: name,
            columns,
            models: models.into_iter().collect(),
            tests: tests.into_iter().collect(),
            workflows: workflows.into_iter().collect(),
            unknown: unknown.into_iter().collect(),
        }
    }

    /// The nodes `lineage --format graph <target>` shows: the target's upstream and downstream
    /// datasets (or columns), the models producing them, their columns and their tests.
    pub fn subgraph(&self, target: Target) -> BTreeSet<usize> {
        let mut keep = BTreeSet::new();
        let datasets: BTreeSet<usize> = match target {
            Target::Dataset(d) => {
                let mut all = BTreeSet::from([d]);
                for walk in [Walk::Upstream, Walk::Downstream] {
                    for step in self.dataset_walk(d, walk) {
                        all.extend(self.node(&dataset_id(&step.name)));
                    }
                }
                for &ds in &all {
                    keep.extend(self.columns_of(ds));
                }
                all
            }
            Target::Column(c) => {
                keep.insert(c);
                for walk in [Walk::Upstream, Walk::Downstream] {
                    keep.extend(self.reach_nodes(&[c], walk).into_iter().map(|(n, _)| n));
                }
                keep.iter().filter_map(|&c| self.dataset_of(c)).collect()
            }
        };
        for &ds in &datasets {
            keep.insert(ds);
            keep.extend(self.producer(ds));
        }
        let tests: Vec<usize> = keep
            .iter()
            .flat_map(|&n| self.outgoing(n))
            .filter(|e| e.kind == EdgeKind::Tests)
            .map(|e| e.to)
            .collect();
        keep.extend(tests);
        keep
    }

    /// The derives edges into `column`, direct inputs apart from indirect ones.
    fn inputs(&self, column: usize) -> (Vec<InputEdge>, Vec<InputEdge>) {
        let mut direct = Vec::new();
        let mut indirect = Vec::new();
        for e in self
            .incoming(column)
            .filter(|e| e.kind == EdgeKind::Derives)
        {
            let edge = InputEdge {
                column: self.nodes[e.from].name.clone(),
                transformation: e.transformation.unwrap_or(Transformation::Identity),
                expression: e.expression.as_deref().map(str::to_string),
            };
            match e.directness {
                Some(Directness::Indirect) => indirect.push(edge),
                _ => direct.push(edge),
            }
        }
        (direct, indirect)
    }

    /// The model producing `dataset`, if a model does.
    fn producer(&self, dataset: usize) -> Option<usize> {
        self.incoming(dataset)
            .find(|e| e.kind == EdgeKind::Output)
            .map(|e| e.from)
    }

    fn dataset_of(&self, column: usize) -> Option<usize> {
        self.incoming(column)
            .find(|e| e.kind == EdgeKind::Contains)
            .map(|e| e.from)
    }

    fn reach(&self, start: &[usize], walk: Walk) -> Vec<Reach> {
        self.reach_nodes(start, walk)
            .into_iter()
            .map(|(n, (depth, via))| Reach {
                name: self.nodes[n].name.clone(),
                depth,
                via,
            })
            .collect()
    }

    /// Columns reached over derives edges from `start` (excluded), ordered by depth then
    /// name. `via` is direct when a path of direct edges only reaches the column.
    fn reach_nodes(&self, start: &[usize], walk: Walk) -> Vec<(usize, (usize, Directness))> {
        let mut direct = vec![false; self.nodes.len()];
        for (n, _) in self.bfs(start, walk, true) {
            direct[n] = true;
        }
        let mut out: Vec<(usize, (usize, Directness))> = self
            .bfs(start, walk, false)
            .into_iter()
            .map(|(n, depth)| {
                let via = if direct[n] {
                    Directness::Direct
                } else {
                    Directness::Indirect
                };
                (n, (depth, via))
            })
            .collect();
        out.sort_unstable_by(|a, b| {
            (a.1 .0, &self.nodes[a.0].name).cmp(&(b.1 .0, &self.nodes[b.0].name))
        });
        out
    }

    /// Nodes reached over derives edges from `start` (excluded) with their depth, in
    /// breadth-first order.
    fn bfs(&self, start: &[usize], walk: Walk, direct_only: bool) -> Vec<(usize, usize)> {
        let mut seen = vec![false; self.nodes.len()];
        for &s in start {
            seen[s] = true;
        }
        let mut out = Vec::new();
        let mut queue: VecDeque<(usize, usize)> = start.iter().map(|&s| (s, 0)).collect();
        while let Some((n, d)) = queue.pop_front() {
            let edges = match walk {
                Walk::Downstream => &self.outgoing[n],
                Walk::Upstream => &self.incoming[n],
            };
            for e in edges.iter().map(|&e| &self.edges[e]) {
                if e.kind != EdgeKind::Derives
                    || direct_only && e.directness == Some(Directness::Indirect)
                {
                    continue;
                }
                let next = match walk {
                    Walk::Downstream => e.to,
                    Walk::Upstream => e.from,
                };
                if !seen[next] {
                    seen[next] = true;
                    out.push((next, d + 1));
                    queue.push_back((next, d + 1));
                }
            }
        }
        out
    }

    /// Datasets upstream (read, transitively) or downstream (produced from it) of `dataset`.
    fn dataset_walk(&self, dataset: usize, walk: Walk) -> Vec<DatasetStep> {
        let mut seen = BTreeSet::from([dataset]);
        let mut queue = VecDeque::from([(dataset, 0usize)]);
        let mut out = Vec::new();
        while let Some((ds, d)) = queue.pop_front() {
            let next: Vec<usize> = match walk {
                // dataset ◀─output─ model ◀─input─ dataset
                Walk::Upstream => self
                    .producer(ds)
                    .map(|m| {
                        self.incoming(m)
                            .filter(|e| e.kind == EdgeKind::Input)
                            .map(|e| e.from)
                            .collect()
                    })
                    .unwrap_or_default(),
                // dataset ─input▶ model ─output▶ dataset
                Walk::Downstream => self
                    .outgoing(ds)
                    .filter(|e| e.kind == EdgeKind::Input)
                    .flat_map(|e| self.outgoing(e.to).filter(|o| o.kind == EdgeKind::Output))
                    .map(|e| e.to)
                    .collect(),
            };
            for n in next {
                if seen.insert(n) {
                    out.push(DatasetStep {
                        name: self.nodes[n].name.clone(),
                        origin: origin_name(self.nodes[n].origin.as_ref()),
                        depth: d + 1,
                    });
                    queue.push_back((n, d + 1));
                }
            }
        }
        out.sort_by(|a, b| (a.depth, &a.name).cmp(&(b.depth, &b.name)));
        out
    }
}

#[derive(Clone, Copy)]
enum Walk {
    Upstream,
    Downstream,
}

fn origin_name(origin: Option<&DatasetOrigin>) -> String {
    match origin {
        Some(DatasetOrigin::Source) => "source",
        Some(DatasetOrigin::Model) => "model",
        None => "unknown",
    }
    .to_string()
}

fn column_name(full: &str, dataset: &str) -> String {
    full.strip_prefix(dataset)
        .and_then(|s| s.strip_prefix('.'))
        .unwrap_or(full)
        .to_string()
}
