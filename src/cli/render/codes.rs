//! `explain-code CODE`: one entry of the code table.

use super::Report;
use phlo_transform_core::diagnostic::codes::CodeInfo;

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
