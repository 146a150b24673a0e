//! Sources by convention and their state in versions, the configuration hierarchy with
//! provenance, templating, and @id pinning — on a workspace written by the test.

mod common;

use common::{by_name, run, write_file};

fn lab() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(
        root,
        "phlo.toml",
        "[transform]\ndefault_materialization = \"view\"\n\n[vars]\nmin_value = 2\n",
    );
    write_file(
        root,
        "sources/lims/samples.csv",
        "sample_id,site,value\nS1,oxford,1.5\nS2,oxford,2.5\nS3,cambridge,3.5\n",
    );
    write_file(
        root,
        "transforms/lab/transform.toml",
        "owner = \"lab-team\"\n\n[folder.marts]\nmaterialized = \"table\"\n",
    );
    write_file(root, "transforms/lab/staging/samples.sql", "-- @id lab.samples_v1\n-- @key sample_id\nselect sample_id, site, value from lims.samples\n");
    write_file(
        root,
        "transforms/lab/marts/by_site.sql",
        "select site, count(*) as n, sum(value) as total\nfrom staging.samples\ngroup by site\n",
    );
    write_file(
        root,
        "transforms/lab/marts/high.sql",
        "-- @tags qc\nselect * from {{ ref(\"lab.staging.samples\") }} where value > {{ var(\"min_value\") }}\n",
    );
    dir
}

#[test]
fn a_changed_source_file_rebuilds_its_readers_with_source_change() {
    let ws = lab();
    let dir = ws.path();
    let first = run(dir, &["run", "--json"]);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let report = first.json();
    assert!(
        report["models"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["status"] == "passed"),
        "{report}"
    );
    assert_eq!(
        report["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "lab.marts.high")
            .unwrap()["rows"],
        2
    );

    write_file(
        dir,
        "sources/lims/samples.csv",
        "sample_id,site,value\nS1,oxford,1.5\nS2,oxford,2.5\nS3,cambridge,3.5\nS4,leeds,9.0\n",
    );
    let plan = run(dir, &["plan", "--json"]).json();
    let decisions = by_name(&plan, "decision");
    assert_eq!(decisions["lab.staging.samples"], "build");
    assert_eq!(decisions["lab.marts.by_site"], "build");
    let staging = plan["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "lab.staging.samples")
        .unwrap();
    assert_eq!(staging["reasons"][0]["kind"], "source_change");
    assert_eq!(staging["reasons"][0]["subject"], "lims.samples");
    let mart = plan["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "lab.marts.by_site")
        .unwrap();
    let kinds: Vec<&str> = mart["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["dependency_change", "upstream_rebuild"]);
    let second = run(dir, &["run", "--json"]).json();
    let high = second["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "lab.marts.high")
        .unwrap()
        .clone();
    assert_eq!(
        (high["status"].as_str(), high["rows"].as_u64()),
        (Some("passed"), Some(3))
    );
}

#[test]
fn inspect_config_shows_each_value_and_where_it_came_from() {
    let ws = lab();
    let out = run(
        ws.path(),
        &["inspect", "lab.marts.by_site", "--config", "--json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let model = out.json();
    let config = &model["config"];
    assert_eq!(config["materialized"]["value"], "table");
    assert_eq!(config["materialized"]["origin"]["level"], "folder");
    assert_eq!(
        config["materialized"]["origin"]["detail"],
        "[folder.\"marts\"]"
    );
    assert_eq!(config["owner"]["value"], "lab-team");
    assert_eq!(config["owner"]["origin"]["level"], "root");
    assert_eq!(
        model["depends_on"],
        serde_json::json!([{"kind": "model", "name": "lab.staging.samples"}])
    );

    let staging = run(
        ws.path(),
        &[
            "inspect",
            "model://lab/staging/samples",
            "--config",
            "--json",
        ],
    )
    .json();
    assert_eq!(staging["id"], "lab.samples_v1");
    assert_eq!(
        staging["config"]["materialized"]["origin"]["level"],
        "workspace"
    );
    assert_eq!(staging["config"]["key"]["origin"]["level"], "model");
    assert_eq!(
        staging["used_by"],
        serde_json::json!(["lab.marts.by_site", "lab.marts.high"])
    );

    let human = run(ws.path(), &["inspect", "lab.marts.by_site", "--config"]);
    assert!(
        human.stdout.contains("materialized  table"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("from folder (transforms/lab/transform.toml [folder.\"marts\"])"),
        "{}",
        human.stdout
    );
}

#[test]
fn an_unknown_model_gets_a_suggestion() {
    let ws = lab();
    let out = run(ws.path(), &["inspect", "lab.marts.by_sight"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("error[P008]") && out.stderr.contains("lab.marts.by_site"),
        "{}",
        out.stderr
    );
}
