//! Environments on the embedded engine (issue 16, SPEC §39, §44–48), end to end through the
//! real binary: a candidate built beside `main` (only what differs, the rest reused with an
//! identity proof), `main` read back untouched by an independent reader (Python `deltalake`),
//! promotion gates, publish, rollback and concurrent promotions.

mod common;

use common::{by_name, dataset, run, write_file};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const RESULTS: &str = "workflows/assay/transforms/results.sql";

/// raw → results → by_site; raw → sites; a test on results.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(
        root,
        "workflows/assay/transforms/raw.sql",
        "-- @table\nselect * from (values ('exp-001', 'oxford', 4.0), ('exp-002', 'oxford', 3.0), ('exp-003', 'cambridge', 5.0)) as t(experiment_id, site, result)\n",
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

/// The rows a reader following `reference`'s pointer to `model` sees, read by delta-rs.
fn read_through(root: &Path, reference: &str, model: &str) -> Vec<Vec<String>> {
    let shown = ok(root, &["ref", "show", reference, "--json"]);
    let pointer = shown["pointers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["model"] == model)
        .unwrap_or_else(|| panic!("{reference} has no pointer to {model}: {shown}"))
        .clone();
    read_delta(
        Path::new(pointer["path"].as_str().unwrap()),
        pointer["delta_version"].as_i64(),
    )
}

fn read_delta(table: &Path, version: Option<i64>) -> Vec<Vec<String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_delta_at.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).arg(table);
    if let Some(v) = version {
        cmd.arg(v.to_string());
    }
    let out = cmd.output().expect("python3 runs");
    assert!(
        out.status.success(),
        "read_delta_at.py {}: {}",
        table.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    serde_json::from_value(v["rows"].clone()).unwrap()
}

fn rows(values: &[(&str, &str, &str)]) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = values
        .iter()
        .map(|(a, b, c)| vec![a.to_string(), b.to_string(), c.to_string()])
        .collect();
    rows.sort();
    rows
}

fn gate<'a>(promotion: &'a Value, name: &str) -> &'a Value {
    promotion["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no gate {name}: {promotion}"))
}

