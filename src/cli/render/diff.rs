//! `diff`: the library renders its own text (docs/diff.md describes it).

use super::Report;
use phlo_transform_diff::DiffReport;

impl Report for DiffReport {
    fn human(&self) -> String {
        self.render_text()
    }
}
