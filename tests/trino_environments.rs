//! Environments on Trino + Nessie (issue 16 item 2, SPEC §44–48), end to end through the real
//! binary on the Trino 476 and Nessie 0.99 that `scripts/services.sh up` starts (Trino with
//! `catalog.management=dynamic`): a reference is a Nessie branch, a candidate is written
//! through its own catalog, `main` is read back untouched through its catalog, a failing test
//! blocks `promote` with the gate named, the fixed candidate is published (main's branch moved
//! to the audited head), rollback moves it back, of two concurrent promotions one wins, and a
//! branch diff of the two branches is the evidence `promote --require-diff` reads.
//!
//! The workspace's `main` is a Nessie branch and catalog of this test's own (`[adapter.nessie]
//! ref`), so other tests committing to Nessie's `main` at the same time cannot move it.

mod common;
#[path = "warehouse/trino_env.rs"]
#[allow(dead_code)]
mod trino_env;

use common::{by_name, dataset, run, write_file};
use phlo_transform_adapter::trino::client::{Trino, TrinoConfig};
use serde_json::Value;
use std::path::Path;
use trino_env::{local_root, nessie_url, trino_url, unique};
use url::Url;

const RESULTS: &str = "workflows/assay/transforms/results.sql";
const WAREHOUSE_DIR: &str = "local:///iceberg";

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn trino(sql: &str) -> Vec<Vec<Value>> {
    let client = Trino::new(TrinoConfig::new(
        Url::parse(&trino_url()).unwrap(),
        "phlo-env-test-reader",
    ))
    .unwrap();
    block_on(client.execute(sql))
        .unwrap_or_else(|e| panic!("{e}: {sql}"))
        .rows
}

/// The head of Nessie branch `branch`, or `None` when there is none.
fn nessie_head(branch: &str) -> Option<String> {
    let out = std::process::Command::new("curl")
        .args(["-sS", &format!("{}/trees/{branch}", nessie_url())])
        .output()
        .expect("curl runs");
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    v["reference"]["hash"].as_str().map(str::to_string)
}

