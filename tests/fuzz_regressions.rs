//! Every input a fuzz target once crashed on, replayed through the same entry point as the
//! fuzz target (`fuzz/src/lib.rs`, compiled here as a module) under a plain `cargo test`: a
//! crash found by `scripts/fuzz.sh` stays fixed without the nightly fuzz build.
//!
//! Layout: `fuzz/regressions/<target>/<input>`. A folder that names no target fails the test,
//! so an input can't be skipped silently.

#[path = "../fuzz/src/lib.rs"]
mod targets;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

#[test]
fn every_fuzz_regression_input_runs_without_panicking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut inputs = 0;
    let mut crashed = Vec::new();
    for dir in sorted_entries(&root) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Some((_, run)) = targets::TARGETS.iter().find(|(t, _)| *t == name) else {
            panic!("fuzz/regressions/{name}/ names no fuzz target");
        };
        for file in sorted_entries(&dir) {
            let data = std::fs::read(&file).unwrap();
            inputs += 1;
            if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
                crashed.push(file.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    // The two inputs the first fuzz runs crashed on (annotate-snippets 0.11 margin underflow)
    // are in there; fewer means the folder was not found.
    assert!(
        inputs >= 2,
        "only {inputs} regression inputs under {}",
        root.display()
    );
    assert!(
        crashed.is_empty(),
        "fuzz regression inputs panic: {crashed:?}"
    );
}

fn sorted_entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    entries
}
