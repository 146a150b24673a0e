//! `dbt_project.yml`: the project's name, where its models, seeds, tests and macros are, and
//! the configuration its `models:` tree gives each folder (SPEC of dbt: a key with `+`, or a
//! known configuration name, is a setting; any other key is a sub-folder).

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

use super::jinja::Literal;

/// Settings a folder, a model's YAML or its `config()` may give, as dbt names them. Any other
/// key in the `models:` tree without a `+` is a sub-folder.
pub(crate) const CONFIG_KEYS: &[&str] = &[
    "materialized",
    "tags",
    "schema",
    "alias",
    "database",
    "enabled",
    "docs",
    "persist_docs",
    "meta",
    "post-hook",
    "pre-hook",
    "post_hook",
    "pre_hook",
    "full_refresh",
    "unique_key",
    "incremental_strategy",
    "on_schema_change",
    "contract",
    "grants",
    "access",
    "group",
    "sql_header",
    "quoting",
    "column_types",
    "partition_by",
    "event_time",
    "batch_size",
    "lookback",
    "begin",
    "on_configuration_change",
];

/// The parts of a dbt project the import reads.
pub(crate) struct DbtProject {
    pub name: String,
    pub model_paths: Vec<String>,
    pub seed_paths: Vec<String>,
    pub test_paths: Vec<String>,
    pub macro_paths: Vec<String>,
    /// The `profile:` it connects with (which engine its SQL is written for).
    pub profile: Option<String>,
    /// `vars:`: the global ones, overridden by those scoped to the project (`vars: {<name>:
    /// {...}}`), as `{{ var() }}` reads them.
    pub vars: BTreeMap<String, Literal>,
    models: Value,
    text: String,
}

/// A YAML file as JSON values; P016 at the parser's line when it does not parse.
pub(crate) fn read_yaml(path: &Path, shown: &str) -> Result<(Value, String), Diagnostic> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::error(
            codes::DBT_PROJECT_UNREADABLE,
            format!("cannot read {shown}: {e}"),
        )
        .in_file(shown)
        .with_help("import dbt needs the dbt project's folder, the one holding dbt_project.yml")
    })?;
    if text.trim().is_empty() {
        return Ok((Value::Null, text));
    }
    let value: Value = serde_saphyr::from_str(&text).map_err(|e| {
        let message = e.to_string();
        let line = message
            .split("line ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        Diagnostic::error(
            codes::DBT_PROJECT_UNREADABLE,
            format!("{shown} is not valid YAML: {message}"),
        )
        .in_file(shown)
        .at(line, 1)
        .with_help("fix the YAML; dbt would refuse it too")
    })?;
    Ok((value, text))
}

fn paths(doc: &Value, key: &str, default: &str) -> Vec<String> {
    match doc.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(String::from))
            .collect(),
        _ => vec![default.to_string()],
    }
}

/// A YAML value as a Jinja literal (settings from YAML and from `config()` are read alike).
pub(crate) fn literal(value: &Value) -> Literal {
    match value {
        Value::String(s) => Literal::Str(s.clone()),
        Value::Bool(b) => Literal::Bool(*b),
        Value::Number(n) => Literal::Number(n.to_string()),
        Value::Null => Literal::None,
        Value::Array(items) => Literal::List(items.iter().map(literal).collect()),
        Value::Object(map) => {
            Literal::Dict(map.iter().map(|(k, v)| (k.clone(), literal(v))).collect())
        }
    }
}

/// The 1-based line of the first line at or after `from` that holds `needle`; `from` when none.
pub(crate) fn line_of(text: &str, from: usize, needle: &str) -> usize {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| l.contains(needle))
        .map_or(from.max(1), |(i, _)| i + 1)
}

impl DbtProject {
    pub fn read(dir: &Path) -> Result<DbtProject, Diagnostic> {
        let path = dir.join("dbt_project.yml");
        if !path.is_file() {
            return Err(Diagnostic::error(
                codes::DBT_PROJECT_UNREADABLE,
                format!("{} has no dbt_project.yml", dir.display()),
            )
            .in_file(dir.display().to_string())
            .with_help(
                "give import dbt the dbt project's folder, the one holding dbt_project.yml",
            ));
        }
        let (doc, text) = read_yaml(&path, "dbt_project.yml")?;
        let Some(name) = doc.get("name").and_then(Value::as_str) else {
            return Err(Diagnostic::error(
                codes::DBT_PROJECT_UNREADABLE,
                "dbt_project.yml has no `name`",
            )
            .in_file("dbt_project.yml")
            .with_help("a dbt project is named by `name:` in dbt_project.yml"));
        };
        let mut vars = BTreeMap::new();
        if let Some(map) = doc.get("vars").and_then(Value::as_object) {
            for (key, value) in map {
                if key != name {
                    vars.insert(key.clone(), literal(value));
                }
            }
            if let Some(scoped) = map.get(name).and_then(Value::as_object) {
                for (key, value) in scoped {
                    vars.insert(key.clone(), literal(value));
                }
            }
        }
        Ok(DbtProject {
            vars,
            name: name.to_string(),
            model_paths: paths(&doc, "model-paths", "models"),
            seed_paths: paths(&doc, "seed-paths", "seeds"),
            test_paths: paths(&doc, "test-paths", "tests"),
            macro_paths: paths(&doc, "macro-paths", "macros"),
            profile: doc.get("profile").and_then(Value::as_str).map(String::from),
            models: doc.get("models").cloned().unwrap_or(Value::Null),
            text,
        })
    }

    /// The settings the `models:` tree gives a model in folder `dirs` (relative to its model
    /// path), outermost first, each with its line in dbt_project.yml.
    pub fn folder_config(&self, dirs: &[String]) -> Vec<(String, Literal, usize)> {
        let mut out = Vec::new();
        let mut line = 1;
        let take = |node: &Value, line: usize, out: &mut Vec<(String, Literal, usize)>| {
            let Some(map) = node.as_object() else { return };
            for (key, value) in map {
                let bare = key.trim_start_matches('+');
                if key.starts_with('+') || CONFIG_KEYS.contains(&bare) {
                    let at = line_of(&self.text, line, &format!("{key}:"));
                    out.push((bare.to_string(), literal(value), at));
                }
            }
        };
        take(&self.models, line, &mut out);
        let Some(mut node) = self.models.get(&self.name) else {
            return out;
        };
        line = line_of(&self.text, 1, &format!("{}:", self.name));
        take(node, line, &mut out);
        for dir in dirs {
            match node.get(dir) {
                Some(child) if child.is_object() => {
                    line = line_of(&self.text, line, &format!("{dir}:"));
                    take(child, line, &mut out);
                    node = child;
                }
                _ => break,
            }
        }
        out
    }
}