fn reasons(plan: &Value, model: &str) -> Vec<String> {
    plan["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == model)
        .unwrap()["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_string())
        .collect()
}

/// Rows of `assay.results` whose values differ between the workspace and the environment's
/// materialisation (`diff`).
fn changed_rows(root: &Path, extra: &[&str]) -> u64 {
    let mut args = vec!["diff", "assay.results", "--key", "experiment_id", "--json"];
    args.extend_from_slice(extra);
    let out = run(root, &args);
    assert!(out.code <= 1, "{args:?}: {}\n{}", out.stdout, out.stderr);
    out.json()["records"]["modified"].as_u64().unwrap()
}

fn main_hash(root: &Path) -> String {
    ok(root, &["ref", "show", "main", "--json"])["hash"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_candidate_builds_beside_main_is_audited_published_and_rolled_back() {
    let dir = workspace();
    let root = dir.path();
    ok(root, &["run", "--json"]);
    let original = rows(&[
        ("exp-001", "oxford", "4.0"),
        ("exp-002", "oxford", "3.0"),
        ("exp-003", "cambridge", "5.0"),
    ]);
    let main_results = root.join(".phlo/warehouse/assay.results");
    assert_eq!(read_delta(&main_results, None), original);

    // A candidate shares main's tables: same hash, provenance recorded.
    let created = ok(root, &["ref", "create", "dev", "--from", "main", "--json"]);
    let listed = ok(root, &["ref", "list", "--json"]);
    let dev = listed["refs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "dev")
        .unwrap();
    assert_eq!(dev["created_from"]["ref"], "main");
    assert_eq!(dev["hash"], created["hash"]);
    let base_hash = main_hash(root);
    assert_eq!(dev["created_from"]["hash"].as_str().unwrap(), base_hash);

    // One model changes (and breaks the test): only it and its dependent build in dev.
    results(root, "result * 3");
    let plan = ok(root, &["plan", "--ref", "dev", "--json"]);
    assert_eq!(plan["environment"], "dev");
    let decisions = by_name(&plan, "decision");
    assert_eq!(decisions["assay.raw"], "cached");
    assert_eq!(decisions["reporting.sites"], "cached");
    assert_eq!(decisions["assay.results"], "build");
    assert_eq!(decisions["reporting.by_site"], "build");
    assert_eq!(reasons(&plan, "assay.raw"), ["cache_reuse"]);
    let reuse = &plan["models"][0]["reasons"][0]["detail"];
    assert!(
        reuse.as_str().unwrap().contains("still has identity"),
        "the identity proof is stated: {reuse}"
    );
    assert!(reasons(&plan, "assay.results").contains(&"cache_miss".to_string()));

    let failing = run(root, &["run", "--ref", "dev", "--json"]);
    assert_eq!(failing.code, 1, "{}\n{}", failing.stdout, failing.stderr);
    let report = failing.json();
    let statuses = by_name(&report, "status");
    assert_eq!(statuses["assay.raw"], "cached");
    assert_eq!(statuses["reporting.sites"], "cached");
    assert_eq!(statuses["assay.results"], "passed");
    assert_eq!(statuses["reporting.by_site"], "passed");

    // Main is untouched: its own table, read by delta-rs, and its pointers.
    assert_eq!(read_delta(&main_results, None), original);
    assert_eq!(read_through(root, "main", "assay.results"), original);
    assert_eq!(main_hash(root), base_hash);
    // The candidate reads its own table.
    assert_eq!(
        read_through(root, "dev", "assay.results"),
        rows(&[
            ("exp-001", "oxford", "12.0"),
            ("exp-002", "oxford", "9.0"),
            ("exp-003", "cambridge", "15.0"),
        ])
    );
    // It reads main's table for what it did not build: the same folder and version.
    let dev_show = ok(root, &["ref", "show", "dev", "--json"]);
    let raw = dev_show["pointers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["model"] == "assay.raw")
        .unwrap();
    assert_eq!(raw["location"], "assay.raw");
    assert_eq!(raw["built_in"], "local");

    // The failing test blocks promotion, with the gate named; nothing is published.
    let blocked = run(root, &["promote", "dev", "--to", "main", "--json"]);
    assert_eq!(blocked.code, 1, "{}\n{}", blocked.stdout, blocked.stderr);
    let blocked = blocked.json();
    assert_eq!(blocked["promoted"], false);
    assert_eq!(gate(&blocked, "tests")["passed"], false);
    assert!(gate(&blocked, "tests")["detail"]
        .as_str()
        .unwrap()
        .contains("results_below_twelve"));
    assert_eq!(gate(&blocked, "base")["passed"], true);
    assert_eq!(main_hash(root), base_hash);

    // Fixed: the candidate runs again, the gates pass, --check publishes nothing.
    results(root, "result * 2");
    ok(root, &["run", "--ref", "dev", "--json"]);
    let checked = ok(
        root,
        &["promote", "dev", "--to", "main", "--check", "--json"],
    );
    assert_eq!(checked["promoted"], false);
    for name in ["run", "tests", "blocked", "schema", "base", "conflicts"] {
        assert_eq!(gate(&checked, name)["passed"], true, "{name}: {checked}");
    }
    assert_eq!(main_hash(root), base_hash);
    // Commands that read an environment read the one --ref names: the workspace's SQL equals
    // dev's table, not main's.
    assert_eq!(changed_rows(root, &[]), 3);
    assert_eq!(changed_rows(root, &["--ref", "dev"]), 0);
    let explained = ok(
        root,
        &["explain", "assay.results", "--ref", "dev", "--json"],
    );
    assert_eq!(explained["environment"], "dev");

    let promoted = ok(root, &["promote", "dev", "--to", "main", "--json"]);
    assert_eq!(promoted["promoted"], true);
    assert_eq!(promoted["from"], "dev");
    assert_eq!(promoted["to"], "main");
    let promotion = promoted["promotion_id"].as_str().unwrap().to_string();
    let doubled = rows(&[
        ("exp-001", "oxford", "8.0"),
        ("exp-002", "oxford", "6.0"),
        ("exp-003", "cambridge", "10.0"),
    ]);
    assert_eq!(read_through(root, "main", "assay.results"), doubled);
    // Main's readers, the diff included, now read the published table.
    assert_eq!(changed_rows(root, &[]), 0);
    // Main's plan agrees: everything it holds is the workspace's version.
    let after = ok(root, &["plan", "--json"]);
    assert_eq!(after["summary"]["build"], 0, "{after}");
    // The PromotionRecord is kept with the reference.
    let events = ok(root, &["ref", "show", "main", "--json"])["events"].clone();
    assert_eq!(events[0]["kind"], "promotion");
    assert_eq!(events[0]["event_id"], promotion.as_str());

    // Rollback restores main's previous tables (read back), recorded.
    ok(
        root,
        &["rollback", "--ref", "main", "--to", &promotion, "--json"],
    );
    assert_eq!(read_through(root, "main", "assay.results"), original);
    assert_eq!(main_hash(root), base_hash);
    let events = ok(root, &["ref", "show", "main", "--json"])["events"].clone();
    assert_eq!(events[0]["kind"], "rollback");

    // main cannot be deleted; a candidate can, and main keeps what it points at.
    let refused = run(root, &["ref", "delete", "main", "--json"]);
    assert_eq!(refused.code, 2);
    assert_eq!(refused.json()["diagnostics"][0]["code"], "Y009");
    ok(root, &["ref", "delete", "dev", "--json"]);
    let listed = ok(root, &["ref", "list", "--json"]);
    assert_eq!(listed["refs"].as_array().unwrap().len(), 1);
    assert_eq!(read_through(root, "main", "assay.results"), original);
}

#[test]
fn a_model_rolls_back_to_an_earlier_delta_version() {
    let dir = workspace();
    let root = dir.path();
    ok(root, &["run", "--json"]);
    ok(root, &["ref", "create", "dev", "--json"]);
    let first = ok(root, &["ref", "show", "main", "--json"])["pointers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["model"] == "assay.results")
        .unwrap()["delta_version"]
        .as_i64()
        .unwrap();
    // Main itself moves forward: a plain run writes a new version and moves its pointer.
    results(root, "result + 1");
    ok(root, &["run", "--json"]);
    let plus_one = rows(&[
        ("exp-001", "oxford", "5.0"),
        ("exp-002", "oxford", "4.0"),
        ("exp-003", "cambridge", "6.0"),
    ]);
    assert_eq!(read_through(root, "main", "assay.results"), plus_one);

    let missing = run(root, &["rollback", "assay.results", "--to", "99", "--json"]);
    assert_eq!(missing.code, 2);
    assert_eq!(missing.json()["diagnostics"][0]["code"], "Y014");

    let done = ok(
        root,
        &[
            "rollback",
            "assay.results",
            "--to",
            &first.to_string(),
            "--json",
        ],
    );
    assert_eq!(done["model"], "assay.results");
    assert_eq!(
        read_through(root, "main", "assay.results"),
        rows(&[
            ("exp-001", "oxford", "4.0"),
            ("exp-002", "oxford", "3.0"),
            ("exp-003", "cambridge", "5.0"),
        ])
    );
    // The workspace still wants `result + 1`: the next plan builds it again.
    let plan = ok(root, &["plan", "--json"]);
    assert_eq!(by_name(&plan, "decision")["assay.results"], "build");
}

#[test]
fn of_two_concurrent_promotions_one_wins_and_the_other_is_refused_as_stale() {
    let dir = workspace();
    let root = dir.path();
    ok(root, &["run", "--json"]);
    ok(root, &["ref", "create", "a", "--json"]);
    ok(root, &["ref", "create", "b", "--json"]);
    results(root, "result * 2");
    ok(root, &["run", "--ref", "a", "--json"]);
    results(root, "result / 2");
    ok(root, &["run", "--ref", "b", "--json"]);
    let hash_of = |r: &str| {
        ok(root, &["ref", "show", r, "--json"])["hash"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (a, b) = (hash_of("a"), hash_of("b"));

    let spawn = |r: &str| {
        Command::new(common::bin())
            .arg("-C")
            .arg(root)
            .args(["promote", r, "--to", "main", "--json"])
            .env_remove("PHLO_STATE_URL")
            .output()
            .unwrap()
    };
    let (out_a, out_b) = std::thread::scope(|s| {
        let ta = s.spawn(|| spawn("a"));
        let tb = s.spawn(|| spawn("b"));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    let won = [&out_a, &out_b].map(|o| o.status.success());
    assert_eq!(
        won.iter().filter(|w| **w).count(),
        1,
        "exactly one wins:\na: {}\n{}\nb: {}\n{}",
        String::from_utf8_lossy(&out_a.stdout),
        String::from_utf8_lossy(&out_a.stderr),
        String::from_utf8_lossy(&out_b.stdout),
        String::from_utf8_lossy(&out_b.stderr)
    );
    let (winner, loser, loser_out) = if won[0] {
        (&a, "b", &out_b)
    } else {
        (&b, "a", &out_a)
    };
    // The loser is refused: stale at publish (Y012), or its base gate already failed.
    let refusal: Value = serde_json::from_slice(&loser_out.stdout).unwrap();
    let stale = refusal["diagnostics"][0]["code"] == "Y012";
    let base_failed = refusal["promoted"] == false && gate(&refusal, "base")["passed"] == false;
    assert!(stale || base_failed, "refused as stale: {refusal}");
    // Nothing lost: main holds exactly the winner's pointers, the loser keeps its own.
    assert_eq!(&main_hash(root), winner);
    assert_eq!(
        hash_of(loser),
        if loser == "a" { a.clone() } else { b.clone() }
    );
    // Promoting the loser again is refused by the base gate: main moved since it was created.
    let again = run(root, &["promote", loser, "--json"]);
    assert_eq!(again.code, 1);
    assert_eq!(gate(&again.json(), "base")["passed"], false);
}

#[test]
fn a_candidate_that_advanced_after_its_run_is_not_promoted() {
    let dir = workspace();
    let root = dir.path();
    ok(root, &["run", "--json"]);
    ok(root, &["ref", "create", "dev", "--json"]);
    results(root, "result * 2");
    ok(root, &["run", "--ref", "dev", "--json"]);
    results(root, "result * 1");
    ok(root, &["run", "--ref", "dev", "--json"]);
    // The environment moves without a run: its table back to its first version.
    ok(
        root,
        &[
            "rollback",
            "assay.results",
            "--ref",
            "dev",
            "--to",
            "0",
            "--json",
        ],
    );
    let refused = run(root, &["promote", "dev", "--json"]);
    assert_eq!(refused.code, 1);
    let refused = refused.json();
    assert_eq!(gate(&refused, "run")["passed"], false);
    assert!(gate(&refused, "run")["detail"]
        .as_str()
        .unwrap()
        .contains("run it again"));
}

#[test]
fn references_are_managed_explicitly_with_coded_errors() {
    let dir = workspace();
    let root = dir.path();
    ok(root, &["run", "--json"]);
    let code_of = |args: &[&str]| {
        let out = run(root, args);
        assert_eq!(out.code, 2, "{args:?}: {}\n{}", out.stdout, out.stderr);
        out.json()["diagnostics"][0]["code"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // No command creates a reference as a side effect.
    assert_eq!(code_of(&["run", "--ref", "nope", "--json"]), "Y007");
    assert_eq!(code_of(&["plan", "--ref", "nope", "--json"]), "Y007");
    assert_eq!(code_of(&["ref", "create", "../up", "--json"]), "Y010");
    assert_eq!(code_of(&["ref", "create", "local", "--json"]), "Y010");
    ok(root, &["ref", "create", "feature/x", "--json"]);
    assert_eq!(code_of(&["ref", "create", "feature/x", "--json"]), "Y008");
    assert_eq!(
        code_of(&["ref", "create", "y", "--from", "nope", "--json"]),
        "Y007"
    );
    assert_eq!(code_of(&["check", "--ref", "feature/x", "--json"]), "Y015");
    assert_eq!(code_of(&["ref", "delete", "nope", "--json"]), "Y007");
    // A candidate's tables live under its own folder, never main's.
    results(root, "result * 2");
    ok(root, &["run", "--ref", "feature/x", "--json"]);
    let shown = ok(root, &["ref", "show", "feature/x", "--json"]);
    let own = shown["pointers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["model"] == "assay.results")
        .unwrap()["location"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(own.starts_with(".refs/feature_x_"), "{own}");
    // Deleting it removes the tables only it pointed at.
    ok(root, &["ref", "delete", "feature/x", "--json"]);
    assert!(!root.join(".phlo/warehouse").join(&own).exists());
}

const SITES: &str = "workflows/reporting/transforms/sites.sql";

/// results keyed, with one row removed (exp-003), one added (exp-004), one modified
/// (exp-001) and a new column; `factor` scales exp-001.
fn keyed_results(root: &Path, factor: &str) {
    write_file(
        root,
        RESULTS,
        &format!(
            "-- @table\n-- @key experiment_id\nselect experiment_id, site, case when experiment_id = 'exp-001' then result * {factor} else result end as result, 'v2' as note from assay.raw where experiment_id <> 'exp-003'\nunion all select 'exp-004', 'leeds', 1.0, 'v2'\n"
        ),
    );
}

fn data_diff_gate(root: &Path, require: bool) -> (bool, String) {
    let mut args = vec!["promote", "dev", "--to", "main", "--check", "--json"];
    if require {
        args.push("--require-diff");
    }
    let out = run(root, &args);
    let promotion = out.json();
    let g = gate(&promotion, "data_diff");
    assert_eq!(
        out.code,
        if promotion["gates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["passed"] == true)
        {
            0
        } else {
            1
        },
        "{promotion}"
    );
    (
        g["passed"].as_bool().unwrap(),
        g["detail"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_branch_diff_classifies_every_dataset_and_is_the_data_diff_gates_evidence() {
    let dir = workspace();
    let root = dir.path();
    ok(root, &["run", "--json"]);
    let created = ok(root, &["ref", "create", "dev", "--json"]);
    // The environment evidence of the new candidate is exported with its provenance.
    let slug = |name: &str| {
        let out = Command::new("python3")
            .args([
                "-c",
                "import hashlib,re,sys; n=sys.argv[1]; print(re.sub('[^A-Za-z0-9]','_',n)+'_'+hashlib.sha256(n.encode()).hexdigest()[:8])",
                name,
            ])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let exported = root.join(format!(".phlo/transform/environment_{}.json", slug("dev")));
    let evidence: Value =
        serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    assert_eq!(evidence["ref"], "dev");
    assert_eq!(evidence["hash"], created["hash"]);
    assert_eq!(evidence["created_from"]["ref"], "main");
    assert_eq!(evidence["created_from"]["hash"], main_hash(root).as_str());
    assert_eq!(evidence["catalog_status"], "created");
    assert!(evidence["catalog"]
        .as_str()
        .unwrap()
        .starts_with(".refs/dev_"));

    // dev: results changed (rows and a column), a model added, one removed.
    keyed_results(root, "2");
    write_file(
        root,
        "workflows/reporting/transforms/summary.sql",
        "-- @table\nselect count(*) as n from assay.results\n",
    );
    std::fs::remove_file(root.join(SITES)).unwrap();
    ok(root, &["run", "--ref", "dev", "--json"]);
    let dev_hash = ok(root, &["ref", "show", "dev", "--json"])["hash"]
        .as_str()
        .unwrap()
        .to_string();
    // The run moved dev: its evidence follows, bound to the new hash, provenance kept.
    let evidence: Value =
        serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    assert_eq!(evidence["hash"], dev_hash.as_str());
    assert_eq!(evidence["created_from"]["ref"], "main");
    let single: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".phlo/transform/environment.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(single["hash"], dev_hash.as_str());

    // Without a diff, --require-diff fails the gate; without the flag it passes and says so.
    let (passed, detail) = data_diff_gate(root, true);
    assert!(!passed && detail.contains("no branch diff"), "{detail}");
    let (passed, detail) = data_diff_gate(root, false);
    assert!(passed && detail.contains("not required"), "{detail}");

    // The branch diff classifies every dataset, with row counts and schema changes.
    let diff = ok(root, &["diff", "--from", "main", "--to", "dev", "--json"]);
    assert_eq!(diff["from"]["ref"], "main");
    assert_eq!(diff["from"]["hash"], main_hash(root).as_str());
    assert_eq!(diff["to"]["hash"], dev_hash.as_str());
    assert_eq!(diff["full"], false);
    let status = |m: &str| dataset(&diff, m)["status"].as_str().unwrap().to_string();
    assert_eq!(status("assay.raw"), "unchanged");
    assert_eq!(status("assay.results"), "changed");
    assert_eq!(status("reporting.by_site"), "changed");
    assert_eq!(status("reporting.summary"), "added");
    assert_eq!(status("reporting.sites"), "removed");
    assert_eq!(
        diff["summary"],
        serde_json::json!({"added": 1, "removed": 1, "changed": 2, "unchanged": 1, "absent": 0})
    );
    let results = dataset(&diff, "assay.results");
    assert_eq!(
        results["rows"],
        serde_json::json!({"from": 3, "to": 3, "delta": 0})
    );
    assert_eq!(results["schema"]["added"][0]["name"], "note");
    assert!(results["data"].is_null(), "no keyed diff without --full");
    assert_eq!(
        dataset(&diff, "reporting.sites")["rows"],
        serde_json::json!({"from": 2, "to": null, "delta": -2})
    );
    assert_eq!(dataset(&diff, "reporting.summary")["rows"]["to"], 1);
    assert_eq!(
        dataset(&diff, "reporting.summary")["schema"]["added"][0]["name"],
        "n"
    );
    assert_eq!(dataset(&diff, "assay.raw")["rows"]["from"], 3);
    // Not --full: no evidence for --require-diff.
    let (passed, detail) = data_diff_gate(root, true);
    assert!(!passed && detail.contains("not --full"), "{detail}");

    // --full: the changed models diffed row by row on their keys.
    let full = ok(
        root,
        &["diff", "--from", "main", "--to", "dev", "--full", "--json"],
    );
    common::assert_results_full_diff(&full);
    assert_eq!(full["passed"], true);
    // One model between the two environments: `diff <model>` with reference sides reads the
    // same tables and finds the same rows.
    let one = ok(
        root,
        &[
            "diff",
            "assay.results",
            "--from",
            "ref:main",
            "--to",
            "ref:dev",
            "--full",
            "--json",
        ],
    );
    common::assert_results_records(&one);
    for (side, reference) in [("base", "main"), ("candidate", "dev")] {
        let description = one[side]["description"].as_str().unwrap();
        assert!(
            description.starts_with(&format!("assay.results in `{reference}` (Delta version")),
            "{description}"
        );
    }
    // A reference without the model's dataset, and one that does not exist: coded errors.
    let missing = run(
        root,
        &[
            "diff",
            "reporting.summary",
            "--from",
            "ref:main",
            "--to",
            "ref:dev",
            "--json",
        ],
    );
    common::assert_refused(&missing, "D001", "run --ref main -s reporting.summary");
    let unknown = run(
        root,
        &["diff", "assay.results", "--from", "ref:nope", "--json"],
    );
    assert_eq!(unknown.code, 2, "{}", unknown.stdout);
    assert_eq!(unknown.json()["diagnostics"][0]["code"], "Y007");
    // It is recorded and exported as the evidence, and the gate reads it.
    let exported: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".phlo/transform/branch_diff.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(exported["evidence_id"], full["evidence_id"]);
    let (passed, detail) = data_diff_gate(root, true);
    assert!(passed, "{detail}");
    assert!(
        detail.contains(full["evidence_id"].as_str().unwrap()),
        "{detail}"
    );
    // The text report says the same.
    let text = run(root, &["diff", "--from", "main", "--to", "dev"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    for line in [
        "CHANGED   assay.results",
        "ADDED     reporting.summary",
        "REMOVED   reporting.sites",
        "+ note Utf8",
    ] {
        assert!(text.stdout.contains(line), "{line}:\n{}", text.stdout);
    }

    // dev changes after its diff: the evidence is stale.
    keyed_results(root, "2.5");
    ok(root, &["run", "--ref", "dev", "--json"]);
    let (passed, detail) = data_diff_gate(root, true);
    assert!(!passed && detail.contains("stale"), "{detail}");

    // A diff policy the candidate violates fails the gate, required or not.
    write_file(
        root,
        "phlo.toml",
        "[model.\"assay.results\".diff]\nmax_removed_rows = 0\n",
    );
    let violated = run(
        root,
        &["diff", "--from", "main", "--to", "dev", "--full", "--json"],
    );
    assert_eq!(violated.code, 1, "{}\n{}", violated.stdout, violated.stderr);
    let violated = violated.json();
    assert_eq!(violated["passed"], false);
    assert_eq!(violated["violations"][0]["code"], "D010");
    for require in [true, false] {
        let (passed, detail) = data_diff_gate(root, require);
        assert!(!passed && detail.contains("D010"), "{detail}");
    }

    // A reference is never compared with itself.
    let same = run(root, &["diff", "--from", "dev", "--to", "dev", "--json"]);
    assert_eq!(same.code, 2);
    assert_eq!(same.json()["diagnostics"][0]["code"], "D007");

    // Deleting dev deletes its evidence exports too.
    ok(root, &["ref", "delete", "dev", "--json"]);
    assert!(!root
        .join(format!(".phlo/transform/environment_{}.json", slug("dev")))
        .exists());
}

#[test]
fn lineage_under_a_reference_names_the_tables_it_reads() {
    let dir = workspace();
    let root = dir.path();
    ok(root, &["run", "--json"]);
    ok(root, &["ref", "create", "dev", "--json"]);
    results(root, "result * 2");
    ok(
        root,
        &["run", "--ref", "dev", "-s", "assay.results", "--json"],
    );
    let lineage = ok(
        root,
        &["lineage", "assay.results", "--ref", "dev", "--json"],
    );
    // The lineage report itself, unchanged…
    assert_eq!(lineage["dataset"], "assay.results");
    // …and where dev reads each model in its lineage.
    let env = &lineage["environment"];
    assert_eq!(env["ref"], "dev");
    let reads = env["reads"].as_array().unwrap();
    let read = |m: &str| reads.iter().find(|r| r["model"] == m).cloned();
    let results = read("assay.results").unwrap();
    assert!(results["location"]
        .as_str()
        .unwrap()
        .starts_with(".refs/dev_"));
    assert_eq!(results["built_in"], "dev");
    let raw = read("assay.raw").unwrap();
    assert_eq!(raw["location"], "assay.raw");
    assert_eq!(raw["built_in"], "local");
    assert!(raw["delta_version"].is_i64());
    assert!(
        read("reporting.sites").is_none(),
        "outside the lineage: {env}"
    );
    // Main reads its own table; the documents describe the workspace and refuse --ref.
    let main = ok(
        root,
        &["lineage", "assay.results", "--ref", "main", "--json"],
    );
    assert_eq!(
        main["environment"]["reads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == "assay.results")
            .unwrap()["location"],
        "assay.results"
    );
    let text = run(root, &["lineage", "assay.results", "--ref", "dev"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("In `dev`@"), "{}", text.stdout);
    let refused = run(
        root,
        &["lineage", "--format", "graph", "--ref", "dev", "--json"],
    );
    assert_eq!(refused.code, 2);
    assert_eq!(refused.json()["diagnostics"][0]["code"], "Y015");
    assert_eq!(
        run(root, &["lineage", "--ref", "nope", "--json"]).json()["diagnostics"][0]["code"],
        "Y007"
    );
}