fn nessie(method: &str, path: &str, body: &Value) -> Value {
    let out = std::process::Command::new("curl")
        .args(["-sS", "-X", method, "-H", "Content-Type: application/json"])
        .args(["-d", &body.to_string(), &format!("{}/{path}", nessie_url())])
        .output()
        .expect("curl runs");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// This test's `main`: a Nessie branch from Nessie's main, and a catalog on it.
struct Main {
    branch: String,
    catalog: String,
}

impl Main {
    fn create() -> Main {
        let branch = unique("envmain");
        let catalog = branch.clone();
        let head = nessie_head("main").expect("Nessie answers");
        let created = nessie(
            "POST",
            &format!("trees?name={branch}&type=BRANCH"),
            &serde_json::json!({"type": "BRANCH", "name": "main", "hash": head}),
        );
        assert_eq!(created["reference"]["name"], branch.as_str(), "{created}");
        trino(&format!(
            "CREATE CATALOG {catalog} USING iceberg WITH (\"iceberg.catalog.type\" = 'nessie', \
             \"iceberg.nessie-catalog.uri\" = '{}', \"iceberg.nessie-catalog.ref\" = '{branch}', \
             \"iceberg.nessie-catalog.default-warehouse-dir\" = '{WAREHOUSE_DIR}', \
             \"fs.native-local.enabled\" = 'true', \"local.location\" = '{}')",
            nessie_url(),
            local_root().display()
        ));
        Main { branch, catalog }
    }
}

impl Drop for Main {
    fn drop(&mut self) {
        let client = Trino::new(TrinoConfig::new(
            Url::parse(&trino_url()).unwrap(),
            "phlo-env-test-reader",
        ))
        .unwrap();
        let _ = block_on(client.execute(&format!("DROP CATALOG IF EXISTS {}", self.catalog)));
        if let Some(head) = nessie_head(&self.branch) {
            let _ = std::process::Command::new("curl")
                .args(["-sS", "-X", "DELETE"])
                .arg(format!("{}/trees/{}@{head}", nessie_url(), self.branch))
                .output();
        }
    }
}

/// Candidate references a test creates: their branches and catalogs are removed when the test
/// ends, also when it fails before its own `ref delete`.
struct Candidates(Vec<String>);

impl Drop for Candidates {
    fn drop(&mut self) {
        let client = Trino::new(TrinoConfig::new(
            Url::parse(&trino_url()).unwrap(),
            "phlo-env-test-reader",
        ))
        .unwrap();
        for name in &self.0 {
            let like = format!("SHOW CATALOGS LIKE 'phlo_{name}_%'");
            if let Ok(found) = block_on(client.execute(&like)) {
                for row in found.rows {
                    if let Some(catalog) = row[0].as_str() {
                        let _ = block_on(client.execute(&format!("DROP CATALOG {catalog}")));
                    }
                }
            }
            if let Some(head) = nessie_head(name) {
                let _ = std::process::Command::new("curl")
                    .args(["-sS", "-X", "DELETE"])
                    .arg(format!("{}/trees/{name}@{head}", nessie_url()))
                    .output();
            }
        }
    }
}

/// raw → results → by_site; raw → sites; a test on results; models in schema `schema`. The
/// results are doubles, so `result * 2` keeps the column's type (a decimal would widen, which the
/// `schema` gate reports).
fn workspace(main: &Main, schema: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(
        root,
        "phlo.toml",
        &format!(
            "[adapter]\ntype = \"trino\"\nurl = \"{}\"\nuser = \"phlo-env-test\"\ncatalog = \"{}\"\n\
             default_schema = \"{schema}\"\nlocal_root = \"{}\"\n\n[adapter.nessie]\nurl = \"{}\"\n\
             ref = \"{}\"\nwarehouse = \"{WAREHOUSE_DIR}\"\n",
            trino_url(),
            main.catalog,
            local_root().display(),
            nessie_url(),
            main.branch,
        ),
    );
    write_file(
        root,
        "workflows/assay/transforms/raw.sql",
        "-- @table\nselect experiment_id, site, cast(result as double) as result from (values ('exp-001', 'oxford', 4.0), ('exp-002', 'oxford', 3.0), ('exp-003', 'cambridge', 5.0)) as t(experiment_id, site, result)\n",
    );
    results(root, "result");
    write_file(
        root,
        "workflows/reporting/transforms/by_site.sql",
        "-- @table\nselect site, sum(result) as total from assay.results group by site\n",
    );
    write_file(
        root,
        "workflows/reporting/transforms/sites.sql",
        "-- @table\nselect distinct site from assay.raw\n",
    );
    write_file(
        root,
        "tests/results_below_twelve.sql",
        "select * from assay.results where result >= 12\n",
    );
    dir
}

fn results(root: &Path, expression: &str) {
    write_file(
        root,
        RESULTS,
        &format!("-- @table\nselect experiment_id, site, {expression} as result from assay.raw\n"),
    );
}

fn ok(root: &Path, args: &[&str]) -> Value {
    let out = run(root, args);
    assert_eq!(out.code, 0, "{args:?}:\n{}\n{}", out.stdout, out.stderr);
    out.json()
}

/// `experiment_id=result` of `assay.results` read through `catalog`, by Trino.
fn results_in(catalog: &str, schema: &str) -> Vec<String> {
    trino(&format!(
        "SELECT experiment_id, result FROM {catalog}.{schema}.assay__results ORDER BY 1"
    ))
    .into_iter()
    .map(|r| format!("{}={:.1}", r[0].as_str().unwrap(), r[1].as_f64().unwrap()))
    .collect()
}

fn gate<'a>(promotion: &'a Value, name: &str) -> &'a Value {
    promotion["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no gate {name}: {promotion}"))
}

