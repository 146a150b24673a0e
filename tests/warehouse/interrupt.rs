//! Interrupting the real binary mid-run (SPEC §65a): start `run --jobs 2`, watch its SQLite
//! state until enough models passed, then signal it. Shared by tests/interrupted.rs (the local
//! engine) and tests/warehouse/scenarios.rs (kill -9 + `run --resume` on the warehouse
//! adapters); each uses part of it.

#![allow(dead_code)]

use phlo_transform_state::{NodeRecord, SqliteStateStore, StateStore};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `run --jobs 2` in `root` with its own SQLite state, output discarded.
pub fn spawn_run(root: &Path) -> Child {
    Command::new(crate::common::bin())
        .arg("-C")
        .arg(root)
        .args(["run", "--jobs", "2"])
        .env_remove("PHLO_STATE_URL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("binary runs")
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The only run's id and its model records, read from the SQLite state the binary writes.
pub fn snapshot(rt: &tokio::runtime::Runtime, state: &Path) -> Option<(String, Vec<NodeRecord>)> {
    rt.block_on(async {
        let store = SqliteStateStore::open(state).await.ok()?;
        let run = store.runs(1).await.ok()?.into_iter().next()?;
        let nodes = store.run_nodes(&run.run_id).await.ok()?;
        Some((run.run_id, nodes))
    })
}

pub fn passed(nodes: &[NodeRecord]) -> usize {
    nodes.iter().filter(|n| n.status == "passed").count()
}

/// Waits until the running binary has recorded at least `at_least` passed models; the run's
/// id.
pub fn wait_for_passes(
    rt: &tokio::runtime::Runtime,
    child: &mut Child,
    state: &Path,
    at_least: usize,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    // Let the binary create and migrate the database before reading it.
    while !state.exists() {
        assert!(Instant::now() < deadline, "the run never created its state");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    loop {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be interrupted"
        );
        assert!(Instant::now() < deadline, "no progress recorded");
        if let Some((run_id, nodes)) = snapshot(rt, state) {
            if passed(&nodes) >= at_least {
                return run_id;
            }
        }
        std::thread::sleep(Duration::from_millis(15));
    }
}

/// Starts `run --jobs 2` in `root` and kills it (SIGKILL) once at least `at_least` models
/// passed: the run's id and the records of the models that had passed by then (checked to be
/// at least `at_least` and fewer than all), read from its SQLite state after the kill.
pub fn kill_after(
    rt: &tokio::runtime::Runtime,
    root: &Path,
    at_least: usize,
) -> (String, Vec<NodeRecord>) {
    let state = root.join(".phlo/transform/state.db");
    let mut child = spawn_run(root);
    let run_id = wait_for_passes(rt, &mut child, &state, at_least);
    child.kill().unwrap();
    child.wait().unwrap();

    let (_, nodes) = snapshot(rt, &state).unwrap();
    let passed_before: Vec<NodeRecord> =
        nodes.into_iter().filter(|n| n.status == "passed").collect();
    assert!(
        passed_before.len() >= at_least && passed_before.len() < MODELS,
        "killed with {} of {MODELS} passed",
        passed_before.len()
    );
    (run_id, passed_before)
}

/// `run --resume` by a unique prefix of `run_id` after a kill that left `passed_before`
/// passed: the same run continues and passes, every model passes, and only models that
/// passed before are reused — and a model whose pass the killed process recorded just before
/// dying (at most one per slot of `--jobs 2`); everything else runs. The report.
pub fn resume(root: &Path, run_id: &str, passed_before: &[&str]) -> serde_json::Value {
    let resumed = crate::common::run(root, &["run", "--resume", &run_id[..12], "--json"]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    let report = resumed.json();
    assert_eq!(report["run_id"], run_id, "the same run continues");
    assert_eq!(report["status"], "passed");
    let mut reused = 0;
    for m in report["models"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        assert_eq!(m["status"], "passed", "{name}");
        if m["resumed"].as_bool().unwrap_or(false) {
            reused += 1;
        } else {
            assert!(!passed_before.contains(&name), "{name} ran again");
        }
    }
    assert!(
        (passed_before.len()..=passed_before.len() + 2).contains(&reused),
        "{reused} reused, {} passed before",
        passed_before.len()
    );
    report
}

pub const MODELS: usize = 50;

/// Five independent chains of ten table models: `x.m00`…`x.m09`, … `x.m40`…`x.m49`; each chain
/// starts with `head` (a query with columns `v`, `w`) and adds 1 to `v` at every step.
pub fn chains(root: &Path, head: &str) {
    for i in 0..MODELS {
        let sql = if i % 10 == 0 {
            format!("-- @table\n{head}\n")
        } else {
            format!("-- @table\nselect v + 1 as v, w from x.m{:02}\n", i - 1)
        };
        crate::common::write_file(root, &format!("transforms/x/m{i:02}.sql"), &sql);
    }
}
