//! SPEC §118 on testdata/mvp, with the real binary and the local engine.

mod common;

use common::{by_name, map, run, workspace};
use std::collections::BTreeMap;

#[test]
fn check_derives_the_graph_without_configuration() {
    let ws = workspace("mvp");
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["diagnostics"].as_array().unwrap().len(), 0);
    let deps: BTreeMap<String, Vec<String>> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let d = m["depends_on"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            (m["name"].as_str().unwrap().to_string(), d)
        })
        .collect();
    assert_eq!(deps["assay.raw"], Vec::<String>::new());
    assert_eq!(deps["assay.results"], vec!["assay.raw"]);
    assert_eq!(deps["reporting.monthly"], vec!["assay.results"]);
    let human = run(ws.path(), &["check"]);
    assert!(
        human
            .stdout
            .contains("assay.raw → assay.results → reporting.monthly"),
        "{}",
        human.stdout
    );
}

#[test]
fn run_builds_in_order_then_skips_then_rebuilds_only_what_changed() {
    let ws = workspace("mvp");
    let dir = ws.path();

    let first = run(dir, &["run", "--json"]);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let report = first.json();
    let order: Vec<&str> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["assay.raw", "assay.results", "reporting.monthly"]);
    assert_eq!(
        by_name(&report, "status"),
        map(&[
            ("assay.raw", "passed"),
            ("assay.results", "passed"),
            ("reporting.monthly", "passed")
        ])
    );
    let tests: Vec<(&str, &str)> = report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["status"].as_str().unwrap()))
        .collect();
    assert_eq!(tests.len(), 4);
    assert!(tests.iter().all(|(_, s)| *s == "passed"), "{tests:?}");
    assert_eq!(report["models"][0]["rows"], 4);
    assert!(dir.join(".phlo/warehouse/assay.raw/_delta_log").is_dir());
    for artifact in ["manifest.json", "graph.json", "plan.json", "run.json"] {
        assert!(
            dir.join(".phlo/transform").join(artifact).is_file(),
            "{artifact}"
        );
    }

    // Second run: nothing changed.
    let plan = run(dir, &["plan", "--json"]).json();
    assert_eq!(
        by_name(&plan, "decision"),
        map(&[
            ("assay.raw", "skip"),
            ("assay.results", "skip"),
            ("reporting.monthly", "skip")
        ])
    );
    assert!(plan["models"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["reasons"][0]["kind"] == "unchanged"));
    let second = run(dir, &["run", "--json"]);
    assert_eq!(second.code, 0);
    assert_eq!(
        by_name(&second.json(), "status"),
        map(&[
            ("assay.raw", "skipped"),
            ("assay.results", "skipped"),
            ("reporting.monthly", "skipped")
        ])
    );

    // Whitespace- and comment-only edit: still skipped.
    let results = dir.join("workflows/assay/transforms/results.sql");
    std::fs::write(
        &results,
        "-- all results, unfiltered\nSELECT\n    *\nFROM   assay.raw   -- the raw table\n",
    )
    .unwrap();
    let plan = run(dir, &["plan", "--json"]).json();
    assert_eq!(by_name(&plan, "decision")["assay.results"], "skip");

    // A real edit rebuilds assay.results and reporting.monthly, not assay.raw.
    std::fs::write(&results, "select * from assay.raw where result > 4\n").unwrap();
    let plan = run(dir, &["plan", "--json"]).json();
    assert_eq!(
        by_name(&plan, "decision"),
        map(&[
            ("assay.raw", "skip"),
            ("assay.results", "build"),
            ("reporting.monthly", "build")
        ])
    );
    let kinds = |name: &str| -> Vec<String> {
        plan["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap()["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds("assay.results"), ["sql_semantic_change"]);
    assert_eq!(
        kinds("reporting.monthly"),
        ["dependency_change", "upstream_rebuild"]
    );
    let third = run(dir, &["run", "--json"]);
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert_eq!(
        by_name(&third.json(), "status"),
        map(&[
            ("assay.raw", "skipped"),
            ("assay.results", "passed"),
            ("reporting.monthly", "passed")
        ])
    );
}

