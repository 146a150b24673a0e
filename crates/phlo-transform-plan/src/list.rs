//! The `list` report: the rows of the models a selection acts on (every model without one)
//! and the resolved selection.

use crate::Selection;
use phlo_transform_compiler::report::ModelRow;
use phlo_transform_compiler::Compilation;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct ListReport<'a> {
    pub models: Vec<ModelRow<'a>>,
    /// `None` without selector flags.
    pub selection: Option<Selection>,
    /// The longest model name of the workspace: text columns line up the same whatever the
    /// selection.
    #[serde(skip)]
    pub name_width: usize,
}

impl<'a> ListReport<'a> {
    pub fn new(c: &'a Compilation, selection: Option<Selection>) -> Self {
        let models = match &selection {
            Some(s) => s.acted_on().map(|i| c.model_row(i)).collect(),
            None => c.model_rows(),
        };
        ListReport {
            models,
            selection,
            name_width: c
                .models
                .iter()
                .map(|m| m.name.as_str().len())
                .max()
                .unwrap_or(0),
        }
    }
}
