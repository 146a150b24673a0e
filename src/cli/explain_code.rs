//! `explain-code [CODE]`: one diagnostic code's entry from the library's code table
//! (`phlo_transform_core::diagnostic::codes`), or every code's summary without an argument.

use super::render::{self, fatal, Output};
use super::EXIT_OK;
use phlo_transform_core::diagnostic::codes;

pub fn explain_code(code: Option<&str>, json: bool) -> u8 {
    let Some(code) = code else {
        // The whole table: a JSON array (a document, no envelope), or one line per code.
        if json {
            render::document(&codes::ALL);
        } else {
            for info in codes::ALL {
                println!("{}  {}", info.code, info.summary);
            }
        }
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
