//! What `import dbt` did: the models, sources and tests it wrote, and everything it could not
//! convert, each with its file and line. The leaf the import's steps share.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;

/// One thing left out of the imported workspace and why.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Unconverted {
    /// The dbt project's file, relative to the project.
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// What was left out: `model customers`, `test not_null(orders.amount)`, `macro
    /// cents_to_dollars`, `column description orders.x`.
    pub left_out: String,
    /// Why: the construct as written, or what it depends on.
    pub reason: String,
}

impl Unconverted {
    /// The warning (P017) the report carries for it.
    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic::warning(
            codes::DBT_NOT_CONVERTED,
            format!("{} is left out: {}", self.left_out, self.reason),
        )
        .in_file(&self.file)
        .at(self.line, 1)
        .with_help("rewrite it as plain SQL in the imported workspace, or keep it in dbt")
    }
}

/// A model the import wrote.
#[derive(Clone, Debug, Serialize)]
pub struct ImportedModel {
    /// Its dbt name (`stg_orders`).
    pub dbt_name: String,
    /// Its phlo-transform name (`jaffle_shop.staging.stg_orders`).
    pub name: String,
    /// Its file in the new workspace.
    pub path: String,
    pub materialization: String,
}

/// The report of `import dbt`.
#[derive(Clone, Debug, Serialize)]
pub struct ImportReport {
    /// The dbt project's name.
    pub project: String,
    /// The new workspace, as given.
    pub root: String,
    pub models: Vec<ImportedModel>,
    /// Sources of the new workspace: the seeds (`seeds.<name>`) and the dbt sources.
    pub sources: Vec<String>,
    /// Data test files written under `tests/`.
    pub tests: Vec<String>,
    /// Every file written, relative to `root`, in the order written.
    pub files: Vec<String>,
    /// What was left out, by file and line.
    pub unconverted: Vec<Unconverted>,
}
