//! `phlo.toml` and `transform.toml` through workspace loading: the input is split at the
//! first NUL byte into the two files, written into a scratch workspace with one model, and
//! loaded (discovery, config hierarchy, sources, names). Diagnostics are rendered too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phlo_transform_project::Workspace;
use std::path::PathBuf;
use std::sync::OnceLock;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir").keep();
        std::fs::create_dir_all(dir.join("transforms/lab/sub")).unwrap();
        std::fs::write(dir.join("transforms/lab/sub/m.sql"), "select 1 as id\n").unwrap();
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (phlo, transform) = text.split_once('\0').unwrap_or((text, ""));
    let root = scratch();
    std::fs::write(root.join("phlo.toml"), phlo).unwrap();
    std::fs::write(root.join("transforms/lab/transform.toml"), transform).unwrap();
    if let Ok(ws) = Workspace::load(root) {
        for d in ws.diagnostics.iter() {
            let source = d.file.as_deref().and_then(|f| ws.file_text(f));
            let _ = d.render(source.as_deref());
        }
        // Names that got through are names, never paths.
        for m in &ws.models {
            assert!(phlo_transform_core::check_name(m.name.as_str()).is_ok(), "{}", m.name);
        }
        for s in &ws.sources {
            assert!(phlo_transform_core::check_name(&s.name).is_ok(), "{}", s.name);
        }
    }
});
