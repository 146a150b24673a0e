//! The design-time document (openlineage.json, `lineage --format openlineage`): a JobEvent per
//! model and a DatasetEvent per source, read off the compilation's `LineageGraph` — datasets,
//! their columns and the column derives edges — never re-derived. Run events reuse the same
//! job and dataset objects.

use crate::config::OpenLineageConfig;
use crate::events::{self, envelope};
use crate::naming::{self, DatasetId};
use phlo_transform_compiler::lineage::{
    dataset_id, DatasetOrigin, Directness, EdgeKind, NodeKind, Transformation,
};
use phlo_transform_compiler::Compilation;
use phlo_transform_project::Materialization;
use serde_json::{json, Map, Value};

/// A model as the state store last recorded it: compared with the workspace by `@id` to find
/// renames.
#[derive(Clone, Debug)]
pub struct RecordedModel {
    pub id: String,
    pub name: String,
    pub materialization: Materialization,
}

/// The design-time document: a JobEvent per model (job, inputs and output with schema and
/// column lineage), then a DatasetEvent per source (with schema). A bare array, usable as a
/// batch-endpoint payload.
pub fn design_events(c: &Compilation, config: &OpenLineageConfig) -> Vec<Value> {
    design_events_for(c, config, &|_| true)
}

/// The design-time events of the models and sources whose logical name `keep` accepts
/// (`lineage <target> --format openlineage` scopes the document to the target's subgraph).
pub fn design_events_for(
    c: &Compilation,
    config: &OpenLineageConfig,
    keep: &dyn Fn(&str) -> bool,
) -> Vec<Value> {
    let time = events::now();
    let mut out = Vec::new();
    for i in (0..c.models.len()).filter(|&i| keep(c.models[i].name.as_str())) {
        let mut e = envelope("JobEvent", &time);
        let (inputs, output) = model_io(c, config, i);
        e.insert("job".into(), job(c, config, i));
        e.insert("inputs".into(), Value::Array(inputs));
        e.insert("outputs".into(), json!([output]));
        out.push(Value::Object(e));
    }
    for node in c.lineage().nodes.iter().filter(|n| {
        n.kind == NodeKind::Dataset
            && n.origin.as_ref() == Some(&DatasetOrigin::Source)
            && keep(&n.name)
    }) {
        let mut dataset = dataset_with_schema(c, config, &node.name);
        let description = c
            .workspace
            .sources
            .iter()
            .find(|s| s.name == node.name)
            .and_then(|s| s.description.as_deref());
        if let Some(d) = description {
            dataset["facets"]["documentation"] = events::dataset_documentation(d);
        }
        let mut e = envelope("DatasetEvent", &time);
        e.insert("dataset".into(), dataset);
        out.push(Value::Object(e));
    }
    out
}

/// A DatasetEvent with the `lifecycleStateChange` RENAME facet for every model whose `@id`
/// `recorded` knows under another name (or another materialisation's location).
pub fn rename_events(
    c: &Compilation,
    config: &OpenLineageConfig,
    recorded: &[RecordedModel],
) -> Vec<Value> {
    let time = events::now();
    let mut out = Vec::new();
    for m in &c.models {
        let Some(before) = recorded.iter().find(|r| r.id == m.id) else {
            continue;
        };
        let old = naming::model(config, &before.name, before.materialization);
        let new = naming::model(config, m.name.as_str(), m.materialization);
        if old == new {
            continue;
        }
        let mut dataset = dataset_with_schema(c, config, m.name.as_str());
        dataset["facets"]["lifecycleStateChange"] = events::renamed_from(&old.namespace, &old.name);
        let mut e = envelope("DatasetEvent", &time);
        e.insert("dataset".into(), dataset);
        out.push(Value::Object(e));
    }
    out
}

/// The job object of model `i`: namespace, name and the jobType, sql and (when the file starts
/// with a comment) documentation facets.
pub(crate) fn job(c: &Compilation, config: &OpenLineageConfig, i: usize) -> Value {
    let file = &c.workspace.models[i];
    let dialect = c
        .workspace
        .config
        .transform
        .dialect
        .as_deref()
        .unwrap_or("datafusion");
    let mut facets = Map::new();
    facets.insert("jobType".into(), events::job_type());
    facets.insert("sql".into(), events::sql(&file.text, dialect));
    if let Some(d) = description(&file.text) {
        facets.insert("documentation".into(), events::job_documentation(&d));
    }
    json!({ "namespace": config.namespace, "name": c.models[i].name.as_str(), "facets": facets })
}

/// The input datasets (each with its schema) and the output dataset (schema and column
/// lineage) of model `i`.
pub(crate) fn model_io(
    c: &Compilation,
    config: &OpenLineageConfig,
    i: usize,
) -> (Vec<Value>, Value) {
    let inputs = c
        .dependencies(i)
        .into_iter()
        .map(|d| {
            let (phlo_transform_compiler::Dependency::Model(n)
            | phlo_transform_compiler::Dependency::Source(n)) = d;
            dataset_with_schema(c, config, &n)
        })
        .collect();
    let name = c.models[i].name.as_str();
    let mut output = dataset_with_schema(c, config, name);
    if let Some(lineage) = column_lineage(c, config, name) {
        output["facets"]["columnLineage"] = lineage;
    }
    (inputs, output)
}

