//! Issue 43: `run --artifacts dbt` and `[artifacts] dbt = true` write dbt's `manifest.json`
//! (v12) and `run_results.json` (v6) into `target/`, and two independent readers take them:
//! the pinned `dbt-artifacts-parser` (pydantic models that forbid unknown keys) and dbt-core's
//! own artifact reader, run by tests/python/dbt_artifacts.py in the dbt environment
//! scripts/test.sh installs. What they read is compared with `check`'s own manifest: every
//! model a model node with its columns in order and its dependencies, every test a test node.

mod common;

use common::{copy_dir, run};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The Python of the dbt environment (dbt-core, dbt-duckdb, dbt-artifacts-parser, pinned);
/// scripts/test.sh installs it.
fn dbt_python() -> PathBuf {
    common::pinned_python("PHLO_DBT_PYTHON", "dbt-venv")
}

/// What the dbt readers read from the artifacts of the workspace at `root`.
fn read_artifacts(root: &Path) -> Value {
    let script = common::python_script("dbt_artifacts.py");
    let args = [script.to_str().unwrap(), root.to_str().unwrap()];
    serde_json::from_str(&common::python_stdout(&dbt_python(), &args)).unwrap()
}

/// The example workspace in a folder named `lab` (the dbt project's name), with a model and
/// a column description.
fn lab() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lab");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/lab"),
        &root,
    );
    let mut toml = std::fs::read_to_string(root.join("phlo.toml")).unwrap();
    toml.push_str(
        "\n[model.\"assay.marts.result_facts\"]\ndescription = \"One row per released result.\"\n\
         [model.\"assay.marts.result_facts\".columns.result_id]\ndescription = \"The LIMS result id.\"\n",
    );
    std::fs::write(root.join("phlo.toml"), toml).unwrap();
    (dir, root)
}

fn statuses(read: &Value) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for status in read["results"].as_object().unwrap().values() {
        *counts
            .entry(status.as_str().unwrap().to_string())
            .or_default() += 1;
    }
    counts
}

