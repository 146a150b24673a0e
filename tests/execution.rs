//! SPEC §63–64 on the local engine: A → B → C and D → E with B failing at execution.

mod common;

use common::{by_name, run, write_file};

#[test]
fn independent_branches_continue_and_dependents_of_a_failure_are_blocked() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    common::spec64_workspace(root);
    for jobs in ["1", "4"] {
        let _ = std::fs::remove_dir_all(root.join(".phlo"));
        let out = run(root, &["run", "--jobs", jobs, "--json"]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        let report = out.json();
        let status = by_name(&report, "status");
        let want: Vec<(&str, &str)> = vec![
            ("x.a", "passed"),
            ("x.b", "failed"),
            ("x.c", "blocked"),
            ("x.d", "passed"),
            ("x.e", "passed"),
        ];
        for (model, s) in want {
            assert_eq!(status[model], s, "--jobs {jobs}: {model}");
        }
        let b = report["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "x.b")
            .unwrap();
        // `cast('seven' as int)` fails on the data: an SQL error of the model (E006).
        assert_eq!(b["error"]["code"], "E006");
        assert_eq!(b["error"]["category"], "sql");
        assert!(
            !root.join(".phlo/warehouse/x.c").exists(),
            "a blocked model never runs"
        );
        // State records the failure and the block; the next plan rebuilds b and c only.
        let plan = run(root, &["plan", "--json"]).json();
        let decisions = by_name(&plan, "decision");
        assert_eq!(
            (
                decisions["x.a"].as_str(),
                decisions["x.b"].as_str(),
                decisions["x.c"].as_str()
            ),
            ("skip", "build", "build")
        );
        assert_eq!(
            (decisions["x.d"].as_str(), decisions["x.e"].as_str()),
            ("skip", "skip")
        );
    }
}

#[test]
fn a_deep_chain_of_views_plans_without_overflowing_the_stack() {
    // Views are inlined into their readers, so 30 chained views make one deep DataFusion plan
    // for the final table; with default thread stacks this aborted with a stack overflow.
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write_file(
        root,
        "transforms/chain/v00.sql",
        "select 1 as id, 10 as amount\n",
    );
    for level in 1..=30 {
        let prev = format!("chain.v{:02}", level - 1);
        write_file(
            root,
            &format!("transforms/chain/v{level:02}.sql"),
            &format!("select id, amount + 1 as amount\nfrom {prev}\nwhere amount > 0\n"),
        );
    }
    write_file(
        root,
        "transforms/chain/result.sql",
        "-- @table\nselect * from chain.v30\n",
    );
    let out = run(root, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    let result = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "chain.result")
        .unwrap();
    assert_eq!(
        (result["status"].as_str(), result["rows"].as_u64()),
        (Some("passed"), Some(1))
    );
}

/// Issue 17: data tests run `--jobs` at once. Whatever order they end in, each gets its own
/// result (failed with its violations, passed, blocked over a model that failed), the report
/// lists them in the plan's order, and every result is in the state: a run after it reuses
/// exactly the passes.
#[test]
fn tests_run_several_at_once_and_each_result_is_its_own_and_recorded() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    for i in 0..10 {
        write_file(
            root,
            &format!("transforms/x/m{i:02}.sql"),
            &format!("-- @table\nselect {i} as id, {i} * 10 as amount\n"),
        );
        // Fails for ids divisible by three, with one violating row.
        write_file(
            root,
            &format!("tests/t{i:02}.sql"),
            &format!("select * from x.m{i:02} where id % 3 = 0\n"),
        );
    }
    write_file(
        root,
        "transforms/x/bad.sql",
        "-- @table\nselect cast('seven' as int) as id\n",
    );
    write_file(
        root,
        "tests/t_bad.sql",
        "select * from x.bad where id < 0\n",
    );
    let tests = |report: &serde_json::Value| -> Vec<(String, String, Option<u64>)> {
        report["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    t["status"].as_str().unwrap().to_string(),
                    t["violations"].as_u64(),
                )
            })
            .collect()
    };
    let one_at_a_time = run(root, &["run", "--jobs", "1", "--json"]);
    assert_eq!(one_at_a_time.code, 1, "{}", one_at_a_time.stderr);
    let _ = std::fs::remove_dir_all(root.join(".phlo"));
    let first = run(root, &["run", "--jobs", "4", "--json"]);
    assert_eq!(first.code, 1, "{}", first.stderr);
    let results = tests(&first.json());
    assert_eq!(results, tests(&one_at_a_time.json()));
    assert_eq!(results.len(), 11, "{results:?}");
    for (name, status, violations) in &results {
        let expected = match name.as_str() {
            "t_bad" => ("blocked", None),
            "t00" | "t03" | "t06" | "t09" => ("failed", Some(1)),
            _ => ("passed", Some(0)),
        };
        assert_eq!((status.as_str(), *violations), expected, "{name}");
    }
    let second = run(root, &["run", "--jobs", "4", "--json"]);
    for (name, status, _) in tests(&second.json()) {
        let expected = match name.as_str() {
            "t_bad" => "blocked",
            "t00" | "t03" | "t06" | "t09" => "failed",
            _ => "cached",
        };
        assert_eq!(status, expected, "{name}");
    }
}