fn hash(root: &Path, reference: &str) -> String {
    ok(root, &["ref", "show", reference, "--json"])["hash"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_candidate_branch_is_built_audited_published_and_rolled_back() {
    let main = Main::create();
    let schema = unique("envs");
    let dir = workspace(&main, &schema);
    let root = dir.path();
    ok(root, &["run", "--json"]);
    let original = ["exp-001=4.0", "exp-002=3.0", "exp-003=5.0"];
    assert_eq!(results_in(&main.catalog, &schema), original);

    // A reference is a Nessie branch at its base's head, with a catalog bound to it.
    let dev = unique("dev");
    let _cleanup = Candidates(vec![dev.clone()]);
    let created = ok(root, &["ref", "create", &dev, "--from", "main", "--json"]);
    let base_hash = nessie_head(&main.branch).unwrap();
    assert_eq!(created["hash"], base_hash.as_str());
    assert_eq!(created["created_from"]["hash"], base_hash.as_str());
    assert_eq!(nessie_head(&dev).as_deref(), Some(base_hash.as_str()));
    let catalog = created["catalog"].as_str().unwrap().to_string();
    assert!(catalog.starts_with("phlo_dev_"), "{created}");
    assert_eq!(hash(root, "main"), base_hash);
    let listed = ok(root, &["ref", "list", "--json"]);
    let names: Vec<&str> = listed["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["main", dev.as_str()]);
    // Its environment evidence is exported: branch, catalog and provenance.
    let evidence: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".phlo/transform/environment.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(evidence["ref"], dev.as_str());
    assert_eq!(evidence["branch"], dev.as_str());
    assert_eq!(evidence["catalog"], catalog.as_str());
    assert_eq!(evidence["catalog_status"], "created");
    assert_eq!(evidence["created_from"]["hash"], base_hash.as_str());

    // One model changes (and breaks the test): only it and its dependent build on the branch.
    results(root, "result * 3");
    let plan = ok(root, &["plan", "--ref", &dev, "--json"]);
    let decisions = by_name(&plan, "decision");
    assert_eq!(decisions["assay.raw"], "cached", "{plan}");
    assert_eq!(decisions["reporting.sites"], "cached");
    assert_eq!(decisions["assay.results"], "build");
    assert_eq!(decisions["reporting.by_site"], "build");
    let reuse = plan["models"][0]["reasons"][0]["detail"].as_str().unwrap();
    assert!(
        reuse.contains("still has identity iceberg:snapshot:"),
        "{reuse}"
    );

    let failing = run(root, &["run", "--ref", &dev, "--json"]);
    assert_eq!(failing.code, 1, "{}\n{}", failing.stdout, failing.stderr);
    let statuses = by_name(&failing.json(), "status");
    assert_eq!(statuses["assay.raw"], "cached");
    assert_eq!(statuses["reporting.sites"], "cached");
    assert_eq!(statuses["assay.results"], "passed");
    assert_eq!(statuses["reporting.by_site"], "passed");

    // Main is untouched: its branch head, and its table read back through its catalog.
    assert_eq!(nessie_head(&main.branch).unwrap(), base_hash);
    assert_eq!(results_in(&main.catalog, &schema), original);
    assert_eq!(
        results_in(&catalog, &schema),
        ["exp-001=12.0", "exp-002=9.0", "exp-003=15.0"]
    );
    assert_ne!(
        nessie_head(&dev).unwrap(),
        base_hash,
        "the writes are commits on the branch"
    );

    // The failing test blocks promotion, with the gate named; nothing is published.
    let blocked = run(root, &["promote", &dev, "--to", "main", "--json"]);
    assert_eq!(blocked.code, 1, "{}\n{}", blocked.stdout, blocked.stderr);
    let blocked = blocked.json();
    assert_eq!(blocked["promoted"], false);
    assert_eq!(gate(&blocked, "tests")["passed"], false);
    assert!(gate(&blocked, "tests")["detail"]
        .as_str()
        .unwrap()
        .contains("results_below_twelve"));
    assert_eq!(gate(&blocked, "base")["passed"], true);
    assert_eq!(gate(&blocked, "data_diff")["passed"], true);
    assert!(gate(&blocked, "data_diff")["detail"]
        .as_str()
        .unwrap()
        .contains("not required"));
    assert_eq!(nessie_head(&main.branch).unwrap(), base_hash);

    // Fixed: the candidate runs again, the gates pass, --check publishes nothing.
    results(root, "result * 2");
    let fixed = ok(root, &["run", "--ref", &dev, "--json"]);
    assert_eq!(by_name(&fixed, "status")["assay.results"], "passed");
    let checked = ok(
        root,
        &["promote", &dev, "--to", "main", "--check", "--json"],
    );
    assert_eq!(checked["promoted"], false);
    assert!(
        checked["gates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["passed"] == true),
        "{checked}"
    );
    assert_eq!(nessie_head(&main.branch).unwrap(), base_hash);

    // A candidate that advanced after its audit is refused: a commit on its branch outside a
    // run moves its head past the head its run was bound to.
    trino(&format!(
        "CREATE TABLE {catalog}.{schema}.outside AS SELECT 1 AS x"
    ));
    let advanced = run(root, &["promote", &dev, "--to", "main", "--json"]);
    assert_eq!(advanced.code, 1, "{}\n{}", advanced.stdout, advanced.stderr);
    assert_eq!(gate(&advanced.json(), "run")["passed"], false);
    assert_eq!(nessie_head(&main.branch).unwrap(), base_hash);
    // Run again, it is audited at its head as it is now (nothing to build).
    let rerun = ok(root, &["run", "--ref", &dev, "--json"]);
    assert!(
        by_name(&rerun, "status")
            .values()
            .all(|s| s == "cached" || s == "skipped"),
        "{rerun}"
    );

    // Published: main's branch is the audited candidate head; main reads the new rows.
    let audited = nessie_head(&dev).unwrap();
    let promoted = ok(root, &["promote", &dev, "--to", "main", "--json"]);
    assert_eq!(promoted["promoted"], true, "{promoted}");
    assert_eq!(promoted["from_hash"], audited.as_str());
    let promotion = promoted["promotion_id"].as_str().unwrap().to_string();
    assert_eq!(nessie_head(&main.branch).unwrap(), audited);
    let doubled = ["exp-001=8.0", "exp-002=6.0", "exp-003=10.0"];
    assert_eq!(results_in(&main.catalog, &schema), doubled);
    let shown = ok(root, &["ref", "show", "main", "--json"]);
    assert_eq!(shown["events"][0]["event_id"], promotion.as_str());
    // Main's records followed: planning main finds everything current.
    let main_plan = ok(root, &["plan", "--json"]);
    assert!(
        by_name(&main_plan, "decision")
            .values()
            .all(|d| d != "build"),
        "{main_plan}"
    );

    // Rollback: main's branch back at the head the promotion replaced.
    let rolled = ok(
        root,
        &["rollback", "--ref", "main", "--to", &promotion, "--json"],
    );
    assert_eq!(rolled["hash_after"], base_hash.as_str());
    assert_eq!(nessie_head(&main.branch).unwrap(), base_hash);
    assert_eq!(results_in(&main.catalog, &schema), original);

    // main is never deleted; a candidate's branch and catalog go with it.
    let refused = run(root, &["ref", "delete", "main", "--json"]);
    assert_eq!(refused.code, 2);
    assert_eq!(refused.json()["diagnostics"][0]["code"], "Y009");
    ok(root, &["ref", "delete", &dev, "--json"]);
    assert_eq!(nessie_head(&dev), None);
    let catalogs = trino("SHOW CATALOGS");
    assert!(!catalogs.iter().any(|r| r[0] == catalog.as_str()));
    assert_eq!(nessie_head(&main.branch).unwrap(), base_hash);
}

#[test]
fn of_two_concurrent_promotions_one_wins_and_the_other_is_refused() {
    let main = Main::create();
    let schema = unique("envs");
    let dir = workspace(&main, &schema);
    let root = dir.path();
    ok(root, &["run", "--json"]);
    let (a, b) = (unique("cand_a"), unique("cand_b"));
    let _cleanup = Candidates(vec![a.clone(), b.clone()]);
    ok(root, &["ref", "create", &a, "--from", "main", "--json"]);
    ok(root, &["ref", "create", &b, "--from", "main", "--json"]);
    results(root, "result * 2");
    ok(root, &["run", "--ref", &a, "--json"]);
    ok(root, &["run", "--ref", &b, "--json"]);
    let base_hash = nessie_head(&main.branch).unwrap();

    let spawn = |name: &str| {
        std::process::Command::new(common::bin())
            .arg("-C")
            .arg(root)
            .args(["promote", name, "--to", "main", "--json"])
            .env_remove("PHLO_STATE_URL")
            .output()
            .expect("binary runs")
    };
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| spawn(&a));
        let second = s.spawn(|| spawn(&b));
        (first.join().unwrap(), second.join().unwrap())
    });
    let codes = [first.status.code(), second.status.code()];
    let won: Vec<usize> = (0..2).filter(|i| codes[*i] == Some(0)).collect();
    assert_eq!(
        won.len(),
        1,
        "exactly one wins: {codes:?}\n{}\n{}\n{}\n{}",
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr),
        String::from_utf8_lossy(&second.stdout),
        String::from_utf8_lossy(&second.stderr)
    );
    let (winner, loser, loser_out) = if won[0] == 0 {
        (&a, &b, &second)
    } else {
        (&b, &a, &first)
    };
    let said = String::from_utf8_lossy(&loser_out.stdout);
    assert!(
        said.contains("Y012") || said.contains("Y011"),
        "the loser is refused as stale or by its base gate: {said}"
    );
    // Main is exactly the winner's audited head; the loser is kept.
    let winner_head = nessie_head(winner).unwrap();
    assert_ne!(winner_head, base_hash);
    assert_eq!(nessie_head(&main.branch).unwrap(), winner_head);
    assert!(nessie_head(loser).is_some());
    // Evaluated again, the loser's base gate names the move.
    let again = run(root, &["promote", loser, "--to", "main", "--json"]);
    assert_eq!(again.code, 1);
    assert_eq!(gate(&again.json(), "base")["passed"], false);
    ok(root, &["ref", "delete", &a, "--json"]);
    ok(root, &["ref", "delete", &b, "--json"]);
}

