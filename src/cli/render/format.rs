//! `fmt`: the files it changed (or, with `--check`, would change), then the counts.

use super::Report;
use phlo_transform_format::{FileStatus, FormatReport};
use std::fmt::Write;

impl Report for FormatReport {
    fn human(&self) -> String {
        let mut out = String::new();
        let (listed, verb) = if self.check {
            (FileStatus::WouldFormat, "would reformat")
        } else {
            (FileStatus::Formatted, "formatted")
        };
        for f in self.with_status(listed) {
            let _ = writeln!(out, "{verb} {}", f.path);
        }
        for f in self.with_status(FileStatus::LeftAlone) {
            let why = f.reason.map(|r| r.describe()).unwrap_or_default();
            let _ = writeln!(out, "left alone {}: {why}", f.path);
        }
        let c = &self.counts;
        let changed = if self.check {
            format!("{} would be reformatted", c.would_format)
        } else {
            format!("{} formatted", c.formatted)
        };
        let _ = writeln!(
            out,
            "{} file(s): {changed}, {} already formatted, {} left alone, {} error(s)",
            self.files.len(),
            c.unchanged,
            c.left_alone,
            c.errors
        );
        out
    }
}