/// `{namespace, name, facets: {schema}}` of dataset `name`, the schema being its column nodes
/// (omitted when the graph knows none).
fn dataset_with_schema(c: &Compilation, config: &OpenLineageConfig, name: &str) -> Value {
    let mut dataset = naming::dataset(c, config, name).to_json();
    let mut facets = Map::new();
    let columns = columns(c, name);
    if !columns.is_empty() {
        facets.insert("schema".into(), events::schema(&columns));
    }
    dataset["facets"] = Value::Object(facets);
    dataset
}

/// `(column, type)` of dataset `name`'s column nodes, in column order.
fn columns(c: &Compilation, name: &str) -> Vec<(String, Option<String>)> {
    let g = c.lineage();
    let Some(ds) = g.node(&dataset_id(name)) else {
        return Vec::new();
    };
    g.columns_of(ds)
        .into_iter()
        .map(|col| {
            let node = &g.nodes[col];
            (column_of(&node.id).1.to_string(), node.data_type.clone())
        })
        .collect()
}

/// `dataset://<dataset>#<column>` → (`<dataset>`, `<column>`).
fn column_of(id: &str) -> (&str, &str) {
    let (dataset, column) = id.split_once('#').unwrap_or((id, ""));
    (
        dataset.strip_prefix("dataset://").unwrap_or(dataset),
        column,
    )
}

/// The columnLineage facet of dataset `name`: for every column with derives edges, its input
/// fields, each with one transformation per edge (type DIRECT/INDIRECT, subtype the graph's
/// transformation, description the SQL expression). `None` when no column has inputs.
fn column_lineage(c: &Compilation, config: &OpenLineageConfig, name: &str) -> Option<Value> {
    let g = c.lineage();
    let ds = g.node(&dataset_id(name))?;
    let mut fields = Map::new();
    for col in g.columns_of(ds) {
        // (dataset, column) → transformations, in edge order.
        let mut inputs: Vec<((&str, &str), Vec<Value>)> = Vec::new();
        for e in g.incoming(col).filter(|e| e.kind == EdgeKind::Derives) {
            let key = column_of(&g.nodes[e.from].id);
            let mut t = json!({
                "type": match e.directness.unwrap_or(Directness::Direct) {
                    Directness::Direct => "DIRECT",
                    Directness::Indirect => "INDIRECT",
                },
                "subtype": subtype(e.transformation.unwrap_or(Transformation::Identity)),
            });
            if let Some(expr) = &e.expression {
                t["description"] = json!(expr.as_ref());
            }
            match inputs.iter_mut().find(|(k, _)| *k == key) {
                Some((_, ts)) => ts.push(t),
                None => inputs.push((key, vec![t])),
            }
        }
        if inputs.is_empty() {
            continue;
        }
        let input_fields: Vec<Value> = inputs
            .into_iter()
            .map(|((dataset, column), transformations)| {
                let DatasetId { namespace, name } = naming::dataset(c, config, dataset);
                json!({
                    "namespace": namespace,
                    "name": name,
                    "field": column,
                    "transformations": transformations,
                })
            })
            .collect();
        let column = column_of(&g.nodes[col].id).1;
        fields.insert(column.to_string(), json!({ "inputFields": input_fields }));
    }
    (!fields.is_empty()).then(|| {
        events::facet(
            "ColumnLineageDatasetFacet",
            "1-2-0",
            json!({ "fields": fields }),
        )
    })
}

/// The columnLineage subtype of a graph transformation.
pub(crate) fn subtype(t: Transformation) -> &'static str {
    match t {
        Transformation::Identity => "IDENTITY",
        Transformation::Transformation => "TRANSFORMATION",
        Transformation::Conditional => "CONDITIONAL",
        Transformation::Filter => "FILTER",
        Transformation::Join => "JOIN",
        Transformation::GroupBy => "GROUP_BY",
        Transformation::Sort => "SORT",
        Transformation::Window => "WINDOW",
        Transformation::Aggregation => "AGGREGATION",
    }
}

/// The comment lines a model file starts with, directives (`-- @table`) left out: a model's
/// description when its configuration gives none (also the docs site's).
pub fn description(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| l.starts_with("--"))
        .map(|l| l.trim_start_matches('-').trim())
        .filter(|l| !l.starts_with('@') && !l.is_empty())
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_is_the_leading_comment_without_directives() {
        let text = "-- @table\n-- Orders per customer.\n--   One row each.\nselect 1 -- not this\n";
        assert_eq!(
            description(text).as_deref(),
            Some("Orders per customer.\nOne row each.")
        );
        assert_eq!(description("-- @view\nselect 1"), None);
        assert_eq!(description("select 1"), None);
    }

    #[test]
    fn column_ids_split_into_dataset_and_column() {
        assert_eq!(
            column_of("dataset://raw.orders#amount"),
            ("raw.orders", "amount")
        );
    }
}
