//! The state backends end to end (SPEC §77, decision 8): the real binary on testdata/mvp with
//! the default SQLite state and with `--state postgres://…` (a fresh database per test on the
//! local server, or PHLO_TEST_POSTGRES_URL's; an unreachable server fails these tests), and
//! the `state runs | show | model` commands in text and JSON.

mod common;

use common::{by_name, map, run, workspace, Output};
use phlo_transform_state::testing::PgTestDb;
use std::path::Path;

fn with_state(dir: &Path, state: Option<&str>, args: &[&str]) -> Output {
    let mut all: Vec<&str> = Vec::new();
    if let Some(s) = state {
        all.extend(["--state", s]);
    }
    all.extend(args);
    run(dir, &all)
}

fn all_skipped() -> std::collections::BTreeMap<String, String> {
    map(&[
        ("assay.raw", "skipped"),
        ("assay.results", "skipped"),
        ("reporting.monthly", "skipped"),
    ])
}

#[test]
fn run_twice_then_plan_and_apply_on_postgres() {
    let db = PgTestDb::create_blocking();
    let ws = workspace("mvp");
    let dir = ws.path();
    let pg = Some(db.url());

    let first = with_state(dir, pg, &["run", "--json"]);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    assert_eq!(
        by_name(&first.json(), "status"),
        map(&[
            ("assay.raw", "passed"),
            ("assay.results", "passed"),
            ("reporting.monthly", "passed")
        ])
    );
    // The state is in PostgreSQL: no SQLite file appears.
    assert!(!dir.join(".phlo/transform/state.db").exists());

    let second = with_state(dir, pg, &["run", "--json"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(by_name(&second.json(), "status"), all_skipped());
    // The plan the second run executed: every model skipped as `unchanged`.
    let executed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".phlo/transform/plan.json")).unwrap(),
    )
    .unwrap();
    for m in executed["models"].as_array().unwrap() {
        assert_eq!(m["decision"], "skip", "{m}");
        assert_eq!(m["reasons"][0]["kind"], "unchanged", "{m}");
    }

    // plan + apply <id>: the stored plan is read back from PostgreSQL.
    std::fs::write(
        dir.join("workflows/assay/transforms/results.sql"),
        "select * from assay.raw where result > 4\n",
    )
    .unwrap();
    let plan = with_state(dir, pg, &["plan", "--json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let plan = plan.json();
    assert_eq!(
        by_name(&plan, "decision"),
        map(&[
            ("assay.raw", "skip"),
            ("assay.results", "build"),
            ("reporting.monthly", "build")
        ])
    );
    let plan_id = plan["plan_id"].as_str().unwrap();
    let applied = with_state(dir, pg, &["apply", plan_id, "--json"]);
    assert_eq!(applied.code, 0, "{}\n{}", applied.stdout, applied.stderr);
    let applied = applied.json();
    assert_eq!(applied["plan_id"], plan_id);
    assert_eq!(
        by_name(&applied, "status"),
        map(&[
            ("assay.raw", "skipped"),
            ("assay.results", "passed"),
            ("reporting.monthly", "passed")
        ])
    );
    let unknown = with_state(dir, pg, &["apply", "0000000000000000"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("error[L003]"), "{}", unknown.stderr);

    // Same state, so the third run skips everything; a SQLite state knows nothing of it.
    let third = with_state(dir, pg, &["run", "--json"]);
    assert_eq!(by_name(&third.json(), "status"), all_skipped());
    let runs = with_state(dir, pg, &["state", "runs", "--json"]).json();
    assert_eq!(runs["runs"].as_array().unwrap().len(), 4);
    assert!(runs["state"].as_str().unwrap().starts_with("postgres://"));
    let local = with_state(dir, None, &["state", "runs", "--json"]).json();
    assert_eq!(local["runs"].as_array().unwrap().len(), 0);
}

#[test]
fn phlo_state_url_selects_postgres_too() {
    let db = PgTestDb::create_blocking();
    let ws = workspace("mvp");
    let out = std::process::Command::new(common::bin())
        .arg("-C")
        .arg(ws.path())
        .args(["run", "--json"])
        .env("PHLO_STATE_URL", db.url())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!ws.path().join(".phlo/transform/state.db").exists());
    let runs = with_state(ws.path(), Some(db.url()), &["state", "runs", "--json"]).json();
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn an_unreachable_postgres_is_y001_with_the_url_redacted() {
    let ws = workspace("mvp");
    let dir = ws.path();
    for url in [
        "postgres://phlo:s3cret@127.0.0.1:1/state",
        "postgresql://phlo:s3cret@127.0.0.1:1/state",
    ] {
        for command in [&["run"][..], &["plan"], &["state", "runs"]] {
            let started = std::time::Instant::now();
            let out = with_state(dir, Some(url), command);
            assert_eq!(out.code, 2, "{command:?}: {}", out.stderr);
            assert!(started.elapsed() < std::time::Duration::from_secs(10));
            assert!(out.stderr.contains("error[Y001]"), "{}", out.stderr);
            assert!(
                out.stderr.contains("phlo:***@127.0.0.1:1/state"),
                "{}",
                out.stderr
            );
            assert!(out
                .stderr
                .contains("help: check that PostgreSQL is running"));
            assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
            assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        }
        let out = with_state(dir, Some(url), &["plan", "--json"]);
        assert_eq!(out.code, 2);
        assert!(!out.stdout.contains("s3cret"));
        let d = &out.json()["diagnostics"][0];
        assert_eq!(d["code"], "Y001");
        assert!(d["message"].as_str().unwrap().contains("127.0.0.1:1"));
        assert!(d["help"].as_str().unwrap().contains("PostgreSQL"));
    }
    assert!(!dir.join(".phlo/warehouse").exists(), "nothing ran");
}

/// `state runs | show | model`, text and JSON, on one backend.
fn state_commands(dir: &Path, state: Option<&str>) {
    assert_eq!(with_state(dir, state, &["run"]).code, 0);
    // A failing run, so that `show` and `model` have an error to show.
    let raw = dir.join("workflows/assay/transforms/raw.sql");
    let original = std::fs::read_to_string(&raw).unwrap();
    std::fs::write(
        &raw,
        original.replace(
            "select *",
            "select experiment_id, sample_id, site, cast(site as int) as result",
        ),
    )
    .unwrap();
    assert_eq!(with_state(dir, state, &["run"]).code, 1);
    std::fs::write(&raw, original).unwrap();

    // runs
    let runs = with_state(dir, state, &["state", "runs", "--json"]);
    assert_eq!(runs.code, 0, "{}", runs.stderr);
    let runs = runs.json();
    let list = runs["runs"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    let (failed, passed) = (&list[0], &list[1]);
    assert_eq!(
        (failed["status"].as_str(), passed["status"].as_str()),
        (Some("failed"), Some("passed"))
    );
    assert_eq!(passed["command"], "run");
    assert_eq!(passed["models"]["passed"], 3);
    assert_eq!(passed["tests"]["passed"], 4);
    assert_eq!(failed["models"]["failed"], 1);
    assert_eq!(failed["models"]["blocked"], 2);
    assert!(passed["finished_at"].is_string() && passed["started_at"].is_string());
    let failed_id = failed["run_id"].as_str().unwrap().to_string();
    let passed_id = passed["run_id"].as_str().unwrap().to_string();
    let one = with_state(dir, state, &["state", "runs", "-n", "1", "--json"]).json();
    assert_eq!(one["runs"].as_array().unwrap().len(), 1);
    let text = with_state(dir, state, &["state", "runs"]);
    assert_eq!(text.code, 0);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert!(
        lines[0].starts_with("RUN") && lines[0].contains("STATUS"),
        "{}",
        text.stdout
    );
    assert!(lines[1].starts_with(&failed_id) && lines[1].contains("failed"));
    assert!(
        lines[2].starts_with(&passed_id) && lines[2].contains("3 passed / 4 passed"),
        "{}",
        text.stdout
    );

    // show: full id and unique prefix give the same report.
    let shown = with_state(dir, state, &["state", "show", &failed_id, "--json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let shown = shown.json();
    assert_eq!(shown["run"]["run_id"], failed_id.as_str());
    assert_eq!(shown["run"]["status"], "failed");
    let models = shown["models"].as_array().unwrap();
    let raw_node = models.iter().find(|n| n["node"] == "assay.raw").unwrap();
    assert_eq!(raw_node["status"], "failed");
    assert_eq!(raw_node["error_code"], "E006");
    assert!(raw_node["duration_ms"].is_i64() && raw_node["started_at"].is_string());
    let blocked = models
        .iter()
        .find(|n| n["node"] == "assay.results")
        .unwrap();
    assert_eq!(blocked["status"], "blocked");
    assert_eq!(blocked["error_code"], "E001");
    let unique = (8..failed_id.len())
        .map(|n| &failed_id[..n])
        .find(|p| !passed_id.starts_with(p))
        .unwrap();
    let by_prefix = with_state(dir, state, &["state", "show", unique, "--json"]).json();
    assert_eq!(by_prefix, shown);
    let text = with_state(dir, state, &["state", "show", unique]);
    assert_eq!(text.code, 0);
    assert!(
        text.stdout.contains(&format!("Run:         {failed_id}")),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("Status:      failed"));
    assert!(text.stdout.contains("Models (3)") && text.stdout.contains("Tests ("));
    assert!(text.stdout.contains("error[E006]:"), "{}", text.stdout);

    // show: an ambiguous prefix lists both candidates; an unknown one is coded too.
    let common_prefix: String = failed_id
        .chars()
        .zip(passed_id.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let ambiguous = with_state(dir, state, &["state", "show", &common_prefix]);
    assert_eq!(ambiguous.code, 2);
    assert!(
        ambiguous.stderr.contains("error[Y004]"),
        "{}",
        ambiguous.stderr
    );
    assert!(ambiguous.stderr.contains(&failed_id) && ambiguous.stderr.contains(&passed_id));
    // The help points where the candidates are printed: above it (issue 11, item 13).
    let help = ambiguous.stderr.find("help:").expect("a help line");
    assert!(ambiguous.stderr[help..].contains("candidates above"));
    assert!(ambiguous.stderr.find(&failed_id).unwrap() < help);
    assert!(ambiguous.stderr.find(&passed_id).unwrap() < help);
    let json = with_state(dir, state, &["state", "show", &common_prefix, "--json"]);
    let d = &json.json()["diagnostics"][0];
    assert_eq!(d["code"], "Y004");
    assert_eq!(d["notes"].as_array().unwrap().len(), 2);
    let unknown = with_state(dir, state, &["state", "show", "zzzz"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("error[Y003]: no run `zzzz`"),
        "{}",
        unknown.stderr
    );
    let unknown = with_state(dir, state, &["state", "show", "zzzz", "--json"]);
    assert_eq!(unknown.json()["diagnostics"][0]["code"], "Y003");

    // model: the materialised version (the first run's: the failing one did not replace it)
    // and the history, newest first.
    let model = with_state(dir, state, &["state", "model", "assay.raw", "--json"]);
    assert_eq!(model.code, 0, "{}", model.stderr);
    let model = model.json();
    assert_eq!(model["model"], "assay.raw");
    let mats = model["materializations"].as_array().unwrap();
    assert_eq!(mats.len(), 1);
    assert_eq!(mats[0]["environment"], "local");
    assert_eq!(mats[0]["run_id"], passed_id.as_str());
    let history: Vec<(&str, &str)> = model["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["run_id"].as_str().unwrap(),
                h["node"]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        history,
        [
            (failed_id.as_str(), "failed"),
            (passed_id.as_str(), "passed")
        ]
    );
    let text = with_state(dir, state, &["state", "model", "assay.raw"]);
    assert_eq!(text.code, 0);
    assert!(
        text.stdout.starts_with("Model: assay.raw\n"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("Materialised (1)"));
    assert!(text.stdout.contains(&format!("run {passed_id}")));
    assert!(text.stdout.contains("History (2), newest first"));
    assert!(text.stdout.contains("error[E006]:"), "{}", text.stdout);
    let missing = with_state(dir, state, &["state", "model", "assay.rw"]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("error[Y005]"), "{}", missing.stderr);
    assert!(
        missing.stderr.contains("did you mean: assay.raw"),
        "{}",
        missing.stderr
    );
    let missing = with_state(dir, state, &["state", "model", "assay.rw", "--json"]);
    assert_eq!(missing.json()["diagnostics"][0]["code"], "Y005");
}

#[test]
fn state_commands_on_sqlite() {
    let ws = workspace("mvp");
    state_commands(ws.path(), None);
    let empty = workspace("mvp");
    let none = run(empty.path(), &["state", "runs"]);
    assert_eq!(none.code, 0);
    assert!(
        none.stdout.starts_with("No runs recorded in "),
        "{}",
        none.stdout
    );
}

#[test]
fn state_commands_on_postgres() {
    let db = PgTestDb::create_blocking();
    let ws = workspace("mvp");
    state_commands(ws.path(), Some(db.url()));
}

/// Packs in the compile cache table of `db`, by stage: `parse=N type=M`.
fn cache_packs(db: &PgTestDb) -> String {
    let sql = "SELECT coalesce(string_agg(stage || '=' || n, ' ' ORDER BY stage), '') FROM \
               (SELECT stage, count(*) AS n FROM phlo_compile_cache_packs GROUP BY stage) s";
    phlo_transform_state::testing::scalar_blocking(db.url(), sql)
}

/// The models' inferred columns, as `inspect --json` gives them, for comparing compiles.
fn inferred_columns(dir: &Path, state: &str) -> Vec<serde_json::Value> {
    ["assay.raw", "assay.results", "reporting.monthly"]
        .iter()
        .map(|m| {
            let out = with_state(dir, Some(state), &["inspect", m, "--json"]);
            assert_eq!(out.code, 0, "{m}: {}", out.stderr);
            out.json()["columns"].clone()
        })
        .collect()
}

#[test]
fn a_fresh_clone_checks_from_the_compile_cache_a_colleague_left_in_postgres() {
    let db = PgTestDb::create_blocking();
    let colleague = workspace("mvp");
    let check = |dir: &Path| {
        let out = with_state(dir, Some(db.url()), &["check", "--json"]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert!(!out.stderr.contains("C008"), "{}", out.stderr);
        out.json()
    };
    let first = check(colleague.path());
    assert_eq!(cache_packs(&db), "parse=1 type=1");
    let expected = inferred_columns(colleague.path(), db.url());

    // A fresh clone computes nothing: nothing new for the store, and its own cache is filled.
    let fresh = workspace("mvp");
    assert_eq!(check(fresh.path()), first);
    assert_eq!(
        cache_packs(&db),
        "parse=1 type=1",
        "the clone computed entries"
    );
    let own = fresh.path().join(".phlo/cache/compile");
    assert_eq!(
        walkdir_packs(&own),
        2,
        "read through into the clone's own cache"
    );
    assert_eq!(inferred_columns(fresh.path(), db.url()), expected);

    // Damaged entries in the store are misses: the next clone computes them again and gets
    // the same types, and writes them back.
    phlo_transform_state::testing::execute_blocking(
        db.url(),
        "UPDATE phlo_compile_cache_packs SET bytes = overlay(bytes PLACING '\\x000000'::bytea FROM 120)",
    );
    let another = workspace("mvp");
    assert_eq!(check(another.path()), first);
    assert_eq!(cache_packs(&db), "parse=2 type=2");
    assert_eq!(inferred_columns(another.path(), db.url()), expected);
}

/// `.pack` files below `dir`.
fn walkdir_packs(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "pack") {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn a_shared_cache_directory_a_bad_cache_url_and_an_unreachable_cache() {
    let team = tempfile::tempdir().unwrap();
    let first = workspace("mvp");
    let with_cache = |dir: &Path, url: &str| {
        let toml = std::fs::read_to_string(dir.join("phlo.toml")).unwrap_or_default();
        let toml = format!("{toml}\n[cache]\nurl = \"{url}\"\n");
        std::fs::write(dir.join("phlo.toml"), toml).unwrap();
    };
    let url = format!("file://{}", team.path().display());
    with_cache(first.path(), &url);
    let out = run(first.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(walkdir_packs(team.path()), 2);
    let fresh = workspace("mvp");
    with_cache(fresh.path(), &url);
    assert_eq!(run(fresh.path(), &["check", "--json"]).json(), out.json());
    assert_eq!(walkdir_packs(team.path()), 2, "the clone computed nothing");

    // A scheme no store is for: C002 at the key's line, and no cache is touched.
    let bad = workspace("mvp");
    with_cache(bad.path(), "s3://bucket/cache");
    let out = run(bad.path(), &["check", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["code"], "C002");
    assert_eq!(d["file"], "phlo.toml");
    assert!(d["help"].as_str().unwrap().contains("postgres://"));
    let out = with_state(bad.path(), None, &["check", "--json"]);
    assert_eq!(out.code, 2);

    // `state` without a PostgreSQL state store is C002 too.
    let state = workspace("mvp");
    with_cache(state.path(), "state");
    let out = run(state.path(), &["check", "--json"]);
    assert_eq!(
        out.json()["diagnostics"][0]["code"],
        "C002",
        "{}",
        out.stdout
    );

    // A cache server that refuses: a C008 warning naming it (password hidden); the check
    // passes on the workspace's own cache.
    let down = workspace("mvp");
    with_cache(down.path(), "postgres://phlo:s3cret@127.0.0.1:1/cache");
    let out = run(down.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["code"], "C008");
    assert_eq!(d["severity"], "warning");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("phlo:***@127.0.0.1:1"),
        "{d}"
    );
    assert!(!out.stdout.contains("s3cret"));
    assert_eq!(walkdir_packs(&down.path().join(".phlo/cache/compile")), 2);
}