/// The `data_diff` gate of `promote <dev> --to main --check [--require-diff]`.
fn data_diff_gate(root: &Path, dev: &str, require: bool) -> (bool, String) {
    let mut args = vec!["promote", dev, "--to", "main", "--check", "--json"];
    if require {
        args.push("--require-diff");
    }
    let out = run(root, &args);
    let promotion = out.json();
    let g = gate(&promotion, "data_diff");
    (
        g["passed"] == true,
        g["detail"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn a_branch_diff_of_two_nessie_branches_is_the_data_diff_gates_evidence() {
    let main = Main::create();
    let schema = unique("envdiff");
    let dir = workspace(&main, &schema);
    let root = dir.path();
    ok(root, &["run", "--json"]);
    let dev = unique("dev");
    let _cleanup = Candidates(vec![dev.clone()]);
    ok(root, &["ref", "create", &dev, "--from", "main", "--json"]);

    // Just created: no diff recorded, so --require-diff fails the gate; every table is the
    // same on both branches.
    let (passed, detail) = data_diff_gate(root, &dev, true);
    assert!(!passed && detail.contains("no branch diff"), "{detail}");
    let same = ok(root, &["diff", "--from", "main", "--to", &dev, "--json"]);
    assert_eq!(
        same["summary"],
        serde_json::json!({"added": 0, "removed": 0, "changed": 0, "unchanged": 4, "absent": 0}),
        "{same}"
    );

    // dev: results keyed and changed (one row removed, one added, one modified, a column
    // added), a model added.
    write_file(
        root,
        RESULTS,
        "-- @table\n-- @key experiment_id\nselect experiment_id, site, case when experiment_id = 'exp-001' then result * 2 else result end as result, 'v2' as note from assay.raw where experiment_id <> 'exp-003'\nunion all select 'exp-004', 'leeds', cast(1.0 as double), 'v2'\n",
    );
    write_file(
        root,
        "workflows/reporting/transforms/summary.sql",
        "-- @table\nselect count(*) as n from assay.results\n",
    );
    ok(root, &["run", "--ref", &dev, "--json"]);
    let (main_head, dev_head) = (
        nessie_head(&main.branch).unwrap(),
        nessie_head(&dev).unwrap(),
    );

    // The diff made before the run is stale: --require-diff fails the gate; without the flag
    // it passes and says so.
    let (passed, detail) = data_diff_gate(root, &dev, true);
    assert!(!passed && detail.contains("stale"), "{detail}");
    let (passed, detail) = data_diff_gate(root, &dev, false);
    assert!(passed && detail.contains("not required"), "{detail}");

    // Every dataset classified (Nessie's diff of the two heads), with row counts and schema
    // changes read at those heads; bound to both heads.
    let diff = ok(root, &["diff", "--from", "main", "--to", &dev, "--json"]);
    assert_eq!(diff["from"]["hash"], main_head.as_str());
    assert_eq!(diff["to"]["hash"], dev_head.as_str());
    assert_eq!(
        diff["summary"],
        serde_json::json!({"added": 1, "removed": 0, "changed": 2, "unchanged": 2, "absent": 0}),
        "{diff}"
    );
    let status = |m: &str| dataset(&diff, m)["status"].as_str().unwrap().to_string();
    assert_eq!(status("assay.raw"), "unchanged");
    assert_eq!(status("reporting.sites"), "unchanged");
    assert_eq!(status("assay.results"), "changed");
    assert_eq!(status("reporting.by_site"), "changed");
    assert_eq!(status("reporting.summary"), "added");
    let results = dataset(&diff, "assay.results");
    assert_eq!(
        results["rows"],
        serde_json::json!({"from": 3, "to": 3, "delta": 0})
    );
    assert_eq!(results["schema"]["added"][0]["name"], "note");
    assert_eq!(results["schema"]["retyped"], serde_json::json!([]));
    assert!(results["data"].is_null(), "no keyed diff without --full");
    assert_eq!(
        dataset(&diff, "reporting.by_site")["rows"],
        serde_json::json!({"from": 2, "to": 2, "delta": 0})
    );
    assert_eq!(
        dataset(&diff, "reporting.summary")["rows"],
        serde_json::json!({"from": null, "to": 1, "delta": 1})
    );
    assert_eq!(dataset(&diff, "assay.raw")["rows"]["from"], 3);
    let (passed, detail) = data_diff_gate(root, &dev, true);
    assert!(!passed && detail.contains("not --full"), "{detail}");

    // --full: the changed models diffed row by row on their keys.
    let full = ok(
        root,
        &["diff", "--from", "main", "--to", &dev, "--full", "--json"],
    );
    common::assert_results_full_diff(&full);
    let by_site = &dataset(&full, "reporting.by_site")["data"];
    assert_eq!(
        by_site["records"],
        serde_json::json!({"added": 1, "removed": 1, "modified": 1, "unchanged": 0}),
        "{by_site}"
    );
    assert_eq!(full["passed"], true);
    let (passed, detail) = data_diff_gate(root, &dev, true);
    assert!(
        passed && detail.contains(full["evidence_id"].as_str().unwrap()),
        "{detail}"
    );

    // One model between the branches: `diff <model>` reads its Iceberg table at each head,
    // the base `ref:main` by default.
    let to = format!("ref:{dev}");
    let one = ok(
        root,
        &["diff", "assay.results", "--to", &to, "--full", "--json"],
    );
    common::assert_results_records(&one);
    for (side, reference) in [("base", "main"), ("candidate", dev.as_str())] {
        let description = one[side]["description"].as_str().unwrap();
        assert!(
            description.starts_with(&format!("assay.results in `{reference}` (Iceberg snapshot")),
            "{description}"
        );
    }
    // Iceberg time travel: dev's table was replaced on dev, and its history keeps the snapshot
    // main still reads, so that snapshot as the base finds the same rows.
    let main_snapshot = one["base"]["description"]
        .as_str()
        .unwrap()
        .split("Iceberg snapshot ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_string();
    let from = format!("iceberg:{main_snapshot}");
    let travelled = ok(
        root,
        &[
            "diff",
            "assay.results",
            "--ref",
            &dev,
            "--from",
            &from,
            "--to",
            &to,
            "--full",
            "--json",
        ],
    );
    common::assert_results_records(&travelled);
    let base = travelled["base"]["description"].as_str().unwrap();
    assert!(
        base.starts_with(&format!(
            "assay.results in `{dev}` (Iceberg snapshot {main_snapshot} "
        )),
        "{base}"
    );
    // A snapshot the table does not have: D001, listing the snapshots it has.
    let missing = run(
        root,
        &[
            "diff",
            "assay.results",
            "--from",
            "iceberg:1",
            "--to",
            &to,
            "--json",
        ],
    );
    common::assert_refused(&missing, "D001", &main_snapshot);
    // The default sides on Trino: the model's SQL as the workspace defines it now (dev's),
    // run by Trino over main's tables, against its table on main — dev's changes, row by row.
    let workspace = ok(root, &["diff", "assay.results", "--full", "--json"]);
    common::assert_results_records(&workspace);
    let description = workspace["candidate"]["description"].as_str().unwrap();
    assert!(
        description.contains("run by trino") && description.ends_with("on `main`"),
        "{description}"
    );
    assert_eq!(workspace["schema"]["added"][0]["name"], "note");
    // The same SQL over dev's tables against dev's table (`materialized` is the table its
    // reference reads): nothing differs, column types and nullability included.
    let same = ok(
        root,
        &[
            "diff",
            "assay.results",
            "--ref",
            &dev,
            "--from",
            "materialized",
            "--full",
            "--json",
        ],
    );
    assert_unchanged(&same, 3);
    // Delta versions are the embedded engine's: refused on Trino, with the forms that work.
    let delta = run(
        root,
        &["diff", "assay.results", "--from", "delta:1", "--json"],
    );
    common::assert_refused(&delta, "D001", "iceberg:<id>");
    let text = run(root, &["diff", "--from", "main", "--to", &dev]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    for line in [
        "CHANGED   assay.results",
        "ADDED     reporting.summary",
        "UNCHANGED assay.raw",
    ] {
        assert!(text.stdout.contains(line), "{line}:\n{}", text.stdout);
    }

    // dev writes again after its diff: the evidence is stale.
    write_file(
        root,
        "workflows/reporting/transforms/summary.sql",
        "-- @table\nselect count(*) as n, 1 as v from assay.results\n",
    );
    ok(root, &["run", "--ref", &dev, "--json"]);
    assert_ne!(nessie_head(&dev).unwrap(), dev_head);
    let refused = run(
        root,
        &["promote", &dev, "--to", "main", "--require-diff", "--json"],
    );
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    let refused = refused.json();
    assert_eq!(refused["promoted"], false);
    let detail = gate(&refused, "data_diff")["detail"].as_str().unwrap();
    assert!(detail.contains("stale"), "{detail}");
    assert_eq!(nessie_head(&main.branch).unwrap(), main_head);

    // Diffed again at the new head, the candidate is published with --require-diff.
    ok(
        root,
        &["diff", "--from", "main", "--to", &dev, "--full", "--json"],
    );
    let audited = nessie_head(&dev).unwrap();
    let promoted = ok(
        root,
        &["promote", &dev, "--to", "main", "--require-diff", "--json"],
    );
    assert_eq!(promoted["promoted"], true, "{promoted}");
    assert_eq!(gate(&promoted, "data_diff")["passed"], true);
    assert_eq!(nessie_head(&main.branch).unwrap(), audited);
    ok(root, &["ref", "delete", &dev, "--json"]);
}

/// A model of every common Trino type (but nested ones), keyed on `id`; `first` is row 1's `amount`, `price`
/// and `at_utc`, `last` the third row's id.
fn typed(root: &Path, first: (&str, &str, &str), last: u32) {
    let (amount, price, at_utc) = first;
    write_file(
        root,
        "workflows/assay/transforms/typed.sql",
        &format!(
            "-- @table\n-- @key id\nselect cast(id as bigint) as id, small, amount, price, ratio, ok, day, at, at_utc, label, bytes, hour from (values \
             (1, smallint '1', decimal '{amount}', {price}, 0.1e0, true, date '2024-01-05', timestamp '2024-01-05 09:00:00.123456', {at_utc}, 'a', to_utf8('ab'), time '09:00:00.123456'), \
             (2, smallint '-2', decimal '-0.01', cast(nan() as real), infinity(), false, date '1969-12-31', timestamp '1969-12-31 23:59:59.5', timestamp '2024-01-05 09:00:00 UTC', 'b', X'00FF', time '23:59:59'), \
             ({last}, null, null, null, nan(), null, null, null, null, null, null, null)) \
             as t(id, small, amount, price, ratio, ok, day, at, at_utc, label, bytes, hour)\n"
        ),
    );
}

/// `diff <model>` on Trino with no sides: the model's SQL run by Trino and read from its JSON
/// rows as Arrow, typed as the model's Iceberg table stores them, against that table on main.
/// Unchanged, a model of every common type equals its own table — values, NaNs, infinities,
/// NULLs, a zoned timestamp, column types and nullability; changed, it shows exactly the rows
/// and values that changed. Compared in Trino (as a large table is), the counts and samples
/// are the same.
#[test]
fn the_workspace_side_on_trino_reads_every_common_type_as_its_table_does() {
    let main = Main::create();
    let schema = unique("wsdiff");
    let dir = workspace(&main, &schema);
    let root = dir.path();
    let zoned = "timestamp '2024-01-05 04:00:00.5 America/New_York'";
    typed(root, ("12.50", "real '1.5'", zoned), 3);
    ok(root, &["run", "--json"]);

    let same = fetched_and_pushed_down(root);
    assert_unchanged(&same, 3);
    assert_eq!(
        same["rows"],
        serde_json::json!({"base": 3, "candidate": 3, "delta": 0})
    );

    // An array is read as its JSON text, which the Iceberg side's list is not: listed as
    // retyped and not compared (D003), and the table is fetched, not compared in Trino.
    write_file(
        root,
        "workflows/assay/transforms/nested.sql",
        "-- @table\n-- @key id\nselect 1 as id, array[1, 2] as tags\n",
    );
    ok(root, &["run", "--json"]);
    let args = ["diff", "assay.nested", "--large-table-rows", "1", "--json"];
    let nested = ok(root, &args);
    assert_eq!(nested["strategy_reason"], "every row compared", "{nested}");
    assert_eq!(nested["schema"]["retyped"][0]["name"], "tags", "{nested}");
    assert_eq!(nested["records"]["unchanged"], 1, "{nested}");
    assert_eq!(nested["warnings"][0]["code"], "D003", "{nested}");

    // Row 1's amount changes and its price becomes NaN; its zoned time is the same instant
    // written at UTC (no change); row 3 goes, row 4 comes.
    let utc = "timestamp '2024-01-05 09:00:00.5 UTC'";
    typed(root, ("12.51", "cast(nan() as real)", utc), 4);
    let changed = fetched_and_pushed_down(root);
    assert_eq!(
        changed["records"],
        serde_json::json!({"added": 1, "removed": 1, "modified": 1, "unchanged": 1}),
        "{changed}"
    );
    let counts = changed["changed_values"].as_object().unwrap();
    let nonzero: Vec<(&String, &Value)> = counts.iter().filter(|(_, n)| **n != 0).collect();
    let one = serde_json::json!(1);
    assert_eq!(
        nonzero,
        vec![(&"amount".to_string(), &one), (&"price".to_string(), &one)],
        "{changed}"
    );
    assert_eq!(
        changed["samples"]["modified"][0]["changes"]["amount"],
        serde_json::json!({"base": "12.50", "candidate": "12.51"}),
        "{changed}"
    );
}

/// `report` (a diff) found its `rows` rows unchanged and no schema change — types and
/// nullability included.
fn assert_unchanged(report: &Value, rows: u64) {
    assert_eq!(
        report["records"],
        serde_json::json!({"added": 0, "removed": 0, "modified": 0, "unchanged": rows}),
        "{report}"
    );
    for change in ["added", "removed", "retyped", "nullability", "renamed"] {
        let found = &report["schema"][change];
        assert_eq!(found, &serde_json::json!([]), "{change}: {report}");
    }
}

/// `diff assay.typed --full` twice: fetched into memory, and compared in Trino by the
/// join-diff query (`--large-table-rows 1`). Both must agree on every count and sample; the
/// fetched report is returned.
fn fetched_and_pushed_down(root: &Path) -> Value {
    let args = ["diff", "assay.typed", "--full", "--json"];
    let fetched = ok(root, &args);
    common::assert_pushed_down_agrees(root, &args, "trino", &fetched);
    fetched
}

/// Ctrl-C during `diff <model>` on Trino cancels the diff's query in Trino, where it would
/// otherwise run on after the client is gone, and the diff ends with E004.
#[test]
fn an_interrupted_diff_cancels_its_query_in_trino() {
    let main = Main::create();
    let schema = unique("diffint");
    let dir = workspace(&main, &schema);
    let root = dir.path();
    // Scanning sf1000 would take days here; the marker finds the query in Trino.
    let marker = unique("phlo_marker");
    let slow = |scale: &str| {
        format!(
            "-- @table\n-- @key n\nselect count(*) as n from tpch.{scale}.lineitem where comment like '%{marker}%'\n"
        )
    };
    let model = "workflows/assay/transforms/slow.sql";
    write_file(root, model, &slow("tiny"));
    ok(root, &["run", "--json"]);
    write_file(root, model, &slow("sf1000"));
    let states = || -> Vec<(String, String)> {
        trino(&format!(
            "SELECT state, coalesce(error_code, '') FROM system.runtime.queries \
             WHERE query LIKE '%sf1000%{marker}%' AND query NOT LIKE '%LIMIT 0%' \
             AND query NOT LIKE '%system.runtime.queries%'"
        ))
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_owned(),
                r[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
    };
    let running = || states().iter().any(|(s, _)| s == "RUNNING");
    let out = common::interrupted(root, &["diff", "assay.slow", "--json"], running);
    common::assert_refused(&out, "E004", "nothing was written");

    // The query ended in Trino as cancelled by its user, not abandoned.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let ended = loop {
        let now = states();
        if now.iter().all(|(s, _)| s == "FAILED") || std::time::Instant::now() > deadline {
            break now;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(
        !ended.is_empty()
            && ended
                .iter()
                .all(|(s, e)| s == "FAILED" && e == "USER_CANCELED"),
        "{ended:?}"
    );
}
