//! Helpers for the end-to-end tests: run the real binary over a copy of a testdata workspace.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_phlo-transform"))
}

pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// Copies `testdata/<name>` into a fresh temporary directory (never touching the original).
pub fn workspace(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&testdata(name), dir.path());
    dir
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == ".phlo" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Writes `text` to `root/rel`, creating the folders.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr)
        })
    }
}

pub fn run(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(bin())
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("PHLO_STATE_URL")
        .env("NO_COLOR", "1")
        .output()
        .expect("binary runs");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The binary in `dir` with `args` and exactly the `OPENLINEAGE__*` variables of `env` (the
/// caller's own are removed, so a developer's configuration never leaks into a test).
pub fn with_openlineage_env<V: AsRef<std::ffi::OsStr>>(
    dir: &Path,
    args: &[&str],
    env: &[(&str, V)],
) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("PHLO_STATE_URL");
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("OPENLINEAGE")) {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs the binary in `dir` with `args`, waits (at most two minutes) until `started` says
/// the work to interrupt is under way, then sends it SIGINT (Ctrl-C) and returns its output.
pub fn interrupted(dir: &Path, args: &[&str], started: impl Fn() -> bool) -> Output {
    let child = Command::new(bin())
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("PHLO_STATE_URL")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("binary runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !started() {
        assert!(
            std::time::Instant::now() < deadline,
            "{args:?} never started its work"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // SAFETY: signalling a child process this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().expect("the binary ends");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `{"name": status}` of a `run --json` / `plan --json` report's models.
pub fn by_name(
    report: &serde_json::Value,
    field: &str,
) -> std::collections::BTreeMap<String, String> {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m[field].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `["name:Type", …]` of an `inspect --json` schema.
pub fn column_types(schema: &serde_json::Value) -> Vec<String> {
    schema["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}:{}",
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap()
            )
        })
        .collect()
}

/// `[("a", "b")]` → `{"a": "b"}`, to compare with `by_name`.
pub fn map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Runs `git` in `dir` with a throwaway identity; panics on failure.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The SPEC §64 workspace in `root`: A → B → C and D → E, all tables, where B type-checks (a
/// string cast to int) but fails when it runs.
pub fn spec64_workspace(root: &Path) {
    write_file(
        root,
        "transforms/x/a.sql",
        "-- @table\n-- The first model.\nselect 1 as id, 'seven' as label\n",
    );
    write_file(
        root,
        "transforms/x/b.sql",
        "-- @table\nselect id, cast(label as int) as n from x.a\n",
    );
    write_file(root, "transforms/x/c.sql", "-- @table\nselect * from x.b\n");
    write_file(root, "transforms/x/d.sql", "-- @table\nselect 2 as id\n");
    write_file(root, "transforms/x/e.sql", "-- @table\nselect * from x.d\n");
}

/// The dataset of `model` in a branch diff's JSON report.
pub fn dataset<'a>(diff: &'a serde_json::Value, model: &str) -> &'a serde_json::Value {
    diff["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["model"] == model)
        .unwrap_or_else(|| panic!("no dataset {model}: {diff}"))
}

/// The keyed value diff of `assay.results` in a `--full` branch diff, after the candidate
/// added exp-004, removed exp-003 and changed exp-001 (the environments tests' edit, on both
/// engines).
pub fn assert_results_full_diff(full: &serde_json::Value) {
    assert_results_records(&dataset(full, "assay.results")["data"]);
}

/// The keyed diff of `assay.results` between main and the candidate `keyed_results` makes
/// (as a branch diff's dataset `data`, or the report of `diff assay.results`): one row added,
/// one removed, one modified, one unchanged.
pub fn assert_results_records(data: &serde_json::Value) {
    assert_eq!(data["key"], serde_json::json!(["experiment_id"]));
    assert_eq!(
        data["records"],
        serde_json::json!({"added": 1, "removed": 1, "modified": 1, "unchanged": 1}),
        "{data}"
    );
    for (kind, key) in [
        ("added", "exp-004"),
        ("removed", "exp-003"),
        ("modified", "exp-001"),
    ] {
        assert_eq!(
            data["samples"][kind][0]["key"]["experiment_id"], key,
            "{kind}"
        );
    }
}

/// `diff` with `args` again with `--large-table-rows 1`, so that the comparison runs in
/// warehouse `engine` by the join-diff query: the same counts and samples as `fetched` (the
/// report of the same diff fetched into memory).
pub fn assert_pushed_down_agrees(
    root: &Path,
    args: &[&str],
    engine: &str,
    fetched: &serde_json::Value,
) {
    let args: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--large-table-rows", "1"])
        .collect();
    let out = run(root, &args);
    assert_eq!(out.code, 0, "{args:?}:\n{}\n{}", out.stdout, out.stderr);
    let pushed = out.json();
    let reason = pushed["strategy_reason"].as_str().unwrap();
    let expected = format!("compared in {engine} by one join-diff query");
    assert!(reason.contains(&expected), "{reason}");
    for part in ["rows", "records", "changed_values", "duplicates", "samples"] {
        assert_eq!(pushed[part], fetched[part], "{part}: {pushed}\n{fetched}");
    }
}

/// `out` (a `--json` command) refused as bad input: exit 2, its first diagnostic `code`, whose
/// help line says `help`.
pub fn assert_refused(out: &Output, code: &str, help: &str) {
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let json = out.json();
    let d = &json["diagnostics"][0];
    assert_eq!(d["code"], code, "{json}");
    assert!(
        d["help"].as_str().unwrap_or_default().contains(help),
        "help should say `{help}`: {json}"
    );
}

/// The Python of one of the pinned environments scripts/test.sh installs under
/// `~/.cache/phlo-transform/<dir>`, or the one `env` names.
pub fn pinned_python(env: &str, dir: &str) -> PathBuf {
    std::env::var_os(env).map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").expect("HOME is set");
        Path::new(&home)
            .join(".cache/phlo-transform")
            .join(dir)
            .join("bin/python")
    })
}

/// A script of tests/python.
pub fn python_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

/// What `program` (a Python) prints with `args`; a failure panics with its stderr and the
/// command that installs the environments.
pub fn python_stdout(program: &Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {}: {e} (run scripts/test.sh --setup-only)",
                program.display()
            )
        });
    assert!(
        out.status.success(),
        "{} {args:?} failed (run scripts/test.sh --setup-only for its environment):\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What `git -C dir args…` prints, trimmed; a failing git command fails the test.
pub fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
