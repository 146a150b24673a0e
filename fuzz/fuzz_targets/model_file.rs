//! A model file's text through everything that reads it before compiling: the header
//! directives, templating, parsing, relation extraction and the canonical form. Any panic or
//! stack overflow is a bug; errors are expected.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phlo_transform_project::Directives;
use phlo_transform_sql::canonical::canonical_text;
use phlo_transform_sql::parse::default_dialect;
use phlo_transform_sql::template;
use phlo_transform_sql::{extract_relations, parse_query};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (_directives, _diags) = Directives::parse(text, "transforms/x/m.sql");
    let rendered = if template::needs_rendering(text) {
        match template::render(text, "transforms/x/m.sql", &Default::default()) {
            Ok(t) => t,
            Err(_) => return,
        }
    } else {
        text.to_string()
    };
    if let Ok(parsed) = parse_query(&rendered, "transforms/x/m.sql", &default_dialect()) {
        let _ = extract_relations(&parsed.query);
        let _ = canonical_text(&parsed.query, |parts| Some(parts.join(".")));
    }
});
