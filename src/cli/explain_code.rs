//! `explain-code [CODE]`: one diagnostic code's entry from the library's code table
//! (`phlo_transform_core::diagnostic::codes`), or every code's summary without an argument.

use super::{commands, EXIT_OK};
use phlo_transform_core::diagnostic::codes::{self, CodeInfo};

pub fn explain_code(code: Option<&str>, json: bool) -> u8 {
    let Some(code) = code else {
        if json {
            print_json(&codes::ALL);
        } else {
            for info in codes::ALL {
                println!("{}  {}", info.code, info.summary);
            }
        }
        return EXIT_OK;
    };
    match codes::explain(code) {
        Ok(info) if json => print_json(info),
        Ok(info) => print_text(info),
        Err(unknown) => return commands::fatal(unknown, json),
    }
    EXIT_OK
}

fn print_text(info: &CodeInfo) {
    println!("{} {} ({})", info.code, info.name, info.category());
    println!();
    println!("{}", info.summary);
    println!();
    println!("{}", info.explanation);
    println!();
    println!("help: {}", info.help);
}

fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("codes serialise")
    );
}
