//! examples/lab/README.md's walk-through, run as written: every command of its `sh` blocks, in
//! order, from a directory holding a fresh copy of examples/lab, with `cargo run --` standing
//! for the built binary. A command exits 0 unless its line says `# exits N`; `# shows: text`
//! must appear in what it prints. The walk-through cannot drift from what the tool does.

mod common;

use std::path::Path;
use std::process::Command;

/// One command of the walk-through and what it must do.
#[derive(Debug)]
struct Step {
    command: String,
    exits: i32,
    shows: Vec<String>,
}

/// The commands of the `sh` blocks in the "Walk-through" section, in order.
fn steps(readme: &str) -> Vec<Step> {
    let section = readme
        .split("\n## Walk-through")
        .nth(1)
        .expect("examples/lab/README.md has a Walk-through section");
    let section = section.split("\n## ").next().unwrap();
    let mut steps = Vec::new();
    let mut in_block = false;
    for line in section.lines() {
        if line.starts_with("```") {
            in_block = line == "```sh";
            continue;
        }
        if !in_block || line.trim().is_empty() {
            continue;
        }
        let mut parts = line.split("  # ");
        let command = parts.next().unwrap().trim_end().to_string();
        let mut step = Step {
            command,
            exits: 0,
            shows: Vec::new(),
        };
        for note in parts.map(str::trim) {
            if let Some(code) = note.strip_prefix("exits ") {
                step.exits = code.parse().expect("`# exits N` takes a number");
            } else if let Some(text) = note.strip_prefix("shows: ") {
                step.shows.push(text.to_string());
            } else {
                panic!("unknown annotation `# {note}` in: {line}");
            }
        }
        steps.push(step);
    }
    steps
}

#[test]
fn the_lab_walk_through_runs_as_written() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("examples/lab/README.md")).unwrap();
    let steps = steps(&readme);
    assert!(steps.len() >= 15, "{} steps", steps.len());
    // What a newcomer's ten minutes must cover (issue 11), each run at least once.
    for command in [
        "check", "inspect", "lineage", "impact", "plan", "run", "explain", "diff", "clean",
    ] {
        assert!(
            steps.iter().any(|s| s.command.starts_with("cargo run -- ")
                && s.command.split_whitespace().any(|w| w == command)),
            "the walk-through never runs `{command}`"
        );
    }

    let root = tempfile::tempdir().unwrap();
    common::copy_dir(
        &repo.join("examples/lab"),
        &root.path().join("examples/lab"),
    );
    let bin = common::bin();
    for step in &steps {
        let command = match step.command.strip_prefix("cargo run -- ") {
            Some(args) => format!("'{}' {args}", bin.display()),
            None => step.command.clone(),
        };
        let out = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .current_dir(root.path())
            .env_remove("PHLO_STATE_URL")
            .env("NO_COLOR", "1")
            .output()
            .expect("sh runs");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            out.status.code(),
            Some(step.exits),
            "`{}` exited {:?}, not {}:\n{printed}",
            step.command,
            out.status.code(),
            step.exits
        );
        for text in &step.shows {
            assert!(
                printed.contains(text.as_str()),
                "`{}` does not show `{text}`:\n{printed}",
                step.command
            );
        }
    }
    // The walk-through leaves the example as it found it.
    for dir in ["transforms", "workflows"] {
        let diff = Command::new("diff")
            .arg("-r")
            .arg(repo.join("examples/lab").join(dir))
            .arg(root.path().join("examples/lab").join(dir))
            .output()
            .unwrap();
        assert!(
            diff.status.success(),
            "{}",
            String::from_utf8_lossy(&diff.stdout)
        );
    }
}
