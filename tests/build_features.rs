//! One build serves `cargo run` and `cargo test`: every dependency the binary needs is resolved
//! with the same features whether or not the workspace's dev-dependencies take part. A
//! dev-dependency that switches on one more feature of, say, serde_json or ahash makes cargo
//! compile Arrow, DataFusion, delta-rs, Iceberg and sqlx a second time for the tests (minutes
//! and gigabytes on a fresh machine); the root Cargo.toml pins those features instead.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// `package version` → the feature sets it is built with (a package built for both the host,
/// as a build or proc-macro dependency, and the target may have two).
type Features = BTreeMap<String, BTreeSet<String>>;

fn resolved_features(args: &[&str]) -> Features {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--locked", "--offline", "--prefix", "none"])
        .args(["--format", "{p}|{f}"])
        .args(args)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut features = Features::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let line = line.trim_end().trim_end_matches("(*)").trim_end();
        let Some((package, set)) = line.split_once('|') else {
            continue;
        };
        // `name vX.Y.Z (path)` for workspace crates, `name vX.Y.Z (proc-macro)` for macros.
        let package: String = package
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        features
            .entry(package)
            .or_default()
            .insert(set.trim().to_string());
    }
    features
}

#[test]
fn dev_dependencies_switch_on_no_feature_of_the_binary_s_dependencies() {
    // What `cargo run` / `cargo build` compiles: the binary's package, without dev-dependencies.
    let run = resolved_features(&["-p", "phlo-transform", "-e", "normal,build"]);
    // What `cargo test --workspace` compiles: every member, with dev-dependencies.
    let test = resolved_features(&["--workspace", "-e", "normal,build,dev"]);
    assert!(
        run.len() > 100,
        "the tree looks truncated: {} packages",
        run.len()
    );
    let differing: Vec<String> = run
        .iter()
        .filter_map(|(package, sets)| {
            let in_test = test.get(package)?;
            (in_test != sets).then(|| format!("{package}: run {sets:?}, test {in_test:?}"))
        })
        .collect();
    assert!(
        differing.is_empty(),
        "dev-dependencies change the features of these dependencies, so `cargo test` rebuilds \
         them and everything above them; pin the test build's features in the root Cargo.toml:\n{}",
        differing.join("\n")
    );
}