#[test]
fn a_failing_model_keeps_earlier_materialisations_and_is_recorded() {
    let ws = workspace("mvp");
    let dir = ws.path();
    assert_eq!(run(dir, &["run"]).code, 0);
    let raw = dir.join("workflows/assay/transforms/raw.sql");
    let original = std::fs::read_to_string(&raw).unwrap();
    // Parses, resolves, but fails in the engine: the cast cannot succeed at execution.
    std::fs::write(
        &raw,
        original.replace(
            "select *",
            "select experiment_id, sample_id, site, cast(site as int) as result",
        ),
    )
    .unwrap();
    let out = run(dir, &["run", "--json"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    assert_eq!(
        by_name(&report, "status"),
        map(&[
            ("assay.raw", "failed"),
            ("assay.results", "blocked"),
            ("reporting.monthly", "blocked")
        ])
    );
    // `cast(site as int)` fails on the data: an SQL error of the model (E006).
    assert_eq!(report["models"][0]["error"]["code"], "E006");
    // The table still holds the previous version, and state still records it.
    std::fs::write(&raw, original).unwrap();
    let plan = run(dir, &["plan", "--json"]).json();
    assert_eq!(by_name(&plan, "decision")["assay.raw"], "skip");
    let test = run(dir, &["test", "--json"]);
    assert_eq!(test.code, 0, "{}", test.stdout);
}

#[test]
fn plan_says_whether_an_edit_is_text_only_ast_level_or_semantic() {
    let ws = workspace("mvp");
    let dir = ws.path();
    assert_eq!(run(dir, &["run"]).code, 0);
    let results = dir.join("workflows/assay/transforms/results.sql");
    let model = |plan: &serde_json::Value| {
        plan["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "assay.results")
            .unwrap()
            .clone()
    };

    std::fs::write(&results, "-- reformatted\nSELECT *\n  FROM assay.raw\n").unwrap();
    let m = model(&run(dir, &["plan", "--json"]).json());
    assert_eq!(
        (m["decision"].as_str(), m["sql_change"].as_str()),
        (Some("skip"), Some("text"))
    );
    assert!(m["reasons"][0]["detail"]
        .as_str()
        .unwrap()
        .contains("formatting or comments only"));

    // `SELECT *` and the same explicit column list plan identically.
    std::fs::write(
        &results,
        "select experiment_id, sample_id, site, result from assay.raw\n",
    )
    .unwrap();
    let m = model(&run(dir, &["plan", "--json"]).json());
    assert_eq!(
        (m["decision"].as_str(), m["sql_change"].as_str()),
        (Some("build"), Some("ast"))
    );
    assert_eq!(m["reasons"][0]["kind"], "sql_ast_change");

    std::fs::write(&results, "select experiment_id, result from assay.raw\n").unwrap();
    let m = model(&run(dir, &["plan", "--json"]).json());
    assert_eq!(
        (m["sql_change"].as_str(), m["reasons"][0]["kind"].as_str()),
        (Some("semantic"), Some("sql_semantic_change"))
    );
}

#[test]
fn apply_executes_a_stored_plan_and_rejects_it_once_stale() {
    let ws = workspace("mvp");
    let dir = ws.path();
    let plan = run(dir, &["plan", "--json"]).json();
    let plan_id = plan["plan_id"].as_str().unwrap().to_string();

    // Edit a model after planning: the stored plan no longer describes what would run.
    let results = dir.join("workflows/assay/transforms/results.sql");
    std::fs::write(&results, "select * from assay.raw where result > 4\n").unwrap();
    let stale = run(dir, &["apply", &plan_id, "--json"]);
    assert_eq!(stale.code, 2, "{}", stale.stdout);
    let d = &stale.json()["diagnostics"][0];
    assert_eq!(d["code"], "L002");
    assert!(
        d["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("assay.results:")),
        "{d}"
    );
    assert!(
        !dir.join(".phlo/warehouse/assay.raw").exists(),
        "a stale plan must not run anything"
    );

    // Replanned, the new id applies.
    let replanned = run(dir, &["plan", "--json"]).json();
    let new_id = replanned["plan_id"].as_str().unwrap().to_string();
    assert_ne!(new_id, plan_id);
    let applied = run(dir, &["apply", &new_id, "--json"]);
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    assert_eq!(applied.json()["plan_id"], new_id.as_str());

    let unknown = run(dir, &["apply", "0000000000000000"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("error[L003]"), "{}", unknown.stderr);
}

/// Issue 17: a run after nothing changed does not re-run data tests that passed at their
/// current version; `--rerun-tests` does; an edit re-runs only the tests over what changed.
#[test]
fn tests_that_passed_at_their_version_are_cached_until_what_they_read_changes() {
    let ws = workspace("mvp");
    let dir = ws.path();
    let statuses = |args: &[&str]| -> BTreeMap<String, (String, Option<String>)> {
        let out = run(dir, args);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        out.json()["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    (
                        t["status"].as_str().unwrap().to_string(),
                        t["reason"].as_str().map(str::to_string),
                    ),
                )
            })
            .collect()
    };
    let first = statuses(&["run", "--json"]);
    assert_eq!(first.len(), 4);
    assert!(first.values().all(|(s, _)| s == "passed"), "{first:?}");

    let second = statuses(&["run", "--json"]);
    assert!(second.values().all(|(s, _)| s == "cached"), "{second:?}");
    let (_, reason) = &second["results_positive"];
    assert!(
        reason.as_deref().unwrap().contains("--rerun-tests"),
        "{reason:?}"
    );
    let text = run(dir, &["run"]);
    assert!(text.stdout.contains("4 cached"), "{}", text.stdout);

    let forced = statuses(&["run", "--json", "--rerun-tests"]);
    assert!(forced.values().all(|(s, _)| s == "passed"), "{forced:?}");

    // `assay.results` changes: its custom test runs again, the key tests of `assay.raw` do not.
    std::fs::write(
        dir.join("workflows/assay/transforms/results.sql"),
        "select * from assay.raw where result > 4\n",
    )
    .unwrap();
    let after_edit = statuses(&["run", "--json"]);
    for (name, (status, _)) in &after_edit {
        let expected = if name == "results_positive" {
            "passed"
        } else {
            "cached"
        };
        assert_eq!(status, expected, "{name}: {after_edit:?}");
    }
}

/// Issue 12: a stored plan another version of phlo-transform wrote, or one damaged in the
/// state database, is refused with its own code (L012, L013), never read as "no stored plan"
/// (L003) nor misread; nothing runs.
#[test]
fn apply_refuses_a_stored_plan_of_another_format_or_that_cannot_be_read() {
    use sqlx::Connection;
    let ws = workspace("mvp");
    let dir = ws.path();
    let plan_id = run(dir, &["plan", "--json"]).json()["plan_id"]
        .as_str()
        .unwrap()
        .to_string();
    let db = dir.join(".phlo/transform/state.db");
    // Rewrites the stored body of `plan_id` as `edit` says, behind phlo-transform's back.
    let tamper = |edit: &dyn Fn(&mut serde_json::Value)| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let url = format!("sqlite://{}", db.display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let body: String = sqlx::query_scalar("SELECT body FROM plans WHERE plan_id = ?")
                .bind(&plan_id)
                .fetch_one(&mut conn)
                .await
                .unwrap();
            let mut body: serde_json::Value = serde_json::from_str(&body).unwrap();
            edit(&mut body);
            sqlx::query("UPDATE plans SET body = ? WHERE plan_id = ?")
                .bind(body.to_string())
                .bind(&plan_id)
                .execute(&mut conn)
                .await
                .unwrap();
        })
    };
    let refused = |code: &str, says: &str| {
        let out = run(dir, &["apply", &plan_id, "--json"]);
        assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
        let d = &out.json()["diagnostics"][0];
        assert_eq!(d["code"], code, "{d}");
        assert!(d["message"].as_str().unwrap().contains(says), "{d}");
        assert!(
            !dir.join(".phlo/warehouse/assay.raw").exists(),
            "a refused plan must not run anything"
        );
    };

    tamper(&|body| body["format"] = serde_json::json!(99));
    refused("L012", "is in format 99, this phlo-transform reads format");
    tamper(&|body| {
        body.as_object_mut().unwrap().remove("format");
    });
    refused("L012", "is in format 0");
    tamper(&|body| {
        body["format"] = serde_json::json!(phlo_transform_plan::PLAN_FORMAT);
        body["models"] = serde_json::json!("not a list");
    });
    refused("L013", "cannot be read");
}
