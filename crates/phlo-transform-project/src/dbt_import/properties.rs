//! The models' YAML files (`models/**/*.yml`): each model's description, settings, columns
//! and tests, and the sources with their tables. Lines are found in the file's text, since
//! the YAML values carry none.

use serde_json::Value;

use super::jinja::Literal;
use super::project::{line_of, literal};

/// One generic test as written (`unique`, `accepted_values: {values: […]}`).
#[derive(Clone, Debug)]
pub(crate) struct TestSpec {
    /// `unique`, `accepted_values`, `dbt_utils.expression_is_true`, …
    pub name: String,
    /// Its arguments (under `arguments:` or beside the name), `config:` merged in.
    pub args: Vec<(String, Literal)>,
    pub file: String,
    pub line: usize,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct ColumnProps {
    pub name: String,
    pub description: Option<String>,
    pub tests: Vec<TestSpec>,
    pub line: usize,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct ModelProps {
    pub file: String,
    pub description: Option<String>,
    pub config: Vec<(String, Literal, usize)>,
    pub columns: Vec<ColumnProps>,
    pub tests: Vec<TestSpec>,
}

#[derive(Clone, Debug)]
pub(crate) struct SourceTable {
    pub source: String,
    pub table: String,
    /// The relation in the warehouse (`identifier`, else the table's name).
    pub identifier: String,
    pub description: Option<String>,
    pub columns: Vec<ColumnProps>,
    pub tests: Vec<TestSpec>,
    pub file: String,
    pub line: usize,
}

/// Everything the YAML files of the model paths declare.
#[derive(Default)]
pub(crate) struct Properties {
    /// By dbt model name.
    pub models: Vec<(String, ModelProps)>,
    /// By seed name: what `seeds:` entries (in any resource path's YAML) declare.
    pub seeds: Vec<(String, ModelProps)>,
    pub sources: Vec<SourceTable>,
}

/// The `models:` or `seeds:` entries of a YAML file, by name.
fn entries(doc: &Value, key: &str, file: &str, text: &str) -> Vec<(String, ModelProps)> {
    let mut out = Vec::new();
    let mut line = 1;
    let Some(Value::Array(items)) = doc.get(key) else {
        return out;
    };
    for m in items {
        let Some(name) = text_of(m, "name") else {
            continue;
        };
        line = line_of(text, line, &format!("name: {name}"));
        let config = match m.get("config") {
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| {
                    let key = k.trim_start_matches('+').to_string();
                    (key, literal(v), line_of(text, line, &format!("{k}:")))
                })
                .collect(),
            _ => Vec::new(),
        };
        let props = ModelProps {
            file: file.to_string(),
            description: text_of(m, "description"),
            config,
            columns: columns_of(m, file, text, line),
            tests: tests_of(m, file, text, line),
        };
        out.push((name, props));
    }
    out
}

fn text_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(String::from)
}

fn tests_of(node: &Value, file: &str, text: &str, from: usize) -> Vec<TestSpec> {
    let mut out = Vec::new();
    for key in ["tests", "data_tests"] {
        let Some(Value::Array(items)) = node.get(key) else {
            continue;
        };
        for item in items {
            let (name, body) = match item {
                Value::String(name) => (name.clone(), None),
                Value::Object(map) if map.len() == 1 => {
                    let (k, v) = map.iter().next().expect("one entry");
                    (k.clone(), Some(v))
                }
                // `- name: my_test` / `test_name: unique` forms.
                Value::Object(map) => match map.get("test_name").and_then(Value::as_str) {
                    Some(name) => (name.to_string(), Some(item)),
                    None => ("(unnamed)".to_string(), Some(item)),
                },
                _ => continue,
            };
            let mut args = Vec::new();
            if let Some(Value::Object(body)) = body {
                for (k, v) in body {
                    match (k.as_str(), v) {
                        ("arguments" | "config", Value::Object(inner)) => {
                            args.extend(inner.iter().map(|(k, v)| (k.clone(), literal(v))))
                        }
                        ("test_name", _) => {}
                        _ => args.push((k.clone(), literal(v))),
                    }
                }
            }
            let short = name.rsplit('.').next().unwrap_or(&name).to_string();
            out.push(TestSpec {
                line: line_of(text, from, &short),
                name,
                args,
                file: file.to_string(),
            });
        }
    }
    out
}

fn columns_of(node: &Value, file: &str, text: &str, from: usize) -> Vec<ColumnProps> {
    let Some(Value::Array(items)) = node.get("columns") else {
        return Vec::new();
    };
    let mut line = from;
    items
        .iter()
        .filter_map(|c| {
            let name = text_of(c, "name")?;
            line = line_of(text, line, &format!("name: {name}"));
            Some(ColumnProps {
                description: text_of(c, "description"),
                tests: tests_of(c, file, text, line),
                line,
                name,
            })
        })
        .collect()
}

impl Properties {
    /// Adds what the YAML file `file` (relative to the project) declares.
    pub fn add(&mut self, file: &str, doc: &Value, text: &str) {
        self.models.extend(entries(doc, "models", file, text));
        self.seeds.extend(entries(doc, "seeds", file, text));
        let mut line = 1;
        if let Some(Value::Array(sources)) = doc.get("sources") {
            for s in sources {
                let Some(source) = text_of(s, "name") else {
                    continue;
                };
                line = line_of(text, line, &format!("name: {source}"));
                let Some(Value::Array(tables)) = s.get("tables") else {
                    continue;
                };
                for t in tables {
                    let Some(table) = text_of(t, "name") else {
                        continue;
                    };
                    line = line_of(text, line, &format!("name: {table}"));
                    self.sources.push(SourceTable {
                        identifier: text_of(t, "identifier").unwrap_or_else(|| table.clone()),
                        description: text_of(t, "description"),
                        columns: columns_of(t, file, text, line),
                        tests: tests_of(t, file, text, line),
                        source: source.clone(),
                        table,
                        file: file.to_string(),
                        line,
                    });
                }
            }
        }
    }

    pub fn model(&self, name: &str) -> Option<&ModelProps> {
        self.models.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }
}
