//! The configuration hierarchy (SPEC §15): workspace → transform root → folder → model → CLI.
//! Every effective value remembers where it came from, for `inspect --config`.

use serde::Serialize;

use crate::config::FolderSettings;
use crate::directives::{AnalysisMode, Directives, IncrementalStrategy, Materialization};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Default,
    Workspace,
    Root,
    Folder,
    Model,
    Cli,
}

/// Where a value was set: the level, the file and, where useful, the section or line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Origin {
    pub level: Level,
    pub file: Option<String>,
    pub detail: Option<String>,
}

impl Origin {
    pub fn default_value() -> Self {
        Origin {
            level: Level::Default,
            file: None,
            detail: None,
        }
    }

    pub fn describe(&self) -> String {
        let level = match self.level {
            Level::Default => "default",
            Level::Workspace => "workspace",
            Level::Root => "transform root",
            Level::Folder => "folder",
            Level::Model => "model",
            Level::Cli => "command line",
        };
        match (&self.file, &self.detail) {
            (Some(f), Some(d)) => format!("{level} ({f} {d})"),
            (Some(f), None) => format!("{level} ({f})"),
            (None, Some(d)) => format!("{level} ({d})"),
            (None, None) => level.to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sourced<T> {
    pub value: T,
    pub origin: Origin,
}

impl<T> Sourced<T> {
    fn set(&mut self, value: T, origin: &Origin) {
        self.value = value;
        self.origin = origin.clone();
    }
}

/// The configuration that applies to one model, with provenance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EffectiveConfig {
    pub materialized: Sourced<Materialization>,
    /// Physical schema the relation is written to.
    pub schema: Sourced<String>,
    pub owner: Sourced<Option<String>>,
    pub tags: Sourced<Vec<String>>,
    pub key: Sourced<Vec<String>>,
    pub not_null: Sourced<Vec<String>>,
    pub incremental: Sourced<Option<IncrementalStrategy>>,
    pub analysis: Sourced<AnalysisMode>,
}

impl EffectiveConfig {
    pub(crate) fn new(namespace: &str) -> Self {
        let d = Origin::default_value();
        EffectiveConfig {
            materialized: Sourced {
                value: Materialization::View,
                origin: d.clone(),
            },
            schema: Sourced {
                value: namespace.to_string(),
                origin: Origin {
                    detail: Some("the model's namespace".into()),
                    ..d.clone()
                },
            },
            owner: Sourced {
                value: None,
                origin: d.clone(),
            },
            tags: Sourced {
                value: Vec::new(),
                origin: d.clone(),
            },
            key: Sourced {
                value: Vec::new(),
                origin: d.clone(),
            },
            not_null: Sourced {
                value: Vec::new(),
                origin: d.clone(),
            },
            incremental: Sourced {
                value: None,
                origin: d.clone(),
            },
            analysis: Sourced {
                value: AnalysisMode::Strict,
                origin: d,
            },
        }
    }

    /// Applies a workspace, root or folder layer.
    pub(crate) fn apply_settings(&mut self, s: &FolderSettings, origin: &Origin) {
        if let Some(m) = s.materialized {
            self.materialized.set(m, origin);
        }
        if let Some(schema) = &s.schema {
            self.schema.set(schema.clone(), origin);
        }
        if let Some(owner) = &s.owner {
            self.owner.set(Some(owner.clone()), origin);
        }
        if let Some(tags) = &s.tags {
            self.tags.set(tags.clone(), origin);
        }
    }

    /// Applies the model's own header directives.
    pub(crate) fn apply_directives(&mut self, d: &Directives, file: &str) {
        let at = |line: usize| Origin {
            level: Level::Model,
            file: Some(file.to_string()),
            detail: Some(format!("line {line}")),
        };
        if let Some(m) = &d.materialized {
            self.materialized.set(m.value, &at(m.line));
        }
        if let Some(i) = &d.incremental {
            self.incremental.set(Some(i.value.clone()), &at(i.line));
        }
        if let Some(k) = &d.key {
            self.key.set(k.value.clone(), &at(k.line));
        }
        if let Some(n) = &d.not_null {
            self.not_null.set(n.value.clone(), &at(n.line));
        }
        if let Some(o) = &d.owner {
            self.owner.set(Some(o.value.clone()), &at(o.line));
        }
        if let Some(t) = &d.tags {
            self.tags.set(t.value.clone(), &at(t.line));
        }
        if let Some(a) = &d.analysis {
            self.analysis.set(a.value, &at(a.line));
        }
    }

    /// Applies the workspace-wide analysis mode (`[transform] analysis`).
    pub(crate) fn apply_analysis(&mut self, mode: AnalysisMode, origin: &Origin) {
        self.analysis.set(mode, origin);
    }

    /// Applies a command-line materialization override (the last layer).
    pub fn override_materialization(&mut self, m: Materialization) {
        self.materialized.set(
            m,
            &Origin {
                level: Level::Cli,
                file: None,
                detail: None,
            },
        );
    }

    /// `(key, value, origin)` rows for `inspect --config`.
    pub fn rows(&self) -> Vec<(&'static str, String, &Origin)> {
        let list = |v: &Vec<String>| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(", ")
            }
        };
        vec![
            (
                "materialized",
                self.materialized.value.to_string(),
                &self.materialized.origin,
            ),
            ("schema", self.schema.value.clone(), &self.schema.origin),
            (
                "owner",
                self.owner.value.clone().unwrap_or_else(|| "-".into()),
                &self.owner.origin,
            ),
            ("tags", list(&self.tags.value), &self.tags.origin),
            ("key", list(&self.key.value), &self.key.origin),
            (
                "not_null",
                list(&self.not_null.value),
                &self.not_null.origin,
            ),
            (
                "incremental",
                self.incremental
                    .value
                    .as_ref()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into()),
                &self.incremental.origin,
            ),
            (
                "analysis",
                self.analysis.value.to_string(),
                &self.analysis.origin,
            ),
        ]
    }
}
