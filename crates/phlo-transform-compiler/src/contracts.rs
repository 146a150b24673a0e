//! Contracts (SPEC §30–32), checked at compile time against the inferred schema: declared
//! columns exist with the declared type, an enforced contract lists every column, `@key` and
//! `@not-null` name real columns, renames name a current column. Columns declared
//! `nullable = false` that the plan cannot prove non-null get a not-null test.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{did_you_mean, Diagnostic, Diagnostics};
use phlo_transform_project::config::{ColumnSection, ModelSection};
use phlo_transform_project::Workspace;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::dialect::Dialect;
use crate::model::CompiledModel;
use crate::model::ModelSchema;

/// A model's declared contract, as resolved.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Contract {
    /// `[model.<key>] description`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub enforced: bool,
    pub columns: Vec<ContractColumn>,
    /// new name → old name.
    pub renames: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ContractColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: Option<String>,
    pub nullable: Option<bool>,
    pub description: Option<String>,
}

/// The line of `[model.<key>.columns.<column>]` (or of `[model.<key>…]`) in phlo.toml.
fn locate(text: &str, key: &str, column: Option<&str>) -> Option<usize> {
    let quoted = format!("\"{key}\"");
    text.lines()
        .position(|l| {
            let l = l.trim();
            let names_model = l.starts_with("[model.")
                && (l.contains(&quoted) || l.contains(&format!("model.{key}")));
            names_model
                && column.is_none_or(|c| {
                    l.contains(&format!("columns.{c}")) || l.contains(&format!("columns.\"{c}\""))
                })
        })
        .map(|i| i + 1)
}

fn at(d: Diagnostic, text: &str, key: &str, column: Option<&str>) -> Diagnostic {
    let d = d.in_file("phlo.toml");
    match locate(text, key, column).or_else(|| locate(text, key, None)) {
        Some(line) => d.at(line, 1),
        None => d,
    }
}

/// Resolves `[model.<key>]` sections to models and checks them. Returns each model's contract.
pub(crate) fn check(
    models: &mut [Arc<CompiledModel>],
    ws: &Workspace,
    dialect: &Dialect,
    diagnostics: &mut Diagnostics,
) -> BTreeMap<usize, Contract> {
    let text = std::fs::read_to_string(ws.root.join("phlo.toml")).unwrap_or_default();
    let mut out = BTreeMap::new();
    for (key, section) in &ws.config.model {
        let matches: Vec<usize> = models
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m.name.as_str() == key
                    || m.name.ends_with_segments(key)
                    || m.name.as_str().replace('.', "_") == *key
            })
            .map(|(i, _)| i)
            .collect();
        let index = match matches.as_slice() {
            [one] => *one,
            [] => {
                let names = models.iter().map(|m| m.name.as_str());
                diagnostics.push(
                    at(
                        Diagnostic::error(
                            codes::UNKNOWN_CONTRACT_MODEL,
                            format!("[model.{key}] names no model"),
                        ),
                        &text,
                        key,
                        None,
                    )
                    .with_suggestions(did_you_mean(key, names))
                    .with_help("use the model's full name, e.g. [model.\"assay.results\"]"),
                );
                continue;
            }
            many => {
                let names: Vec<String> = many.iter().map(|&i| models[i].name.to_string()).collect();
                diagnostics.push(
                    at(
                        Diagnostic::error(
                            codes::UNKNOWN_CONTRACT_MODEL,
                            format!("[model.{key}] matches several models"),
                        ),
                        &text,
                        key,
                        None,
                    )
                    .with_suggestions(names)
                    .with_help("use the model's full name"),
                );
                continue;
            }
        };
        let contract = match resolve(key, section, &text, diagnostics) {
            Some(c) => c,
            None => continue,
        };
        check_model(index, key, &contract, models, dialect, &text, diagnostics);
        out.insert(index, contract);
    }
    check_directive_columns(models, ws, 0..models.len(), diagnostics);
    out
}

/// `@key` / `@not-null` of the models `indices` name real columns, whatever the contract says
/// (C-codes on the model's file).
pub(crate) fn check_directive_columns(
    models: &[Arc<CompiledModel>],
    ws: &Workspace,
    indices: impl IntoIterator<Item = usize>,
    diagnostics: &mut Diagnostics,
) {
    for i in indices {
        let m = &models[i];
        let Some(columns) = m.schema.as_ref().and_then(ModelSchema::columns) else {
            continue;
        };
        let file = &ws.models[i];
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        for (directive, at_line) in [
            ("@key", &file.directives.key),
            ("@not-null", &file.directives.not_null),
        ] {
            let Some(list) = at_line else { continue };
            for col in list.value.iter().filter(|c| !names.contains(&c.as_str())) {
                diagnostics.push(
                    Diagnostic::error(
                        codes::CONTRACT_UNKNOWN_COLUMN,
                        format!(
                            "{directive} names `{col}`, which `{}` does not produce",
                            m.name
                        ),
                    )
                    .in_file(&m.path)
                    .at(list.line, 1)
                    .with_suggestions(did_you_mean(col, names.iter().copied()))
                    .with_help(format!("the model's columns are: {}", names.join(", "))),
                );
            }
        }
    }
}

