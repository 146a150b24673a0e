//! The fuzz targets' bodies, one function per target. The libFuzzer binaries in
//! `fuzz_targets/` call these, and `tests/fuzz_regressions.rs` in the main workspace compiles
//! this same file (`#[path]`) to replay every input in `fuzz/regressions/<target>/` under a
//! plain `cargo test`, so a crash once found stays fixed without the nightly fuzz build.
//!
//! Each function takes the raw input and returns normally on any input; a panic (or a stack
//! overflow) is the bug the fuzzer looks for. Errors and diagnostics are expected.

use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_plan::{select, SelectorSpec};
use phlo_transform_project::{Directives, Workspace};
use phlo_transform_sql::canonical::canonical_text;
use phlo_transform_sql::parse::default_dialect;
use phlo_transform_sql::template;
use phlo_transform_sql::{extract_relations, parse_query};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A target's body: takes the raw input, returns on any input.
pub type Target = fn(&[u8]);

/// Every target by name (the folder names under `fuzz/corpus/` and `fuzz/regressions/`).
pub const TARGETS: &[(&str, Target)] = &[
    ("model_file", model_file),
    ("compile_workspace", compile_workspace),
    ("directives", directives),
    ("config", config),
    ("selectors", selectors),
];

/// A model file's text through everything that reads it before compiling: the header
/// directives, templating, parsing, relation extraction and the canonical form.
pub fn model_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (_directives, diags) = Directives::parse(text, "transforms/x/m.sql");
    for d in &diags {
        let _ = d.render(Some(text));
    }
    let rendered = if template::needs_rendering(text) {
        match template::render(text, "transforms/x/m.sql", &Default::default()) {
            Ok(t) => t,
            Err(d) => {
                let _ = d.render(Some(text));
                return;
            }
        }
    } else {
        text.to_string()
    };
    match parse_query(&rendered, "transforms/x/m.sql", &default_dialect()) {
        Ok(parsed) => {
            let _ = extract_relations(&parsed.query);
            let _ = canonical_text(*parsed.query, |parts| Some(parts.join(".")));
        }
        Err(d) => {
            let _ = d.render(Some(&rendered));
        }
    }
}

/// One model file compiled for real (resolution, DataFusion typing, lineage, versions, tests)
/// in a scratch workspace that also has an upstream model and a CSV source to refer to.
pub fn compile_workspace(data: &[u8]) {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let root = DIR.get_or_init(|| {
        scratch(&[
            ("phlo.toml", ""),
            (
                "sources/raw/orders.csv",
                "id,customer,amount,ts\n1,ada,2.5,2024-01-01T00:00:00\n",
            ),
            (
                "transforms/lab/up.sql",
                "-- @table\nselect id, customer, amount, ts from raw.orders\n",
            ),
        ])
    });
    std::fs::write(root.join("transforms/lab/m.sql"), text).unwrap();
    let Ok(ws) = Workspace::load(root) else {
        return;
    };
    let (catalog, diags) = CatalogSnapshot::load(&ws);
    let c = Compilation::compile(ws, catalog, diags);
    for d in c.diagnostics.iter() {
        let _ = d.render(Some(text));
    }
}

/// Header directives (`-- @table`, `-- @incremental window=ts`, …) on arbitrary text; every
/// parsed value is displayable (the manifest and `inspect --config` show them).
pub fn directives(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (d, diags) = Directives::parse(text, "m.sql");
    for diag in &diags {
        let _ = diag.render(Some(text));
    }
    if let Some(i) = &d.incremental {
        let _ = i.value.to_string();
    }
    if let Some(m) = &d.materialized {
        let _ = m.value.as_str();
    }
}

/// `phlo.toml` and `transform.toml` through workspace loading: the input is split at the first
/// NUL byte into the two files, written into a scratch workspace with one model, and loaded
/// (discovery, config hierarchy, sources, names). Diagnostics are rendered too, and every name
/// that got through obeys the identifier rule (names are never paths).
pub fn config(data: &[u8]) {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (phlo, transform) = text.split_once('\0').unwrap_or((text, ""));
    let root = DIR.get_or_init(|| scratch(&[("transforms/lab/sub/m.sql", "select 1 as id\n")]));
    std::fs::write(root.join("phlo.toml"), phlo).unwrap();
    std::fs::write(root.join("transforms/lab/transform.toml"), transform).unwrap();
    if let Ok(ws) = Workspace::load(root) {
        for d in ws.diagnostics.iter() {
            let source = d.file.as_deref().and_then(|f| ws.file_text(f));
            let _ = d.render(source.as_deref());
        }
        for m in &ws.models {
            assert!(
                phlo_transform_core::check_name(m.name.as_str()).is_ok(),
                "{}",
                m.name
            );
        }
        for s in &ws.sources {
            assert!(
                phlo_transform_core::check_name(&s.name).is_ok(),
                "{}",
                s.name
            );
        }
    }
}

/// Selector terms (`assay.*+`, `+tag:x`, `path:…`, `changed`, …) against a small compiled
/// workspace. Lines of the input are include terms until a line `--`, exclude terms after it;
/// a line starting with `#` is a tag filter, one starting with `@` a workflow.
pub fn selectors(data: &[u8]) {
    static C: OnceLock<Compilation> = OnceLock::new();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let compiled = C.get_or_init(|| {
        let dir = scratch(&[
            ("phlo.toml", ""),
            ("sources/raw/orders.csv", "id,customer_id,amount\n1,1,2.5\n"),
            (
                "transforms/sales/staging/orders.sql",
                "-- @tags core\nselect id, customer_id, amount from raw.orders\n",
            ),
            (
                "transforms/sales/marts/revenue.sql",
                "-- @table\nselect customer_id, sum(amount) as amount \
                 from sales.staging.orders group by customer_id\n",
            ),
            (
                "workflows/ops/transforms/daily.sql",
                "select customer_id from sales.marts.revenue\n",
            ),
        ]);
        let ws = Workspace::load(&dir).unwrap();
        let (catalog, diags) = CatalogSnapshot::load(&ws);
        Compilation::compile(ws, catalog, diags)
    });
    let mut spec = SelectorSpec::default();
    let mut excluding = false;
    for line in text.lines().take(64) {
        if line == "--" {
            excluding = true;
        } else if let Some(tag) = line.strip_prefix('#') {
            spec.tags.push(tag.to_string());
        } else if let Some(w) = line.strip_prefix('@') {
            spec.workflows.push(w.to_string());
        } else if excluding {
            spec.exclude.push(line.to_string());
        } else {
            spec.include.push(line.to_string());
        }
    }
    spec.upstream = data.first().is_some_and(|b| b & 1 == 1);
    spec.downstream = data.first().is_some_and(|b| b & 2 == 2);
    if let Err(diags) = select(compiled, &spec, &BTreeSet::new) {
        for d in diags.iter() {
            let _ = d.render(None);
        }
    }
}

/// A scratch folder (kept for the process's lifetime) holding `files`.
fn scratch(files: &[(&str, &str)]) -> PathBuf {
    let dir = tempfile::tempdir().expect("tempdir").keep();
    for (path, text) in files {
        write(&dir, path, text);
    }
    dir
}

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}
