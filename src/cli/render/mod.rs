//! The one way a command prints (issue 12): it builds a report struct (the library's), shows
//! diagnostics as they come, then hands the report to [`Output::report`]. Text mode prints
//! [`Report::human`] on stdout and renders diagnostics rustc-like on stderr as they come;
//! `--json` prints one envelope on stdout — the report's fields with `diagnostics` (every
//! diagnostic the command met, warnings included) beside them. docs/cli.md describes it.

mod check;
mod codes;
mod diff;
mod environments;
mod explain;
mod format;
mod gates;
mod inspect;
mod lineage;
mod lineage_diff;
mod plan;
mod review;
mod run;
mod state;

pub use check::summary_line;
pub use codes::CodeTable;
pub use plan::schema_changes;

use phlo_transform_core::{Diagnostic, Envelope};
use phlo_transform_project::Workspace;
use serde::Serialize;

/// A command's report: serialised for `--json`, rendered as text otherwise.
pub trait Report: Serialize {
    /// The text output (stdout), newline-terminated.
    fn human(&self) -> String;
}

/// A report without fields: the envelope of a command that stopped holds only diagnostics.
#[derive(Serialize)]
pub struct Nothing {}

impl Report for Nothing {
    fn human(&self) -> String {
        String::new()
    }
}

/// One command's output: diagnostics as they come, then its report.
pub struct Output<'w> {
    json: bool,
    /// Source text for diagnostic snippets.
    workspace: Option<&'w Workspace>,
    /// With `--json`: the diagnostics shown so far, for the envelope.
    kept: Vec<Diagnostic>,
}

impl<'w> Output<'w> {
    pub fn new(json: bool) -> Self {
        Output {
            json,
            workspace: None,
            kept: Vec::new(),
        }
    }

    /// Diagnostics from now on are rendered with snippets of `ws`'s files.
    pub fn with_workspace(mut self, ws: &'w Workspace) -> Self {
        self.workspace = Some(ws);
        self
    }

    pub fn json(&self) -> bool {
        self.json
    }

    /// Text: rendered on stderr now. JSON: kept for the envelope.
    pub fn diagnostics(&mut self, diags: impl IntoIterator<Item = Diagnostic>) {
        if self.json {
            self.kept.extend(diags);
            return;
        }
        for d in diags {
            let source = match (self.workspace, &d.file) {
                (Some(ws), Some(f)) => ws.file_text(f),
                _ => None,
            };
            eprintln!("{}\n", d.render(source.as_deref()));
        }
    }

    /// Prints `report`: its text, or the envelope with every diagnostic kept.
    pub fn report(self, report: &impl Report) {
        if self.json {
            let envelope = Envelope {
                report,
                diagnostics: &self.kept,
            };
            println!(
                "{}",
                serde_json::to_string(&envelope).expect("reports serialise")
            );
        } else {
            print!("{}", report.human());
        }
    }

    /// A command that stopped on `diags`: exit code 2. In the envelope they come first,
    /// before the diagnostics met on the way.
    pub fn fail(mut self, diags: impl IntoIterator<Item = Diagnostic>) -> u8 {
        let earlier = std::mem::take(&mut self.kept);
        self.diagnostics(diags);
        self.kept.extend(earlier);
        self.report(&Nothing {});
        super::EXIT_ERRORS
    }
}

/// Prints a document whose shape a standard or an earlier contract fixes (the OpenLineage
/// event array, the lineage graph, the `explain-code` table): no envelope.
pub fn document(value: &impl Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("documents serialise")
    );
}

/// A [`document`] with `--json`, its text otherwise.
pub fn document_or_text(report: &impl Report, json: bool) {
    if json {
        document(report);
    } else {
        print!("{}", report.human());
    }
}

/// Prints `d` (text or JSON) and returns the exit code of a command it stopped.
pub fn fatal(d: Diagnostic, json: bool) -> u8 {
    Output::new(json).fail([d])
}

/// Prints `diags` (text or JSON) and returns the exit code of a command they stopped.
pub fn fatal_all(diags: Vec<Diagnostic>, json: bool) -> u8 {
    Output::new(json).fail(diags)
}

/// An as-of instant (freshness clocks) as the reports print it: RFC 3339 in UTC, `unknown`
/// for none.
fn as_of(at: Option<phlo_transform_state::AsOf>) -> String {
    at.map(phlo_transform_state::as_of_text)
        .unwrap_or_else(|| "unknown".into())
}
