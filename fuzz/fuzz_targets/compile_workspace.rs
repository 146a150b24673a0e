//! One model file compiled for real (resolution, DataFusion typing, lineage, versions, tests)
//! in a scratch workspace that also has an upstream model and a CSV source to refer to.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phlo_transform_compiler::{CatalogSnapshot, Compilation};
use phlo_transform_project::Workspace;
use std::path::PathBuf;
use std::sync::OnceLock;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir").keep();
        std::fs::create_dir_all(dir.join("transforms/lab")).unwrap();
        std::fs::create_dir_all(dir.join("sources/raw")).unwrap();
        std::fs::write(dir.join("phlo.toml"), "").unwrap();
        std::fs::write(
            dir.join("sources/raw/orders.csv"),
            "id,customer,amount,ts\n1,ada,2.5,2024-01-01T00:00:00\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("transforms/lab/up.sql"),
            "-- @table\nselect id, customer, amount, ts from raw.orders\n",
        )
        .unwrap();
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let root = scratch();
    std::fs::write(root.join("transforms/lab/m.sql"), text).unwrap();
    let Ok(ws) = Workspace::load(root) else {
        return;
    };
    let (catalog, diags) = CatalogSnapshot::load(&ws);
    let c = Compilation::compile(ws, catalog, diags);
    for d in c.diagnostics.iter() {
        let _ = d.render(Some(text));
    }
});
