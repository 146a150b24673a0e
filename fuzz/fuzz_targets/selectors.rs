//! Selector terms (`assay.*+`, `+tag:x`, `path:…`, `changed`, …) against a small compiled
//! workspace. Lines of the input are include terms until a line `--`, exclude terms after it;
//! a line starting with `#` is a tag filter.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_plan::{select, SelectorSpec};
use phlo_transform_project::Workspace;
use std::collections::BTreeSet;
use std::sync::OnceLock;

fn compiled() -> &'static Compilation {
    static C: OnceLock<Compilation> = OnceLock::new();
    C.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir").keep();
        for (path, text) in [
            ("phlo.toml", ""),
            ("sources/raw/orders.csv", "id,customer_id,amount\n1,1,2.5\n"),
            ("transforms/sales/staging/orders.sql", "-- @tags core\nselect id, customer_id, amount from raw.orders\n"),
            ("transforms/sales/marts/revenue.sql", "-- @table\nselect customer_id, sum(amount) as amount from sales.staging.orders group by customer_id\n"),
            ("workflows/ops/transforms/daily.sql", "select customer_id from sales.marts.revenue\n"),
        ] {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let ws = Workspace::load(&dir).unwrap();
        let (catalog, diags) = CatalogSnapshot::load(&ws);
        Compilation::compile(ws, catalog, diags)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
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
    let _ = select(compiled(), &spec, &|| BTreeSet::new());
});
