//! One build serves `cargo run` and `cargo test`: every dependency the binary needs is resolved
//! with the same features whether or not the workspace's dev-dependencies take part. A
//! dev-dependency that switches on one more feature of, say, serde_json or ahash makes cargo
//! compile Arrow, DataFusion, delta-rs, Iceberg and sqlx a second time for the tests (minutes
//! and gigabytes on a fresh machine); phlo-transform-core, which every crate but the
//! lakehouse client depends on, pins those features instead.

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
    assert!(
        run.len() > 100,
        "the tree looks truncated: {} packages",
        run.len()
    );
    // What `cargo test --workspace` compiles: every member, with dev-dependencies. (A `-p`
    // selection resolves features for its own crates only, as cargo always does.)
    let builds = vec![(
        "cargo test --workspace",
        resolved_features(&["--workspace", "-e", "normal,build,dev"]),
    )];
    let mut differing = Vec::new();
    for (build, features) in &builds {
        for (package, sets) in &run {
            if let Some(other) = features.get(package).filter(|other| *other != sets) {
                differing.push(format!("{build}: {package}: run {sets:?}, test {other:?}"));
            }
        }
    }
    assert!(
        differing.is_empty(),
        "these builds resolve dependencies with other features than `cargo run`, so they \
         rebuild them and everything above them; pin the features in \
         crates/phlo-transform-core/Cargo.toml:\n{}",
        differing.join("\n")
    );
}
