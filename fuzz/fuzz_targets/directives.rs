//! Header directives (`-- @table`, `-- @incremental window=ts`, …) on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phlo_transform_project::Directives;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (d, diags) = Directives::parse(text, "m.sql");
    for diag in &diags {
        let _ = diag.render(Some(text));
    }
    let _ = serde_json_free_display(&d);
});

/// Every directive value is displayable (the manifest and `inspect --config` show them).
fn serde_json_free_display(d: &Directives) -> String {
    let mut out = String::new();
    if let Some(i) = &d.incremental {
        out.push_str(&i.value.to_string());
    }
    if let Some(m) = &d.materialized {
        out.push_str(m.value.as_str());
    }
    out
}
