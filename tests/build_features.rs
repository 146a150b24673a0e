//! One build serves `cargo run` and `cargo test`: every dependency the binary needs is resolved
//! with the same features whether or not the workspace's dev-dependencies and the `duckdb`
//! feature (on in the README's test command, scripts/test.sh) take part. A dev-dependency or an
//! optional dependency that switches on one more feature of, say, serde_json or syn makes
//! cargo compile Arrow, DataFusion, delta-rs, Iceberg and sqlx a second time for the tests
//! (minutes and gigabytes on a fresh machine); phlo-transform-core, which every crate but the
//! lakehouse client depends on, pins those features instead.
//!
//! Cargo resolves the features of what runs on the build machine (build scripts, proc macros
//! and their dependencies) apart from those of what is linked into the binary, so a package
//! may be built twice with different features; the comparison is per side. A test build may
//! add packages (duckdb's own, and the host copies its build script needs); it must not change
//! a package the binary's build already compiles.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Where a package is built for: the build machine (build scripts, proc macros) or the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Host,
    Target,
}

/// `(side, package version)` → the feature sets it is built with.
type Features = BTreeMap<(Side, String), BTreeSet<String>>;

/// Features as `cargo tree` resolves them for `args`. A line's side follows from the printed
/// path above it: below a `[build-dependencies]` section or a proc macro it is the host's. A
/// `(*)` line repeats a node printed in full elsewhere, and a node is built for one side.
fn resolved_features(args: &[&str]) -> Features {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--locked", "--offline", "--charset", "ascii"])
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
    // Per depth: whether the node printed there is built for the host, and whether the section
    // of its children being printed is `[build-dependencies]`.
    let mut host_at: Vec<bool> = Vec::new();
    let mut build_section: Vec<bool> = Vec::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let text = line.trim_start_matches(['|', '-', '`', ' ']);
        if text.is_empty() {
            continue;
        }
        // The ascii charset draws each level in 4 columns ("|   ", "|-- ", "`-- ").
        let depth = (line.len() - text.len()) / 4;
        if text.starts_with('[') {
            build_section.truncate(depth);
            build_section.resize(depth + 1, false);
            build_section[depth] = text.starts_with("[build-dependencies]");
            continue;
        }
        let Some((package, set)) = text.trim_end_matches("(*)").trim_end().split_once('|') else {
            continue;
        };
        let host = package.contains("(proc-macro)")
            || (depth > 0
                && (host_at[depth - 1] || build_section.get(depth - 1).copied().unwrap_or(false)));
        host_at.truncate(depth);
        host_at.push(host);
        build_section.truncate(depth);
        // `name vX.Y.Z (path)` for workspace crates, `name vX.Y.Z (proc-macro)` for macros.
        let package = package
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        let side = if host { Side::Host } else { Side::Target };
        features
            .entry((side, package))
            .or_default()
            .insert(set.trim().to_string());
    }
    features
}

#[test]
fn tests_and_the_duckdb_feature_switch_on_no_feature_of_the_binary_s_dependencies() {
    // What `cargo run` / `cargo build` compiles: the binary's package, without dev-dependencies.
    let run = resolved_features(&["-p", "phlo-transform", "-e", "normal,build"]);
    assert!(
        run.len() > 100,
        "the tree looks truncated: {} packages",
        run.len()
    );
    assert!(
        run.keys().any(|(side, _)| *side == Side::Host),
        "no host packages recognised"
    );
    // What `cargo test --workspace` compiles: every member, with dev-dependencies, with and
    // without the DuckDB adapter. (A `-p` selection resolves features for its own crates
    // only, as cargo always does.)
    let builds = [
        (
            "cargo test --workspace",
            resolved_features(&["--workspace", "-e", "normal,build,dev"]),
        ),
        (
            "cargo test --workspace --features duckdb",
            resolved_features(&[
                "--workspace",
                "-e",
                "normal,build,dev",
                "--features",
                "duckdb",
            ]),
        ),
    ];
    let mut differing = Vec::new();
    for (build, features) in &builds {
        assert!(
            features.contains_key(&(Side::Target, "libduckdb-sys v1.10506.1".to_string()))
                == build.ends_with("duckdb"),
            "{build}: the duckdb feature is not what decides whether libduckdb-sys is built"
        );
        for ((side, package), sets) in &run {
            // Our own crates change with the feature they carry; that is the point of it.
            if package.starts_with("phlo-transform") {
                continue;
            }
            if let Some(other) = features
                .get(&(*side, package.clone()))
                .filter(|o| *o != sets)
            {
                differing.push(format!(
                    "{build}: {package} ({side:?}): run {sets:?}, test {other:?}"
                ));
            }
        }
    }
    assert!(
        differing.is_empty(),
        "these builds resolve dependencies with other features than `cargo run`, so they \
         rebuild them and everything above them; pin the features in \
         crates/phlo-transform-core/Cargo.toml (host-side ones as build-dependencies):\n{}",
        differing.join("\n")
    );
}
