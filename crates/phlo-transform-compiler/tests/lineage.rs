//! Column lineage against hand-written expectations: testdata/lineage has one model per plan
//! node type and, in expected/<model>.edges, every derives edge into its columns
//! (`column <- input direct|indirect transformation`). The edges must match exactly.

use phlo_transform_compiler::lineage::{EdgeKind, LineageGraph, NodeKind};
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_project::Workspace;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(name)
}

fn compile(dir: &Path) -> Compilation {
    let ws = Workspace::load(dir).expect("workspace loads");
    let (catalog, diags) = CatalogSnapshot::load(&ws);
    Compilation::compile(ws, catalog, diags)
}

/// Every derives edge into the columns of `model`, as `column <- input directness kind`.
fn edges_into(g: &LineageGraph, model: &str) -> BTreeSet<String> {
    let ds = g
        .node(&format!("dataset://{model}"))
        .expect("model dataset");
    let mut out = BTreeSet::new();
    for c in g.columns_of(ds) {
        let column = g.nodes[c].name.strip_prefix(&format!("{model}.")).unwrap();
        for e in g.incoming(c).filter(|e| e.kind == EdgeKind::Derives) {
            out.insert(format!(
                "{column} <- {} {} {}",
                g.nodes[e.from].name,
                serde_json::to_value(e.directness.unwrap())
                    .unwrap()
                    .as_str()
                    .unwrap(),
                serde_json::to_value(e.transformation.unwrap())
                    .unwrap()
                    .as_str()
                    .unwrap(),
            ));
        }
    }
    out
}

#[test]
fn every_plan_node_type_has_exact_edges() {
    let dir = testdata("lineage");
    let c = compile(&dir);
    assert!(!c.has_errors(), "{:#?}", c.diagnostics);
    let mut failures = Vec::new();
    let mut cases = 0;
    for entry in std::fs::read_dir(dir.join("expected")).unwrap() {
        let path = entry.unwrap().path();
        let model = format!("cases.{}", path.file_stem().unwrap().to_str().unwrap());
        let expected: BTreeSet<String> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        let actual = edges_into(c.lineage(), &model);
        if actual != expected {
            failures.push(format!(
                "{model}\n  missing: {:#?}\n  unexpected: {:#?}",
                expected.difference(&actual).collect::<Vec<_>>(),
                actual.difference(&expected).collect::<Vec<_>>()
            ));
        }
        cases += 1;
    }
    assert!(cases >= 20, "only {cases} cases found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_model_is_exact_and_connected() {
    let c = compile(&testdata("lineage"));
    let g = &c.lineage();
    for m in &c.models {
        let id = m.name.uri();
        let node = g.node(&id).expect("model node");
        assert_eq!(
            serde_json::to_value(g.nodes[node].confidence).unwrap(),
            "exact",
            "{id}"
        );
        let inputs: BTreeSet<&str> = g
            .incoming(node)
            .filter(|e| e.kind == EdgeKind::Input)
            .map(|e| g.nodes[e.from].name.as_str())
            .collect();
        let expected: BTreeSet<String> = c
            .dependencies(c.model_index(m.name.as_str()).unwrap())
            .into_iter()
            .map(|d| match d {
                phlo_transform_compiler::Dependency::Model(n)
                | phlo_transform_compiler::Dependency::Source(n) => n,
            })
            .collect();
        assert_eq!(
            inputs,
            expected.iter().map(String::as_str).collect(),
            "{id}"
        );
    }
    // Sources are datasets with their declared columns.
    let orders = g.node("dataset://raw.orders").unwrap();
    assert_eq!(g.nodes[orders].kind, NodeKind::Dataset);
    assert_eq!(g.columns_of(orders).len(), 5);
}

#[test]
fn impact_of_a_source_column_reaches_downstream_columns_through_the_ephemeral_model() {
    let c = compile(&testdata("lineage"));
    let g = &c.lineage();
    let target = g.resolve("raw.orders.amount").unwrap();
    let report = g.impact(target);
    let columns: BTreeSet<&str> = report.columns.iter().map(|c| c.column.as_str()).collect();
    assert!(columns.contains("cases.base.cents"));
    assert!(columns.contains("cases.chain.total_cents"));
    assert!(
        columns.contains("cases.sort_other.customer_id"),
        "indirect (sort)"
    );
    assert!(!columns.contains("cases.chain.customer_id"));
    let via = |name: &str| {
        report
            .columns
            .iter()
            .find(|c| c.column == name)
            .map(|c| serde_json::to_value(c.via).unwrap())
    };
    assert_eq!(via("cases.chain.total_cents").unwrap(), "direct");
    assert_eq!(via("cases.sort_other.customer_id").unwrap(), "indirect");
    assert!(report.models.contains(&"cases.chain".to_string()));
    // Unknown names suggest close ones.
    let err = g.resolve("raw.orders.amont").unwrap_err();
    assert_eq!(err.first().map(String::as_str), Some("raw.orders.amount"));
}

#[test]
fn the_document_is_deterministic() {
    let a = serde_json::to_string(&compile(&testdata("lineage")).lineage().document()).unwrap();
    let b = serde_json::to_string(&compile(&testdata("lineage")).lineage().document()).unwrap();
    assert_eq!(a, b);
}
