//! What the site shows, gathered once: every model's inspection with its description,
//! columns (type, nullability, description, one-hop inputs), tests with their last results
//! and run history; every source's inspection. Pages only render this.

use phlo_transform_compiler::{Compilation, ModelSchema};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{ModelRunRecord, NodeRecord, StateStore};
use std::collections::BTreeMap;

use crate::environments::MAIN_ENVIRONMENT;
use crate::history;
use crate::inspect::{ModelInspection, SourceInspection};

/// Runs of history shown per model.
const HISTORY_RUNS: i64 = 20;
/// Newest runs read for the tests' last results.
const TEST_RUNS: i64 = 20;

/// The whole site's data, models and sources sorted by name.
pub struct Site<'c> {
    pub models: Vec<ModelDoc<'c>>,
    pub sources: Vec<SourceInspection<'c>>,
    /// Runs the state holds (among the newest [`TEST_RUNS`]); 0 for a workspace never run.
    pub runs: usize,
}

/// One model's page.
pub struct ModelDoc<'c> {
    pub inspection: ModelInspection<'c>,
    /// `[model."x"] description`, else the file's leading comment.
    pub description: Option<String>,
    pub owner: Option<&'c str>,
    pub columns: Vec<ColumnDoc>,
    /// Why the schema is unknown, when it is.
    pub schema_unknown: Option<&'c str>,
    pub tests: Vec<TestDoc<'c>>,
    /// Newest first.
    pub history: Vec<ModelRunRecord>,
    /// The model file as written.
    pub text: &'c str,
}

pub struct ColumnDoc {
    pub name: String,
    pub data_type: String,
    pub nullable: bool,
    pub description: Option<String>,
    /// Input columns (`dataset.column`) the value is computed from.
    pub direct: Vec<String>,
    /// Input columns that only filter, join or group it.
    pub indirect: Vec<String>,
}

pub struct TestDoc<'c> {
    pub name: &'c str,
    /// The newest recorded result, with its run's id.
    pub last: Option<(String, NodeRecord)>,
}

impl<'c> Site<'c> {
    /// Reads what the state records of `c`'s models and tests; a state without runs gives
    /// pages that say "never run".
    pub async fn gather(c: &'c Compilation, store: &dyn StateStore) -> Result<Self, Diagnostic> {
        let (runs, last_tests) = history::last_test_results(store, TEST_RUNS).await?;
        let mut models = Vec::with_capacity(c.models.len());
        for i in 0..c.models.len() {
            models.push(model_doc(c, i, store, &last_tests).await?);
        }
        models.sort_by(|a, b| a.inspection.name.cmp(b.inspection.name));
        let mut sources: Vec<SourceInspection> = c
            .workspace
            .sources
            .iter()
            .filter_map(|s| SourceInspection::new(c, &s.name))
            .collect();
        sources.sort_by(|a, b| a.name.cmp(b.name));
        Ok(Site {
            models,
            sources,
            runs,
        })
    }
}

async fn model_doc<'c>(
    c: &'c Compilation,
    i: usize,
    store: &dyn StateStore,
    last_tests: &BTreeMap<String, (String, NodeRecord)>,
) -> Result<ModelDoc<'c>, Diagnostic> {
    let (m, file) = (&c.models[i], &c.workspace.models[i]);
    let recorded = match history::model(store, m.name.as_str(), HISTORY_RUNS).await {
        Ok(report) => Some(report),
        // Never planned: nothing recorded, which the page says.
        Err(d) if d.code == codes::NO_MODEL_STATE => None,
        Err(d) => return Err(d),
    };
    let main = recorded.as_ref().and_then(|r| {
        r.materializations
            .iter()
            .find(|v| v.environment == MAIN_ENVIRONMENT)
    });
    let inspection = ModelInspection::new(c, i, None, main, false);
    let contract = c.contracts.get(&i);
    let description = contract
        .and_then(|k| k.description.clone())
        .or_else(|| phlo_transform_openlineage::model_description(&file.text));
    let lineage: BTreeMap<&str, _> = inspection
        .column_lineage
        .iter()
        .map(|col| (col.name.as_str(), col))
        .collect();
    let (columns, schema_unknown) = match &m.schema {
        Some(ModelSchema::Known { columns, .. }) => (
            columns
                .iter()
                .map(|col| ColumnDoc {
                    name: col.name.clone(),
                    data_type: col.data_type.clone(),
                    nullable: col.nullable,
                    description: contract
                        .and_then(|k| k.columns.iter().find(|d| d.name == col.name))
                        .and_then(|d| d.description.clone()),
                    direct: lineage
                        .get(col.name.as_str())
                        .map(|l| l.direct.clone())
                        .unwrap_or_default(),
                    indirect: lineage
                        .get(col.name.as_str())
                        .map(|l| l.indirect.clone())
                        .unwrap_or_default(),
                })
                .collect(),
            None,
        ),
        Some(ModelSchema::Unknown { reason }) => (Vec::new(), Some(reason.as_str())),
        None => (Vec::new(), Some("the model has compile errors")),
    };
    let tests = inspection
        .tests
        .iter()
        .map(|&name| TestDoc {
            name,
            last: last_tests.get(name).cloned(),
        })
        .collect();
    Ok(ModelDoc {
        inspection,
        description,
        owner: file.config.owner.value.as_deref(),
        columns,
        schema_unknown,
        tests,
        history: recorded.map(|r| r.history).unwrap_or_default(),
        text: &file.text,
    })
}
