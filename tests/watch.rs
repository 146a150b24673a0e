//! `phlo-transform watch` against the real binary (issue 40, item 3): a workspace with a
//! Delta source (`lims.results`, written by delta-rs's Python bindings) read by `lab.a`, a
//! model `lab.b` that reads no source, and `lab.c` downstream of `lab.a` with a not-null test.
//! `watch --json --poll-ms 100` builds all three; rows appended to the Delta source rebuild
//! `lab.a` and `lab.c` (then `lab.c`'s test), never `lab.b`, and their `current_as_of` moves; a type error in a model is a
//! `compiled` event carrying its diagnostic; fixed, it compiles clean; SIGINT between cycles
//! ends the watch with exit 0, and during a build cancels the run (exit 1, as `run`).
//!
//! Needs `python3` with `deltalake` and `pyarrow` (`.ci/run` installs them); without them the
//! test fails, saying what to install.

mod common;
#[allow(dead_code)]
#[path = "iceberg_rest/server.rs"]
mod server;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest any one step may take before the test fails with what was printed.
const WAIT: Duration = Duration::from_secs(60);

/// `tests/python/write_delta.py <table> <step>`: step 1 creates 5 rows, step 2 appends 3.
fn write_delta(table: &Path, step: u32) {
    let script = common::python_script("write_delta.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(table)
        .arg(step.to_string())
        .output()
        .unwrap_or_else(|e| panic!("python3 {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "write_delta.py step {step} failed (install: python3 -m pip install deltalake pyarrow):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Replaces `root/rel` in one rename, so a poll never sees the file half written.
fn replace_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    let tmp = path.with_extension("sql.tmp~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

/// A running `watch --json`: its stdout's events as they come, its stderr collected.
struct Watch {
    child: Child,
    lines: Receiver<String>,
    events: Vec<Value>,
    stderr: Arc<Mutex<String>>,
}

impl Watch {
    /// `watch --json --poll-ms 100` with `args`.
    fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Watch {
        let mut child = Command::new(common::bin())
            .arg("-C")
            .arg(dir)
            .args(["watch", "--json", "--poll-ms", "100"])
            .args(args)
            .envs(env.iter().copied())
            .env_remove("PHLO_STATE_URL")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let (send, lines) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut from, into) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = from.read(&mut buf) {
                into.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Watch {
            child,
            lines,
            events: Vec::new(),
            stderr,
        }
    }

    /// Everything printed so far, for a failure's message.
    fn printed(&self) -> String {
        let events: Vec<String> = self.events.iter().map(Value::to_string).collect();
        format!(
            "stdout:\n{}\nstderr:\n{}",
            events.join("\n"),
            self.stderr.lock().unwrap()
        )
    }

    /// Waits for the first event from now on that `wanted` accepts.
    fn wait_for(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                        panic!(
                            "not one JSON object per line ({e}): {line}\n{}",
                            self.printed()
                        )
                    });
                    self.events.push(event.clone());
                    if wanted(&event) {
                        return event;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {what} within {WAIT:?}\n{}", self.printed())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("watch ended before {what}\n{}", self.printed())
                }
            }
        }
    }

    /// The end of cycle `cycle`: its `idle` event.
    fn idle(&mut self, cycle: u64) {
        self.wait_for(&format!("the end of cycle {cycle}"), |e| {
            e["event"] == "idle" && e["cycle"] == cycle
        });
    }

    /// The models cycle `cycle` built (`model` events that passed), sorted.
    fn built(&self, cycle: u64) -> Vec<String> {
        let mut built: Vec<String> = self
            .of(cycle, "model")
            .filter(|e| e["status"] == "passed")
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect();
        built.sort();
        built
    }

    fn of(&self, cycle: u64, event: &str) -> impl Iterator<Item = &Value> {
        let event = event.to_string();
        self.events
            .iter()
            .filter(move |e| e["cycle"] == cycle && e["event"] == event.as_str())
    }

    /// SIGINT (Ctrl-C); then the exit code and stderr, every event printed collected.
    fn interrupt(&mut self) -> (i32, String) {
        // SAFETY: signalling a child process this test started.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "watch did not stop on SIGINT\n{}",
                self.printed()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // The reader thread ends with the pipe.
        while let Ok(line) = self.lines.recv_timeout(WAIT) {
            self.events.push(serde_json::from_str(&line).unwrap());
        }
        let stderr = self.stderr.lock().unwrap().clone();
        (status.code().unwrap_or(-1), stderr)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cycle_of(e: &Value) -> u64 {
    e["cycle"].as_u64().unwrap()
}

#[test]
fn a_delta_append_rebuilds_only_its_readers_and_edits_show_fresh_diagnostics() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    common::write_file(ws, "phlo.toml", "[transform]\n");
    common::write_file(
        ws,
        "transforms/lab/a.sql",
        "-- @table\nselect site, count(*) as n, sum(value) as total\nfrom lims.results\ngroup by site\n",
    );
    let b = "-- @table\nselect 1 as one\n";
    common::write_file(ws, "transforms/lab/b.sql", b);
    common::write_file(
        ws,
        "transforms/lab/c.sql",
        "-- @table\n-- @not-null site\nselect site, n * 2 as doubled from lab.a\n",
    );
    let table = ws.join("sources/lims/results");
    write_delta(&table, 1);

    let mut watch = Watch::start(ws, &[], &[]);
    let first = watch.wait_for("the first compile", |e| e["event"] == "compiled");
    assert_eq!(
        (&first["cycle"], &first["trigger"], &first["errors"]),
        (&1.into(), &"start".into(), &0.into()),
        "{first}"
    );
    watch.idle(1);
    assert_eq!(
        watch.built(1),
        ["lab.a", "lab.b", "lab.c"],
        "{}",
        watch.printed()
    );

    // Rows appended to the Delta source: the cycle that sees its new version rebuilds its
    // readers, then their tests. (A poll may catch delta-rs between its data file and its
    // log entry: that cycle sees no new version and builds nothing.)
    write_delta(&table, 2);
    let changed = watch.wait_for("the Delta source's new version", |e| {
        e["event"] == "compiled"
            && e["sources_changed"]
                .as_array()
                .is_some_and(|s| s.iter().any(|c| c["name"] == "lims.results"))
    });
    assert_eq!(
        changed["sources_changed"],
        serde_json::json!([{"name": "lims.results", "was": "delta:v0", "now": "delta:v1"}])
    );
    let cycle = cycle_of(&changed);
    watch.idle(cycle);
    assert_eq!(
        watch.built(cycle),
        ["lab.a", "lab.c"],
        "{}",
        watch.printed()
    );
    let planned = watch.of(cycle, "planned").next().unwrap();
    assert_eq!(planned["build"], serde_json::json!(["lab.a", "lab.c"]));
    let tests = watch.of(cycle, "tests").next().expect("lab.c's test ran");
    assert_eq!((&tests["passed"], &tests["failed"]), (&1.into(), &0.into()));
    // Their freshness clocks moved with the source (issue 40 item 4): the commit time of
    // the version read, later than the first's (RFC 3339 in UTC: ordered as text).
    for model in ["lab.a", "lab.c"] {
        let as_of = |n: u64| -> String {
            let built = watch.of(n, "model").find(|e| e["name"] == model);
            let as_of = built.and_then(|e| e["current_as_of"].as_str());
            as_of
                .unwrap_or_else(|| panic!("{model} in cycle {n}\n{}", watch.printed()))
                .into()
        };
        let (before, after) = (as_of(1), as_of(cycle));
        assert!(after > before, "{model}'s current_as_of {before} → {after}");
    }

    // A type error: the compile says so with its code, where it is; nothing else rebuilds.
    replace_file(
        ws,
        "transforms/lab/b.sql",
        "-- @table\nselect 1 + 'x' as one\n",
    );
    let broken = watch.wait_for("the type error", |e| {
        e["event"] == "compiled" && e["errors"] != 0
    });
    let d = &broken["diagnostics"][0];
    assert!(
        d["code"].as_str().unwrap().starts_with('T') && d["file"] == "transforms/lab/b.sql",
        "{broken}"
    );
    let cycle = cycle_of(&broken);
    watch.idle(cycle);
    assert!(watch.built(cycle).is_empty(), "{}", watch.printed());

    replace_file(ws, "transforms/lab/b.sql", b);
    let fixed = watch.wait_for("the fix", |e| {
        e["event"] == "compiled" && e["errors"] == 0 && cycle_of(e) > cycle
    });
    watch.idle(cycle_of(&fixed));
    let all_cycles = 2..=cycle_of(&fixed);
    let b_rebuilt = all_cycles
        .clone()
        .any(|n| watch.built(n).contains(&"lab.b".to_string()));
    assert!(
        !b_rebuilt,
        "lab.b reads no source and did not change\n{}",
        watch.printed()
    );

    let (code, stderr) = watch.interrupt();
    assert_eq!(code, 0, "stopped between cycles:\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
}

#[test]
fn sigint_during_a_build_cancels_the_run_and_exits_as_an_interrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    common::write_file(ws, "phlo.toml", "[transform]\n");
    // Minutes of work in a debug build: still running when the signal comes.
    common::write_file(
        ws,
        "transforms/x/slow.sql",
        "-- @table\nselect count(*) as n, sum(value * value) as s from range(3000000000)\n",
    );
    let mut watch = Watch::start(ws, &[], &[]);
    watch.wait_for("the plan", |e| e["event"] == "planned");
    let (code, stderr) = watch.interrupt();
    let finished = watch.of(1, "run_finished").next().cloned();
    let status = finished.as_ref().map(|f| &f["status"]);
    assert_eq!(status, Some(&"cancelled".into()), "{}", watch.printed());
    let model = watch.of(1, "model").next().map(|m| m["status"].clone());
    assert_eq!(model, Some("cancelled".into()), "{}", watch.printed());
    assert_eq!(
        code, 1,
        "the code `run` gives an interrupted run:\n{stderr}"
    );
}

/// A table of an Iceberg REST catalog (the in-test catalog of tests/iceberg_rest.rs, the table
/// written by PyIceberg outside the workspace): no file of the workspace shows its new snapshot,
/// so the source poll finds it, and only its reader rebuilds.
#[test]
fn a_new_snapshot_in_a_rest_catalog_rebuilds_only_its_reader() {
    const TOKEN: &str = "phlo-watch-token-41c9";
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let (pyiceberg, lake) = (
        tmp.path().join("pyiceberg"),
        tmp.path().join("lake/samples"),
    );
    let write_iceberg = |step: &str| -> Value {
        let out = Command::new("python3")
            .arg(common::python_script("write_iceberg.py"))
            .args([&pyiceberg, &lake])
            .args(["lims.samples", step])
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "write_iceberg.py failed (needs: python3 -m pip install \"pyiceberg[sql-sqlite,pyarrow]\"):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let first = write_iceberg("1");
    let catalog = server::RestCatalog::start("/api/catalog", None, Some(TOKEN));
    let location = |v: &Value| v["metadata_location"].as_str().unwrap().to_string();
    catalog.put_metadata("lims.samples", &location(&first));
    common::write_file(
        &ws,
        "phlo.toml",
        &format!(
            "[source.\"raw.samples\"]\ncatalog = \"{}\"\ntable = \"lims.samples\"\n\
             token_env = \"PHLO_TEST_ICEBERG_TOKEN\"\n",
            catalog.url
        ),
    );
    common::write_file(
        &ws,
        "transforms/shop/passed_by_site.sql",
        "-- @table\nselect site, count(*) as n from raw.samples where passed group by site\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/other.sql",
        "-- @table\nselect 1 as one\n",
    );

    let env = [("PHLO_TEST_ICEBERG_TOKEN", TOKEN)];
    let mut watch = Watch::start(&ws, &["--source-poll-ms", "200"], &env);
    let idle = watch.wait_for("the end of cycle 1", |e| e["event"] == "idle");
    assert_eq!(idle["sources_ms"], 200, "{idle}");
    assert_eq!(
        watch.built(1),
        ["shop.other", "shop.passed_by_site"],
        "{}",
        watch.printed()
    );

    catalog.put_metadata("lims.samples", &location(&write_iceberg("2")));
    let changed = watch.wait_for("the new snapshot", |e| {
        e["event"] == "compiled" && e["trigger"] == "sources"
    });
    assert_eq!(
        changed["sources_changed"][0]["name"], "raw.samples",
        "{changed}"
    );
    let cycle = cycle_of(&changed);
    watch.idle(cycle);
    assert_eq!(
        watch.built(cycle),
        ["shop.passed_by_site"],
        "{}",
        watch.printed()
    );
    let (code, stderr) = watch.interrupt();
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains(TOKEN) && !watch.printed().contains(TOKEN));
}

#[test]
fn a_poll_interval_out_of_bounds_is_refused_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::run(dir.path(), &["watch", "--json", "--poll-ms", "10"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["code"], "C007", "{}", out.stdout);
    assert!(d["help"].as_str().unwrap().contains("between 50 and 60000"));
}