fn resolve(
    key: &str,
    section: &ModelSection,
    text: &str,
    diagnostics: &mut Diagnostics,
) -> Option<Contract> {
    let mut columns = Vec::new();
    for (name, value) in &section.columns {
        match value.clone().try_into::<ColumnSection>() {
            Ok(c) => columns.push(ContractColumn {
                name: name.to_lowercase(),
                data_type: c.data_type,
                nullable: c.nullable,
                description: c.description,
            }),
            Err(e) => {
                diagnostics.push(
                    at(
                        Diagnostic::error(
                            codes::INVALID_CONFIG,
                            format!("[model.{key}.columns.{name}]: {}", e.message()),
                        ),
                        text,
                        key,
                        Some(name),
                    )
                    .with_help("a column accepts `type`, `nullable` and `description`"),
                );
                return None;
            }
        }
    }
    Some(Contract {
        description: section.description.clone(),
        enforced: section.contract.as_ref().is_some_and(|c| c.enforced),
        columns,
        renames: section.renames.clone(),
    })
}

fn check_model(
    index: usize,
    key: &str,
    contract: &Contract,
    models: &mut [Arc<CompiledModel>],
    dialect: &Dialect,
    text: &str,
    diagnostics: &mut Diagnostics,
) {
    let name = models[index].name.to_string();
    let Some(ModelSchema::Known { columns, .. }) = &models[index].schema else {
        if contract.enforced && !models[index].has_errors {
            diagnostics.push(
                at(Diagnostic::warning(codes::CONTRACT_UNCHECKED, format!("the contract of `{name}` cannot be checked: its schema is unknown")), text, key, None)
                    .with_help("type the model (analysis strict or baseline without unknown constructs) so its contract can be verified"),
            );
        }
        return;
    };
    let inferred: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    let mut errors = Vec::new();
    for col in &contract.columns {
        let Some(actual) = columns.iter().find(|c| c.name == col.name) else {
            errors.push(
                at(
                    Diagnostic::error(
                        codes::CONTRACT_MISSING_COLUMN,
                        format!(
                            "contract of `{name}` declares `{}`, which the model does not produce",
                            col.name
                        ),
                    ),
                    text,
                    key,
                    Some(&col.name),
                )
                .with_suggestions(did_you_mean(&col.name, inferred.iter().copied()))
                .with_help(format!("the model's columns are: {}", inferred.join(", "))),
            );
            continue;
        };
        if let Some(declared) = &col.data_type {
            match dialect.data_type(declared) {
                Some(want) => {
                    let got = actual.arrow_type.clone();
                    if !crate::types::same_family(&got, &want) {
                        errors.push(
                            at(
                                Diagnostic::error(
                                    codes::CONTRACT_TYPE_MISMATCH,
                                    format!("`{name}.{}` is declared {declared} ({want}) but the model produces {got}", col.name),
                                ),
                                text,
                                key,
                                Some(&col.name),
                            )
                            .with_help(format!("cast the column in the model (`cast({} as {declared})`) or change the contract", col.name)),
                        );
                    }
                }
                None => errors.push(
                    at(Diagnostic::error(codes::INVALID_CONFIG, format!("unknown type `{declared}` for `{name}.{}`", col.name)), text, key, Some(&col.name))
                        .with_help("use a SQL type name such as varchar, bigint, double, decimal(10,2), date, timestamp"),
                ),
            }
        }
    }
    if contract.enforced {
        for c in columns
            .iter()
            .filter(|c| !contract.columns.iter().any(|d| d.name == c.name))
        {
            errors.push(
                at(
                    Diagnostic::error(
                        codes::CONTRACT_EXTRA_COLUMN,
                        format!(
                            "`{name}` produces `{}`, which its enforced contract does not declare",
                            c.name
                        ),
                    ),
                    text,
                    key,
                    None,
                )
                .with_help(format!(
                    "declare [model.\"{name}\".columns.{}] or remove the column",
                    c.name
                )),
            );
        }
    }
    for (new, old) in &contract.renames {
        if !inferred.contains(&new.as_str()) {
            errors.push(
                at(
                    Diagnostic::error(
                        codes::CONTRACT_MISSING_COLUMN,
                        format!("rename `{old}` → `{new}`: `{name}` has no column `{new}`"),
                    ),
                    text,
                    key,
                    None,
                )
                .with_suggestions(did_you_mean(new, inferred.iter().copied()))
                .with_help("a rename maps the current column name to its previous name"),
            );
        }
    }
    if errors.iter().any(Diagnostic::is_error) {
        Arc::make_mut(&mut models[index]).has_errors = true;
    }
    diagnostics.extend(errors);
}