#[test]
fn the_example_workspaces_dbt_artifacts_are_read_by_dbts_readers() {
    let (_dir, root) = lab();
    let out = run(&root, &["run", "--artifacts", "dbt", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let read = read_artifacts(&root);
    assert_eq!(read["project"], "lab");
    assert_eq!(
        read["schema_versions"],
        serde_json::json!([
            "https://schemas.getdbt.com/dbt/manifest/v12.json",
            "https://schemas.getdbt.com/dbt/run-results/v6.json"
        ])
    );

    let ours: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".phlo/transform/manifest.json")).unwrap(),
    )
    .unwrap();
    let nodes = read["nodes"].as_object().unwrap();
    // dbt id → our name, for models (meta.phlo_name) and sources (`source_name.name`).
    let mut name_of: BTreeMap<&str, String> = nodes
        .iter()
        .map(|(id, n)| {
            (
                id.as_str(),
                n["meta"]["phlo_name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (id, s) in read["sources"].as_object().unwrap() {
        name_of.insert(
            id,
            format!(
                "{}.{}",
                s["source_name"].as_str().unwrap(),
                s["name"].as_str().unwrap()
            ),
        );
    }

    let models = ours["models"].as_array().unwrap();
    for m in models {
        let name = m["name"].as_str().unwrap();
        let (_, node) = nodes
            .iter()
            .find(|(_, n)| n["meta"]["phlo_name"] == name)
            .unwrap_or_else(|| panic!("no dbt node for {name}"));
        assert_eq!(node["class"], "Nodes4", "{name} parsed as a model node");
        assert_eq!(node["materialized"], m["materialization"], "{name}");
        let deps: BTreeSet<String> = node["depends_on"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| name_of[d.as_str().unwrap()].clone())
            .collect();
        let expected: BTreeSet<String> = m["depends_on"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(deps, expected, "{name}'s depends_on is the DAG's");
        let columns: Vec<&str> = node["columns"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let expected: Vec<&str> = m["schema"]["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(columns, expected, "{name}'s columns, in order");
    }
    assert_eq!(
        nodes
            .values()
            .filter(|n| n["resource_type"] == "model")
            .count(),
        models.len()
    );

    let facts = &nodes["model.lab.result_facts"];
    assert_eq!(facts["description"], "One row per released result.");
    assert_eq!(facts["schema"], "analytics");
    assert_eq!(facts["alias"], "assay__marts__result_facts");
    assert_eq!(
        facts["columns"]["result_id"],
        serde_json::json!({"data_type": "varchar", "description": "The LIMS result id."})
    );
    let calendar = &nodes["model.lab.calendar"]["columns"];
    assert_eq!(calendar["calendar_date"]["data_type"], "date");
    assert_eq!(calendar["iso_week"]["data_type"], "integer");

    // Tests: the generated ones as dbt's generic tests, `tests/*.sql` as singular tests.
    let tests = ours["tests"].as_array().unwrap();
    let test_nodes: Vec<&Value> = nodes
        .values()
        .filter(|n| n["resource_type"] == "test")
        .collect();
    assert_eq!(test_nodes.len(), tests.len());
    let generic = test_nodes.iter().filter(|n| n["class"] == "Nodes6").count();
    let singular = test_nodes.iter().filter(|n| n["class"] == "Nodes2").count();
    let custom = tests.iter().filter(|t| t["kind"] == "custom").count();
    assert_eq!((generic, singular), (tests.len() - custom, custom));
    assert_eq!(
        nodes["test.lab.assay_marts_result_facts_unique_result_id"]["test"],
        serde_json::json!(["unique", "result_id", "model.lab.result_facts"])
    );
    assert_eq!(
        read["sources"]["source.lab.lims.samples"]["columns"][0],
        "sample_id"
    );

    // Every model ran and every test passed; the results name the manifest's nodes.
    let expected: BTreeMap<String, usize> = [
        ("pass".to_string(), tests.len()),
        (
            "success".to_string(),
            out.json()["counts"]["passed"].as_u64().unwrap() as usize,
        ),
    ]
    .into();
    assert_eq!(statuses(&read), expected);
    for id in read["results"].as_object().unwrap().keys() {
        assert!(nodes.contains_key(id), "{id} is a manifest node");
    }
    let core = &read["dbt_core"];
    assert_eq!(core["nodes"].as_u64().unwrap() as usize, nodes.len());
    assert_eq!(
        core["results"].as_u64().unwrap() as usize,
        read["results"].as_object().unwrap().len()
    );

    // `[artifacts] dbt = true` writes them without the flag: everything is up to date now.
    std::fs::remove_dir_all(root.join("target")).unwrap();
    let mut toml = std::fs::read_to_string(root.join("phlo.toml")).unwrap();
    toml.push_str("\n[artifacts]\ndbt = true\n");
    std::fs::write(root.join("phlo.toml"), toml).unwrap();
    let again = run(&root, &["run", "--json"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let read = read_artifacts(&root);
    assert_eq!(
        statuses(&read),
        [
            ("pass".to_string(), tests.len()),
            ("no-op".to_string(), expected["success"])
        ]
        .into()
    );
}

#[test]
fn without_the_flag_or_the_key_no_dbt_artifacts_are_written() {
    let (_dir, root) = lab();
    let out = run(&root, &["run", "-s", "shared.calendar", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!root.join("target").exists());
}

#[test]
fn failures_blocked_models_and_failed_tests_are_in_dbts_words() {
    let (_dir, root) = lab();
    common::write_file(
        &root,
        "transforms/shared/broken.sql",
        "-- @table\nselect cast(s.site_name as int) as n from shared.sites as s\n",
    );
    common::write_file(
        &root,
        "transforms/shared/after_broken.sql",
        "-- @table\nselect b.n from shared.broken as b\n",
    );
    common::write_file(
        &root,
        "tests/every_site_is_a_violation.sql",
        "select s.site_code from shared.sites as s\n",
    );
    let out = run(&root, &["run", "--artifacts", "dbt", "--json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let sites = out.json()["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "shared.sites")
        .unwrap()["rows"]
        .as_u64()
        .unwrap();
    let read = read_artifacts(&root);
    let results = &read["results"];
    assert_eq!(results["model.lab.broken"], "error");
    assert_eq!(results["model.lab.after_broken"], "skipped");
    assert_eq!(results["test.lab.every_site_is_a_violation"], "fail");
    assert_eq!(
        read["failures"]["test.lab.every_site_is_a_violation"],
        sites
    );
    assert_eq!(results["model.lab.sites"], "success");
}
