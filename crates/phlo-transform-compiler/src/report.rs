//! The reports of the commands that only compile (`check`, `list`, `lineage`): one row per
//! model, the build order and the counts, the lineage overview. Front ends (the CLI, the daemon) render or serialise them.

use crate::lineage::{LineageDocument, ModelReport, Target};
use crate::{Compilation, Dependency};
use phlo_transform_project::Materialization;
use serde::Serialize;
use std::collections::BTreeSet;

/// One model as `check`, `list` and a failed compilation report it.
#[derive(Debug, Serialize)]
pub struct ModelRow<'a> {
    pub name: &'a str,
    pub id: &'a str,
    pub uri: String,
    pub path: &'a str,
    pub materialization: Materialization,
    /// Models and sources it reads, by name.
    pub depends_on: Vec<String>,
    /// `None` when the model has compile errors.
    pub version: Option<&'a str>,
}

/// How much a compilation holds and how many problems it found (the `Checked …` line).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CompileCounts {
    pub models: usize,
    pub sources: usize,
    pub tests: usize,
    pub errors: usize,
    pub warnings: usize,
}

/// `check`: every model; the diagnostics travel beside it (the front end's envelope).
#[derive(Debug, Serialize)]
pub struct CheckReport<'a> {
    pub models: Vec<ModelRow<'a>>,
    /// Model names in build order (text output shows it for small workspaces).
    #[serde(skip)]
    pub build_order: Vec<&'a str>,
    #[serde(skip)]
    pub counts: CompileCounts,
}

impl Compilation {
    /// Every model's row, in workspace order.
    pub fn model_rows(&self) -> Vec<ModelRow<'_>> {
        (0..self.models.len()).map(|i| self.model_row(i)).collect()
    }

    pub fn model_row(&self, i: usize) -> ModelRow<'_> {
        let m = &self.models[i];
        ModelRow {
            name: m.name.as_str(),
            id: &m.id,
            uri: m.name.uri(),
            path: &m.path,
            materialization: m.materialization,
            depends_on: self
                .dependencies(i)
                .into_iter()
                .map(|d| match d {
                    Dependency::Model(n) | Dependency::Source(n) => n,
                })
                .collect(),
            version: m.version.as_ref().map(|v| v.version.as_str()),
        }
    }

    pub fn counts(&self) -> CompileCounts {
        CompileCounts {
            models: self.models.len(),
            sources: self.workspace.sources.len(),
            tests: self.tests.len(),
            errors: self.diagnostics.error_count(),
            warnings: self.diagnostics.warning_count(),
        }
    }

    /// The `check` report.
    pub fn check_report(&self) -> CheckReport<'_> {
        CheckReport {
            models: self.model_rows(),
            build_order: self
                .order
                .iter()
                .map(|&i| self.models[i].name.as_str())
                .collect(),
            counts: self.counts(),
        }
    }
}

/// `lineage` without a target: the lineage document (scoped to a selection) and, for the text
/// rendering, each model's lineage report.
#[derive(Serialize)]
pub struct LineageOverview<'a> {
    #[serde(flatten)]
    pub document: LineageDocument<'a>,
    /// The models in workspace order, those outside the scope left out.
    #[serde(skip)]
    pub models: Vec<ModelReport>,
}

impl Compilation {
    /// The overview of the lineage graph's `scope` nodes (every node without one).
    pub fn lineage_overview(&self, scope: Option<&BTreeSet<usize>>) -> LineageOverview<'_> {
        let g = self.lineage();
        let models = self
            .models
            .iter()
            .filter_map(|m| match g.resolve(m.name.as_str()) {
                Ok(Target::Dataset(d)) if scope.is_none_or(|s| s.contains(&d)) => {
                    Some(g.model_report(d))
                }
                _ => None,
            })
            .collect();
        LineageOverview {
            document: g.document_for(scope),
            models,
        }
    }
}
