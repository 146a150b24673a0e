//! `@incremental` strategies name columns of the model's output (`window=ts`,
//! `partition=day`, `key=id`); a column the typed output does not have is a check-time error,
//! not a failure at run time.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics};
use phlo_transform_project::{IncrementalStrategy, Workspace};
use std::sync::Arc;

use crate::model::CompiledModel;
use crate::model::ModelSchema;

/// Reports (P005) every strategy column missing from the known output schema of the models
/// `indices` and marks the model as having errors. Models whose schema is unknown are not
/// judged.
pub(crate) fn check_columns(
    models: &mut [Arc<CompiledModel>],
    ws: &Workspace,
    indices: impl IntoIterator<Item = usize>,
    diagnostics: &mut Diagnostics,
) {
    for i in indices {
        let (model, file) = (models[i].clone(), &ws.models[i]);
        let Some(strategy) = &file.config.incremental.value else {
            continue;
        };
        let Some(columns) = model.schema.as_ref().and_then(ModelSchema::columns) else {
            continue;
        };
        let (what, named): (&str, Vec<&String>) = match strategy {
            IncrementalStrategy::Window { column } => ("window", vec![column]),
            IncrementalStrategy::Partition { columns } => ("partition", columns.iter().collect()),
            IncrementalStrategy::Key { columns } => ("key", columns.iter().collect()),
            IncrementalStrategy::Append | IncrementalStrategy::Full => continue,
        };
        let line = file.directives.incremental.as_ref().map(|d| d.line);
        for name in named {
            if columns.iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
                continue;
            }
            let available: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            let mut d = Diagnostic::error(
                codes::INVALID_DIRECTIVE_ARGUMENT,
                format!(
                    "`@incremental {what}=` names `{name}`, which `{}` does not output",
                    model.name
                ),
            )
            .in_file(&model.path)
            .with_suggestions(phlo_transform_core::did_you_mean(
                name,
                available.iter().copied(),
            ))
            .with_help(format!("the model outputs: {}", available.join(", ")));
            if let Some(line) = line {
                d = d.at(line, 1);
            }
            diagnostics.push(d);
            Arc::make_mut(&mut models[i]).has_errors = true;
        }
    }
}
