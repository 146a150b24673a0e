//! The semantic diff of two compilations' lineage graphs (SPEC §55, `lineage --diff`): models,
//! sources and columns added, removed, renamed and retyped; lineage edges added and removed;
//! the consumers each removal orphans.
//!
//! Renames are found by lineage, not by name: a model whose outputs are derived exactly as an
//! old model's were (same column names, same inputs with the same metadata) under another
//! name was moved; a column of a kept dataset with exactly one counterpart of the same
//! derivation was renamed. Edges are compared as multisets *after* renames are applied to the
//! base side, so a rename alone adds and removes no edge.
//!
//! A model whose column lineage is unknown on either side (it has errors, or its schema is
//! unknown) has no column nodes there: its columns and their edges are not compared — the
//! model is listed under `unknown` instead of reporting every column as removed.

use super::{Directness, EdgeKind, LineageGraph, NodeKind, Transformation};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What changed between a base and a candidate lineage graph. Every list is sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LineageDiff {
    pub models: ModelChanges,
    pub sources: SourceChanges,
    pub columns: ColumnChanges,
    pub edges: EdgeChanges,
    /// Removed models, sources and columns with the consumers that read them in the base.
    pub orphaned: Vec<Orphaned>,
    /// Models whose column lineage is unknown on a side: their columns were not compared.
    pub unknown: Vec<UnknownLineage>,
}

