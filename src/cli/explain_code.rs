//! `explain-code [CODE]`: one diagnostic code's entry from the library's code table
//! (`phlo_transform_core::diagnostic::codes`), or every code's summary without an argument.

use super::render::{self, fatal, CodeTable, Output};
use super::EXIT_OK;
use phlo_transform_core::diagnostic::codes;

pub fn explain_code(code: Option<&str>, json: bool) -> u8 {
    let Some(code) = code else {
        render::document_or_text(&CodeTable(codes::ALL), json);
        return EXIT_OK;
    };
    match codes::explain(code) {
        Ok(info) => {
            Output::new(json).report(info);
            EXIT_OK
        }
        Err(unknown) => fatal(unknown, json),
    }
}
