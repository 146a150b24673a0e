//! `explain-code [CODE]`: one entry of the code table, or the whole table.

use super::Report;
use phlo_transform_core::diagnostic::codes::CodeInfo;
use serde::Serialize;

/// Every code: in JSON the table's array (a document: no envelope), in text one line each.
#[derive(Serialize)]
#[serde(transparent)]
pub struct CodeTable(pub &'static [CodeInfo]);

impl Report for CodeTable {
    fn human(&self) -> String {
        self.0
            .iter()
            .map(|info| format!("{}  {}\n", info.code, info.summary))
            .collect()
    }
}

impl Report for CodeInfo {
    fn human(&self) -> String {
        format!(
            "{} {} ({})\n\n{}\n\n{}\n\nhelp: {}\n",
            self.code,
            self.name,
            self.category(),
            self.summary,
            self.explanation,
            self.help
        )
    }
}