impl LineageDiff {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        *self == LineageDiff::default()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ModelChanges {
    pub added: Vec<ModelEntry>,
    pub removed: Vec<ModelEntry>,
    pub renamed: Vec<ModelRename>,
    /// A field of a model kept under its name: `path`, `materialization`.
    pub changed: Vec<FieldChange>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SourceChanges {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ModelEntry {
    pub name: String,
    pub path: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ModelRename {
    pub from: String,
    pub to: String,
    pub from_path: Option<String>,
    pub to_path: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FieldChange {
    pub model: String,
    pub field: &'static str,
    pub from: Option<String>,
    pub to: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ColumnChanges {
    pub added: Vec<ColumnEntry>,
    pub removed: Vec<ColumnEntry>,
    pub renamed: Vec<ColumnRename>,
    pub retyped: Vec<ColumnRetype>,
}

/// A column of a dataset both sides have (named as in the candidate).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ColumnEntry {
    pub dataset: String,
    pub column: String,
    #[serde(rename = "type")]
    pub data_type: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ColumnRename {
    pub dataset: String,
    pub from: String,
    pub to: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ColumnRetype {
    pub dataset: String,
    pub column: String,
    pub from: String,
    pub to: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EdgeChanges {
    pub added: Vec<EdgeEntry>,
    pub removed: Vec<EdgeEntry>,
}

/// An `input`, `derives` or `tests` edge, its ends as node ids of the lineage document
/// (removed edges: the base's ids with renames applied).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct EdgeEntry {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directness: Option<Directness>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transformation: Option<Transformation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
}

/// A removed node (a model's dataset, a source or a column) and what read it in the base; or a
/// renamed column and the readers that lost their lineage with it (they still name the old
/// column).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Orphaned {
    /// The node's id in the base (`dataset://shop.orders`, `dataset://shop.orders#amount`).
    pub removed: String,
    /// `removed`, or `renamed` (then only readers whose lineage is unknown now are listed).
    pub change: &'static str,
    pub consumers: Vec<Consumer>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Consumer {
    /// The consumer's id in the candidate (renames applied).
    pub id: String,
    pub kind: NodeKind,
    pub status: ConsumerStatus,
}

/// What became of a consumer of a removed node in the candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsumerStatus {
    /// Its lineage is unknown in the candidate: typically it still reads what was removed and
    /// no longer compiles.
    LineageUnknown,
    /// It is there with known lineage that no longer reads the removed node.
    ReadsElsewhere,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct UnknownLineage {
    pub model: String,
    /// Why it is unknown in the base (`None`: known there, or no such model).
    pub base: Option<String>,
    /// Why it is unknown in the candidate.
    pub candidate: Option<String>,
}

/// How an edge is compared: its ends and its metadata (confidence is the column's, compared
/// with the column).
type EdgeKey = (
    String,
    String,
    EdgeKind,
    Option<Directness>,
    Option<Transformation>,
    Option<String>,
);

/// A model's lineage whatever its name: its input datasets, and each output column's name and
/// derivation.
type Signature = (Vec<String>, Vec<(String, Vec<EdgeKey>)>);

/// One side's view: the graph and the model nodes by name.
struct Side<'a> {
    g: &'a LineageGraph,
    models: BTreeMap<&'a str, usize>,
}

impl<'a> Side<'a> {
    fn new(g: &'a LineageGraph) -> Self {
        let models = (0..g.nodes.len())
            .filter(|&i| g.nodes[i].kind == NodeKind::Model)
            .map(|i| (g.nodes[i].name.as_str(), i))
            .collect();
        Side { g, models }
    }

    /// A model's output dataset.
    fn output(&self, model: usize) -> Option<usize> {
        self.g
            .outgoing(model)
            .find(|e| e.kind == EdgeKind::Output)
            .map(|e| e.to)
    }

    /// The model producing a dataset.
    fn producer(&self, dataset: usize) -> Option<usize> {
        self.g
            .incoming(dataset)
            .find(|e| e.kind == EdgeKind::Output)
            .map(|e| e.from)
    }

    /// Why a model's (or a dataset's producer's) lineage is unknown, when it is.
    fn unknown_reason(&self, model: usize) -> Option<String> {
        let n = &self.g.nodes[model];
        (n.confidence == Some(super::Confidence::Unknown) && self.columns(model).is_empty())
            .then(|| n.reason.clone().unwrap_or_else(|| "unknown".into()))
    }

    /// Each model's position in an order where a model comes after the models it reads
    /// (ties by name; models in a cycle last, by name).
    fn upstream_first(&self) -> BTreeMap<usize, usize> {
        let readers = |m: usize| -> Vec<usize> {
            self.output(m)
                .map(|ds| {
                    self.g
                        .outgoing(ds)
                        .filter(|e| e.kind == EdgeKind::Input)
                        .map(|e| e.to)
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut waiting: BTreeMap<usize, usize> = self.models.values().map(|&m| (m, 0)).collect();
        for &m in self.models.values() {
            for r in readers(m) {
                *waiting.entry(r).or_default() += 1;
            }
        }
        // Name order among the ready ones: `models` is sorted by name.
        let mut ready: BTreeSet<(&str, usize)> = self
            .models
            .iter()
            .filter(|(_, m)| waiting[*m] == 0)
            .map(|(n, &m)| (*n, m))
            .collect();
        let mut rank = BTreeMap::new();
        while let Some(first) = ready.pop_first() {
            rank.insert(first.1, rank.len());
            for r in readers(first.1) {
                let w = waiting.get_mut(&r).expect("a reader is a model");
                *w -= 1;
                if *w == 0 {
                    ready.insert((self.g.nodes[r].name.as_str(), r));
                }
            }
        }
        for &m in self.models.values() {
            let next = rank.len();
            rank.entry(m).or_insert(next);
        }
        rank
    }

    /// A model's output columns.
    fn columns(&self, model: usize) -> Vec<usize> {
        self.output(model)
            .map(|ds| self.g.columns_of(ds))
            .unwrap_or_default()
    }

    fn sources(&self) -> BTreeMap<&'a str, usize> {
        (0..self.g.nodes.len())
            .filter(|&i| self.g.nodes[i].origin == Some(super::DatasetOrigin::Source))
            .map(|i| (self.g.nodes[i].name.as_str(), i))
            .collect()
    }

    /// The column name of a column node (after its dataset's `#`).
    fn column_name(&self, column: usize) -> &'a str {
        let id = &self.g.nodes[column].id;
        id.rsplit_once('#').map_or(id.as_str(), |(_, c)| c)
    }

    /// The derivation of a column: its incoming derives edges, ends mapped by `map`.
    fn derivation(&self, column: usize, map: &Renames) -> Vec<EdgeKey> {
        let mut edges: Vec<EdgeKey> = self
            .g
            .incoming(column)
            .filter(|e| e.kind == EdgeKind::Derives)
            .map(|e| {
                (
                    map.id(&self.g.nodes[e.from].id),
                    String::new(),
                    e.kind,
                    e.directness,
                    e.transformation,
                    e.expression.as_deref().map(str::to_string),
                )
            })
            .collect();
        edges.sort();
        edges
    }

    /// What identifies a model's lineage whatever its name: its inputs and, per output
    /// column, its name and derivation. `None` when it says nothing (no inputs at all).
    fn signature(&self, model: usize) -> Option<Signature> {
        let none = Renames::default();
        let mut inputs: Vec<String> = self
            .g
            .incoming(model)
            .filter(|e| e.kind == EdgeKind::Input)
            .map(|e| self.g.nodes[e.from].id.clone())
            .collect();
        inputs.sort();
        let columns: Vec<(String, Vec<EdgeKey>)> = self
            .columns(model)
            .into_iter()
            .map(|c| (self.column_name(c).to_string(), self.derivation(c, &none)))
            .collect();
        let says_something = !inputs.is_empty() || columns.iter().any(|(_, d)| !d.is_empty());
        (says_something && !columns.is_empty()).then_some((inputs, columns))
    }
}

/// Base node ids → candidate node ids for renamed models and columns.
#[derive(Default)]
struct Renames(BTreeMap<String, String>);

impl Renames {
    fn id(&self, base: &str) -> String {
        if let Some(to) = self.0.get(base) {
            return to.clone();
        }
        // A column of a renamed dataset.
        if let Some((dataset, column)) = base.rsplit_once('#') {
            if let Some(to) = self.0.get(dataset) {
                return format!("{to}#{column}");
            }
        }
        base.to_string()
    }
}

/// Pairs the items of `old` and `new` whose keys match exactly one item of the other side.
fn unique_pairs<K: Ord + Clone>(old: &[(K, usize)], new: &[(K, usize)]) -> Vec<(usize, usize)> {
    let count = |items: &[(K, usize)]| {
        let mut m: BTreeMap<K, Vec<usize>> = BTreeMap::new();
        for (k, i) in items {
            m.entry(k.clone()).or_default().push(*i);
        }
        m
    };
    let (a, b) = (count(old), count(new));
    a.iter()
        .filter_map(
            |(k, olds)| match (olds.as_slice(), b.get(k).map(Vec::as_slice)) {
                ([o], Some([n])) => Some((*o, *n)),
                _ => None,
            },
        )
        .collect()
}

/// Compares `base` with `candidate`.
pub fn compare(base: &LineageGraph, candidate: &LineageGraph) -> LineageDiff {
    let (b, c) = (Side::new(base), Side::new(candidate));
    let mut out = LineageDiff::default();
    let mut renames = Renames::default();

    // Models: by name, then the rest paired by lineage.
    let removed: Vec<usize> = b
        .models
        .iter()
        .filter(|(n, _)| !c.models.contains_key(*n))
        .map(|(_, &i)| i)
        .collect();
    let added: Vec<usize> = c
        .models
        .iter()
        .filter(|(n, _)| !b.models.contains_key(*n))
        .map(|(_, &i)| i)
        .collect();
    let keyed = |s: &Side, models: &[usize]| {
        models
            .iter()
            .filter_map(|&m| s.signature(m).map(|sig| (sig, m)))
            .collect::<Vec<_>>()
    };
    let moved = unique_pairs(&keyed(&b, &removed), &keyed(&c, &added));
    let (moved_from, moved_to): (BTreeSet<usize>, BTreeSet<usize>) = moved.iter().copied().unzip();
    for &(from, to) in &moved {
        let (bn, cn) = (&base.nodes[from], &candidate.nodes[to]);
        renames.0.insert(bn.id.clone(), cn.id.clone());
        if let (Some(bd), Some(cd)) = (b.output(from), c.output(to)) {
            renames
                .0
                .insert(base.nodes[bd].id.clone(), candidate.nodes[cd].id.clone());
        }
        out.models.renamed.push(ModelRename {
            from: bn.name.clone(),
            to: cn.name.clone(),
            from_path: bn.path.clone(),
            to_path: cn.path.clone(),
        });
    }
    let entry = |g: &LineageGraph, i: usize| ModelEntry {
        name: g.nodes[i].name.clone(),
        path: g.nodes[i].path.clone(),
    };
    out.models.removed = removed
        .iter()
        .filter(|i| !moved_from.contains(i))
        .map(|&i| entry(base, i))
        .collect();
    out.models.added = added
        .iter()
        .filter(|i| !moved_to.contains(i))
        .map(|&i| entry(candidate, i))
        .collect();

    // Models kept under their name (or moved): their fields, their columns.
    let mut kept: Vec<(usize, usize)> = b
        .models
        .iter()
        .filter_map(|(n, &bi)| c.models.get(n).map(|&ci| (bi, ci)))
        .collect();
    kept.extend(moved.iter().copied());
    // Upstream first: a column renamed downstream of a renamed column pairs by its derivation
    // with the upstream rename already applied.
    let rank = b.upstream_first();
    kept.sort_by_key(|&(bi, _)| rank.get(&bi).copied().unwrap_or(usize::MAX));
    let mut veiled: BTreeSet<String> = BTreeSet::new();
    for &(bi, ci) in &kept {
        let (bn, cn) = (&base.nodes[bi], &candidate.nodes[ci]);
        let fields = [
            ("path", &bn.path, &cn.path),
            ("materialization", &bn.materialization, &cn.materialization),
        ];
        for (field, from, to) in fields {
            // A moved model's path change is its rename.
            if from != to && !(field == "path" && moved_to.contains(&ci)) {
                out.models.changed.push(FieldChange {
                    model: cn.name.clone(),
                    field,
                    from: from.clone(),
                    to: to.clone(),
                });
            }
        }
        let (bu, cu) = (b.unknown_reason(bi), c.unknown_reason(ci));
        if bu.is_some() || cu.is_some() {
            out.unknown.push(UnknownLineage {
                model: cn.name.clone(),
                base: bu,
                candidate: cu,
            });
            if let Some(ds) = c.output(ci) {
                veiled.insert(candidate.nodes[ds].id.clone());
            }
            continue;
        }
        if let (Some(bd), Some(cd)) = (b.output(bi), c.output(ci)) {
            compare_columns(&b, bd, &c, cd, &mut renames, &mut out.columns);
        }
    }
    // Models only one side has, with unknown lineage there.
    for &i in &out_only(&removed, &moved_from) {
        if let Some(reason) = b.unknown_reason(i) {
            out.unknown.push(UnknownLineage {
                model: base.nodes[i].name.clone(),
                base: Some(reason),
                candidate: None,
            });
        }
    }
    for &i in &out_only(&added, &moved_to) {
        if let Some(reason) = c.unknown_reason(i) {
            out.unknown.push(UnknownLineage {
                model: candidate.nodes[i].name.clone(),
                base: None,
                candidate: Some(reason),
            });
        }
    }

    // Sources, by name; a source's columns compare like a model's.
    let (bs, cs) = (b.sources(), c.sources());
    out.sources.removed = bs
        .keys()
        .filter(|n| !cs.contains_key(*n))
        .map(|n| n.to_string())
        .collect();
    out.sources.added = cs
        .keys()
        .filter(|n| !bs.contains_key(*n))
        .map(|n| n.to_string())
        .collect();
    for (n, &bd) in &bs {
        if let Some(&cd) = cs.get(n) {
            compare_columns(&b, bd, &c, cd, &mut renames, &mut out.columns);
        }
    }

    out.edges = compare_edges(&b, &c, &renames, &veiled);
    out.orphaned = orphans(&b, &c, &renames, &out);

    out.models.renamed.sort();
    out.models.changed.sort();
    out.columns.added.sort();
    out.columns.removed.sort();
    out.columns.renamed.sort();
    out.columns.retyped.sort();
    out.unknown.sort();
    out
}

fn out_only(items: &[usize], paired: &BTreeSet<usize>) -> Vec<usize> {
    items
        .iter()
        .copied()
        .filter(|i| !paired.contains(i))
        .collect()
}

/// Columns of a dataset both sides have: by name, then removed and added ones paired by their
/// derivation (a rename, recorded in `renames`), then types.
fn compare_columns(
    b: &Side,
    bd: usize,
    c: &Side,
    cd: usize,
    renames: &mut Renames,
    out: &mut ColumnChanges,
) {
    let dataset = c.g.nodes[cd].name.clone();
    let by_name = |s: &Side, ds: usize| -> BTreeMap<String, usize> {
        s.g.columns_of(ds)
            .into_iter()
            .map(|i| (s.column_name(i).to_string(), i))
            .collect()
    };
    let (bc, cc) = (by_name(b, bd), by_name(c, cd));
    let removed: Vec<usize> = bc
        .iter()
        .filter(|(n, _)| !cc.contains_key(*n))
        .map(|(_, &i)| i)
        .collect();
    let added: Vec<usize> = cc
        .iter()
        .filter(|(n, _)| !bc.contains_key(*n))
        .map(|(_, &i)| i)
        .collect();
    // Derivations compare with the renames known so far: the upstream models' (compared
    // first) and the sources'.
    let none = Renames::default();
    let keyed = |s: &Side, cols: &[usize], map: &Renames| {
        cols.iter()
            .map(|&i| (s.derivation(i, map), i))
            .filter(|(d, _)| !d.is_empty())
            .collect::<Vec<_>>()
    };
    let pairs = unique_pairs(&keyed(b, &removed, renames), &keyed(c, &added, &none));
    let (from, to): (BTreeSet<usize>, BTreeSet<usize>) = pairs.iter().copied().unzip();
    for &(bi, ci) in &pairs {
        renames
            .0
            .insert(b.g.nodes[bi].id.clone(), c.g.nodes[ci].id.clone());
        out.renamed.push(ColumnRename {
            dataset: dataset.clone(),
            from: b.column_name(bi).to_string(),
            to: c.column_name(ci).to_string(),
        });
    }
    let entry = |s: &Side, i: usize| ColumnEntry {
        dataset: dataset.clone(),
        column: s.column_name(i).to_string(),
        data_type: s.g.nodes[i].data_type.clone(),
    };
    out.removed.extend(
        removed
            .iter()
            .filter(|i| !from.contains(i))
            .map(|&i| entry(b, i)),
    );
    out.added.extend(
        added
            .iter()
            .filter(|i| !to.contains(i))
            .map(|&i| entry(c, i)),
    );
    let kept = bc
        .iter()
        .filter_map(|(n, &bi)| cc.get(n).map(|&ci| (bi, ci)))
        .chain(pairs.iter().copied());
    for (bi, ci) in kept {
        if let (Some(from), Some(to)) = (&b.g.nodes[bi].data_type, &c.g.nodes[ci].data_type) {
            if from != to {
                out.retyped.push(ColumnRetype {
                    dataset: dataset.clone(),
                    column: c.column_name(ci).to_string(),
                    from: from.clone(),
                    to: to.clone(),
                });
            }
        }
    }
}

/// The compared edges of a side: `input`, `derives` and `tests`, none touching a column of a
/// veiled dataset (lineage unknown on a side), ends mapped by `map`.
fn edge_keys(s: &Side, map: &Renames, veiled: &BTreeSet<String>) -> BTreeMap<EdgeKey, usize> {
    let in_veiled = |i: usize| {
        let n = &s.g.nodes[i];
        n.kind == NodeKind::Column
            && n.dataset
                .as_deref()
                .is_some_and(|d| veiled.contains(&map.id(d)))
    };
    let mut out = BTreeMap::new();
    for e in &s.g.edges {
        if !matches!(
            e.kind,
            EdgeKind::Input | EdgeKind::Derives | EdgeKind::Tests
        ) {
            continue;
        }
        if in_veiled(e.from) || in_veiled(e.to) {
            continue;
        }
        let key = (
            map.id(&s.g.nodes[e.from].id),
            map.id(&s.g.nodes[e.to].id),
            e.kind,
            e.directness,
            e.transformation,
            e.expression.as_deref().map(str::to_string),
        );
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

/// Edges as multisets: parallel edges with the same metadata count, so one more or one fewer
/// is a change.
fn compare_edges(b: &Side, c: &Side, renames: &Renames, veiled: &BTreeSet<String>) -> EdgeChanges {
    // The base's veiled datasets are the candidate's ids too (they are models kept).
    let (be, ce) = (
        edge_keys(b, renames, veiled),
        edge_keys(c, &Renames::default(), veiled),
    );
    let entry = |k: &EdgeKey| EdgeEntry {
        from: k.0.clone(),
        to: k.1.clone(),
        kind: k.2,
        directness: k.3,
        transformation: k.4,
        expression: k.5.clone(),
    };
    let surplus = |a: &BTreeMap<EdgeKey, usize>, other: &BTreeMap<EdgeKey, usize>| {
        a.iter()
            .flat_map(|(k, &n)| {
                let extra = n.saturating_sub(other.get(k).copied().unwrap_or(0));
                std::iter::repeat_n(entry(k), extra)
            })
            .collect::<Vec<_>>()
    };
    EdgeChanges {
        added: surplus(&ce, &be),
        removed: surplus(&be, &ce),
    }
}

/// For each removed node, the base's direct readers that the candidate still has.
fn orphans(b: &Side, c: &Side, renames: &Renames, d: &LineageDiff) -> Vec<Orphaned> {
    let bg = b.g;
    let mut removed: Vec<usize> = Vec::new();
    for m in &d.models.removed {
        if let Some(ds) = b.models.get(m.name.as_str()).and_then(|&i| b.output(i)) {
            removed.push(ds);
        }
    }
    let sources = b.sources();
    removed.extend(
        d.sources
            .removed
            .iter()
            .filter_map(|s| sources.get(s.as_str())),
    );
    let mut renamed: Vec<usize> = Vec::new();
    if !d.columns.removed.is_empty() || !d.columns.renamed.is_empty() {
        // Columns are named by the candidate's dataset: the base's, renames applied.
        let by_id: BTreeMap<String, usize> = (0..bg.nodes.len())
            .filter(|&i| bg.nodes[i].kind == NodeKind::Column)
            .map(|i| (renames.id(&bg.nodes[i].id), i))
            .collect();
        removed.extend(
            d.columns
                .removed
                .iter()
                .filter_map(|col| by_id.get(&super::column_id(&col.dataset, &col.column))),
        );
        renamed.extend(
            d.columns
                .renamed
                .iter()
                .filter_map(|col| by_id.get(&super::column_id(&col.dataset, &col.to))),
        );
    }
    let mut out = Vec::new();
    let changes = removed
        .into_iter()
        .map(|r| (r, "removed"))
        .chain(renamed.into_iter().map(|r| (r, "renamed")));
    for (r, change) in changes {
        let mut readers: BTreeSet<usize> = BTreeSet::new();
        let mut read = |node: usize| {
            for e in bg.outgoing(node) {
                if matches!(
                    e.kind,
                    EdgeKind::Input | EdgeKind::Derives | EdgeKind::Tests
                ) {
                    readers.insert(e.to);
                }
            }
        };
        read(r);
        if bg.nodes[r].kind == NodeKind::Dataset {
            for col in bg.columns_of(r) {
                read(col);
            }
        }
        let mut consumers: Vec<Consumer> = readers
            .into_iter()
            .filter_map(|i| consumer(b, c, renames, i))
            .filter(|k| change == "removed" || k.status == ConsumerStatus::LineageUnknown)
            .collect();
        consumers.sort();
        consumers.dedup();
        if !consumers.is_empty() {
            out.push(Orphaned {
                removed: bg.nodes[r].id.clone(),
                change,
                consumers,
            });
        }
    }
    out.sort();
    out
}

/// A base reader as the candidate has it: `None` when the candidate removed it too.
fn consumer(b: &Side, c: &Side, renames: &Renames, reader: usize) -> Option<Consumer> {
    let n = &b.g.nodes[reader];
    let id = renames.id(&n.id);
    if let Some(ci) = c.g.node(&id) {
        let status = match n.kind {
            NodeKind::Model if c.unknown_reason(ci).is_some() => ConsumerStatus::LineageUnknown,
            _ => ConsumerStatus::ReadsElsewhere,
        };
        return Some(Consumer {
            id,
            kind: n.kind,
            status,
        });
    }
    // A column missing from the candidate because its model's lineage is unknown there.
    if n.kind == NodeKind::Column {
        let dataset = renames.id(n.dataset.as_deref()?);
        let producer = c.producer(c.g.node(&dataset)?)?;
        c.unknown_reason(producer)?;
        return Some(Consumer {
            id,
            kind: n.kind,
            status: ConsumerStatus::LineageUnknown,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::{
        column_id, dataset_id, model_id, Confidence, DatasetOrigin, Edge, Node, NodeKind,
    };
    use super::*;

    /// A graph built by hand: sources and models with their columns' derivations.
    #[derive(Default)]
    struct Build {
        g: LineageGraph,
    }

    /// One derivation: input column (`dataset.column` as dataset, column), directness,
    /// transformation, expression.
    type From<'a> = (&'a str, &'a str, Directness, Transformation, &'a str);

    const D: Directness = Directness::Direct;
    const I: Directness = Directness::Indirect;
    const ID: Transformation = Transformation::Identity;

    impl Build {
        fn source(mut self, name: &str, columns: &[(&str, &str)]) -> Self {
            let ds = self.g.dataset(name, DatasetOrigin::Source);
            for (c, ty) in columns {
                self.g.column(ds, name, c, Some(ty.to_string()), true);
            }
            self
        }

        fn model(
            mut self,
            name: &str,
            path: &str,
            inputs: &[&str],
            columns: &[(&str, &str, &[From])],
        ) -> Self {
            let mut node = Node::new(model_id(name), NodeKind::Model, name.to_string());
            node.path = Some(path.to_string());
            node.materialization = Some("table".into());
            node.confidence = Some(Confidence::Exact);
            let model = self.g.add(node);
            let ds = self.g.dataset(name, DatasetOrigin::Model);
            self.g.edge(model, ds, EdgeKind::Output);
            for input in inputs {
                let i = self.g.dataset_index(input);
                self.g.edge(i, model, EdgeKind::Input);
            }
            for (c, ty, from) in columns {
                let out = self.g.column(ds, name, c, Some(ty.to_string()), true);
                for (fd, fc, directness, transformation, expression) in from.iter() {
                    let from = self.g.column_index(fd, fc);
                    self.g.edges.push(Edge {
                        from,
                        to: out,
                        kind: EdgeKind::Derives,
                        directness: Some(*directness),
                        transformation: Some(*transformation),
                        confidence: Some(Confidence::Exact),
                        expression: Some(expression.to_string().into()),
                    });
                }
            }
            self
        }

        /// A model with errors: no column nodes, lineage unknown.
        fn broken(mut self, name: &str, inputs: &[&str]) -> Self {
            let mut node = Node::new(model_id(name), NodeKind::Model, name.to_string());
            node.path = Some(format!("transforms/{name}.sql"));
            node.materialization = Some("table".into());
            node.confidence = Some(Confidence::Unknown);
            node.reason = Some("the model has errors".into());
            let model = self.g.add(node);
            let ds = self.g.dataset(name, DatasetOrigin::Model);
            self.g.edge(model, ds, EdgeKind::Output);
            for input in inputs {
                let i = self.g.dataset_index(input);
                self.g.edge(i, model, EdgeKind::Input);
            }
            self
        }

        fn done(mut self) -> LineageGraph {
            self.g.finish();
            self.g
        }
    }

    fn raw() -> Build {
        Build::default().source("raw.orders", &[("id", "Int64"), ("amount", "Float64")])
    }

    fn orders(b: Build, name: &str, amount: &str) -> Build {
        b.model(
            name,
            &format!("transforms/{}.sql", name.replace('.', "/")),
            &["raw.orders"],
            &[
                ("id", "Int64", &[("raw.orders", "id", D, ID, "o.id")]),
                (
                    amount,
                    "Float64",
                    &[("raw.orders", "amount", D, ID, "o.amount")],
                ),
            ],
        )
    }

    #[test]
    fn identical_graphs_differ_in_nothing() {
        let a = orders(raw(), "shop.orders", "amount").done();
        let b = orders(raw(), "shop.orders", "amount").done();
        assert!(compare(&a, &b).is_empty(), "{:?}", compare(&a, &b));
    }

    #[test]
    fn a_column_renamed_is_found_by_its_lineage_and_adds_no_edge() {
        let base = orders(raw(), "shop.orders", "amount").done();
        let cand = orders(raw(), "shop.orders", "total").done();
        let d = compare(&base, &cand);
        assert_eq!(
            d.columns.renamed,
            [ColumnRename {
                dataset: "shop.orders".into(),
                from: "amount".into(),
                to: "total".into()
            }]
        );
        assert!(d.columns.added.is_empty() && d.columns.removed.is_empty());
        assert_eq!(d.edges, EdgeChanges::default());
        assert!(d.orphaned.is_empty());

        // A reader still naming the old column lost its lineage: the rename orphans it.
        let reader = |b: Build, from: &[From]| {
            b.model(
                "shop.report",
                "transforms/shop/report.sql",
                &["shop.orders"],
                &[("sum", "Float64", from)],
            )
        };
        let base = reader(
            orders(raw(), "shop.orders", "amount"),
            &[("shop.orders", "amount", D, ID, "sum(amount)")],
        )
        .done();
        let cand = orders(raw(), "shop.orders", "total")
            .broken("shop.report", &["shop.orders"])
            .done();
        assert_eq!(
            compare(&base, &cand).orphaned,
            [Orphaned {
                removed: column_id("shop.orders", "amount"),
                change: "renamed",
                consumers: vec![Consumer {
                    id: column_id("shop.report", "sum"),
                    kind: NodeKind::Column,
                    status: ConsumerStatus::LineageUnknown,
                }],
            }]
        );
    }

    #[test]
    fn two_columns_of_one_derivation_are_no_rename() {
        let base = orders(raw(), "shop.orders", "amount").done();
        // `amount` goes, `a1` and `a2` both derive like it did: ambiguous, so no rename.
        let cand = raw()
            .model(
                "shop.orders",
                "transforms/shop/orders.sql",
                &["raw.orders"],
                &[
                    ("id", "Int64", &[("raw.orders", "id", D, ID, "o.id")]),
                    (
                        "a1",
                        "Float64",
                        &[("raw.orders", "amount", D, ID, "o.amount")],
                    ),
                    (
                        "a2",
                        "Float64",
                        &[("raw.orders", "amount", D, ID, "o.amount")],
                    ),
                ],
            )
            .done();
        let d = compare(&base, &cand);
        assert!(d.columns.renamed.is_empty());
        let names = |v: &[ColumnEntry]| v.iter().map(|c| c.column.clone()).collect::<Vec<_>>();
        assert_eq!(names(&d.columns.added), ["a1", "a2"]);
        assert_eq!(names(&d.columns.removed), ["amount"]);
        assert_eq!(d.edges.added.len(), 2);
        assert_eq!(d.edges.removed.len(), 1);
    }

    #[test]
    fn a_moved_model_is_a_rename_and_its_readers_edges_follow_it() {
        let reader = |b: Build, upstream: &str| {
            b.model(
                "shop.report",
                "transforms/shop/report.sql",
                &[upstream],
                &[(
                    "total",
                    "Float64",
                    &[(upstream, "amount", D, ID, "sum(amount)")],
                )],
            )
        };
        let base = reader(orders(raw(), "shop.orders", "amount"), "shop.orders").done();
        let cand = reader(orders(raw(), "sales.orders", "amount"), "sales.orders").done();
        let d = compare(&base, &cand);
        assert_eq!(
            d.models.renamed,
            [ModelRename {
                from: "shop.orders".into(),
                to: "sales.orders".into(),
                from_path: Some("transforms/shop/orders.sql".into()),
                to_path: Some("transforms/sales/orders.sql".into()),
            }]
        );
        assert!(d.models.added.is_empty() && d.models.removed.is_empty());
        assert_eq!(d.edges, EdgeChanges::default(), "{:?}", d.edges);
        assert!(d.columns == ColumnChanges::default());
    }

    #[test]
    fn a_removed_column_orphans_its_readers_and_a_new_edge_is_added() {
        let reader = |b: Build, from: &[From]| {
            b.model(
                "shop.report",
                "transforms/shop/report.sql",
                &["shop.orders"],
                &[("total", "Float64", from)],
            )
        };
        let base = reader(
            orders(raw(), "shop.orders", "amount"),
            &[("shop.orders", "amount", D, ID, "sum(amount)")],
        )
        .done();
        // The candidate drops `amount` from orders; the report now breaks.
        let cand = raw()
            .model(
                "shop.orders",
                "transforms/shop/orders.sql",
                &["raw.orders"],
                &[(
                    "id",
                    "Int64",
                    &[
                        ("raw.orders", "id", D, ID, "o.id"),
                        (
                            "raw.orders",
                            "amount",
                            I,
                            Transformation::Filter,
                            "o.amount > 0",
                        ),
                    ],
                )],
            )
            .broken("shop.report", &["shop.orders"])
            .done();
        let d = compare(&base, &cand);
        assert_eq!(
            d.columns.removed,
            [ColumnEntry {
                dataset: "shop.orders".into(),
                column: "amount".into(),
                data_type: Some("Float64".into())
            }]
        );
        assert_eq!(
            d.orphaned,
            [Orphaned {
                removed: column_id("shop.orders", "amount"),
                change: "removed",
                consumers: vec![Consumer {
                    id: column_id("shop.report", "total"),
                    kind: NodeKind::Column,
                    status: ConsumerStatus::LineageUnknown,
                }],
            }]
        );
        assert_eq!(
            d.unknown,
            [UnknownLineage {
                model: "shop.report".into(),
                base: None,
                candidate: Some("the model has errors".into()),
            }]
        );
        // The report's own edges are veiled; the new filter edge is added, amount's removed.
        assert_eq!(
            d.edges.added,
            [EdgeEntry {
                from: column_id("raw.orders", "amount"),
                to: column_id("shop.orders", "id"),
                kind: EdgeKind::Derives,
                directness: Some(I),
                transformation: Some(Transformation::Filter),
                expression: Some("o.amount > 0".into()),
            }]
        );
        assert_eq!(
            d.edges.removed,
            [EdgeEntry {
                from: column_id("raw.orders", "amount"),
                to: column_id("shop.orders", "amount"),
                kind: EdgeKind::Derives,
                directness: Some(D),
                transformation: Some(ID),
                expression: Some("o.amount".into()),
            }]
        );
    }

    #[test]
    fn models_and_sources_added_removed_and_retyped_columns() {
        let base = orders(raw(), "shop.orders", "amount")
            .source("raw.gone", &[("x", "Int64")])
            .model(
                "shop.old",
                "transforms/shop/old.sql",
                &["raw.gone"],
                &[("x", "Int64", &[("raw.gone", "x", D, ID, "x")])],
            )
            .done();
        let cand = Build::default()
            .source(
                "raw.orders",
                &[("id", "Int64"), ("amount", "Decimal128(10, 2)")],
            )
            .model(
                "shop.orders",
                "transforms/shop/orders.sql",
                &["raw.orders"],
                &[
                    ("id", "Int64", &[("raw.orders", "id", D, ID, "o.id")]),
                    (
                        "amount",
                        "Decimal128(10, 2)",
                        &[("raw.orders", "amount", D, ID, "o.amount")],
                    ),
                ],
            )
            .model(
                "shop.new",
                "transforms/shop/new.sql",
                &["shop.orders"],
                &[(
                    "n",
                    "Int64",
                    &[(
                        "shop.orders",
                        "id",
                        D,
                        Transformation::Aggregation,
                        "count(id)",
                    )],
                )],
            )
            .done();
        let d = compare(&base, &cand);
        assert_eq!(
            d.models.added,
            [ModelEntry {
                name: "shop.new".into(),
                path: Some("transforms/shop/new.sql".into())
            }]
        );
        assert_eq!(
            d.models.removed,
            [ModelEntry {
                name: "shop.old".into(),
                path: Some("transforms/shop/old.sql".into())
            }]
        );
        assert_eq!(d.sources.removed, ["raw.gone"]);
        assert!(d.sources.added.is_empty());
        let retyped: Vec<(&str, &str)> = d
            .columns
            .retyped
            .iter()
            .map(|r| (r.dataset.as_str(), r.column.as_str()))
            .collect();
        assert_eq!(
            retyped,
            [("raw.orders", "amount"), ("shop.orders", "amount")]
        );
        // The removed source orphans nothing the candidate keeps (its reader went too).
        assert!(d.orphaned.is_empty(), "{:?}", d.orphaned);
        let added: Vec<(&str, &str)> = d
            .edges
            .added
            .iter()
            .map(|e| (e.from.as_str(), e.to.as_str()))
            .collect();
        assert_eq!(
            added,
            [
                (
                    dataset_id("shop.orders").as_str(),
                    model_id("shop.new").as_str()
                ),
                (
                    column_id("shop.orders", "id").as_str(),
                    column_id("shop.new", "n").as_str()
                ),
            ]
        );
        assert_eq!(d.edges.removed.len(), 2);
    }

    #[test]
    fn a_column_renamed_below_a_renamed_column_pairs_upstream_first() {
        // `a.report` sorts before `shop.orders`, which it reads: compared by name order, its
        // column's derivation would be compared before the upstream rename is known.
        let graph = |upstream: &str, downstream: &str| {
            orders(raw(), "shop.orders", upstream)
                .model(
                    "a.report",
                    "transforms/a/report.sql",
                    &["shop.orders"],
                    &[(
                        downstream,
                        "Float64",
                        &[(
                            "shop.orders",
                            upstream,
                            D,
                            Transformation::Aggregation,
                            "sum(x)",
                        )],
                    )],
                )
                .done()
        };
        let d = compare(&graph("amount", "amount"), &graph("total", "total"));
        let renamed: Vec<(&str, &str, &str)> = d
            .columns
            .renamed
            .iter()
            .map(|r| (r.dataset.as_str(), r.from.as_str(), r.to.as_str()))
            .collect();
        assert_eq!(
            renamed,
            [
                ("a.report", "amount", "total"),
                ("shop.orders", "amount", "total")
            ]
        );
        assert_eq!(d.edges, EdgeChanges::default(), "{:?}", d.edges);
    }

    #[test]
    fn parallel_edges_compare_as_multisets() {
        let two = |n: usize| {
            let from: Vec<From> = (0..n)
                .map(|_| ("raw.orders", "amount", D, ID, "o.amount"))
                .collect();
            raw()
                .model(
                    "shop.orders",
                    "transforms/shop/orders.sql",
                    &["raw.orders"],
                    &[("amount", "Float64", &from)],
                )
                .done()
        };
        let d = compare(&two(1), &two(2));
        assert_eq!(d.edges.added.len(), 1);
        assert!(d.edges.removed.is_empty());
    }
}
