//! A compiled model and what the compiler's passes share about it: its resolved relations,
//! inferred schema and column lineage, and its query with relations replaced. The leaf the
//! driver (`compile`), typing, contracts, tests and lineage all build on, so that none of
//! them depends on the driver.

use datafusion::arrow::datatypes::SchemaRef;
use phlo_transform_core::ModelName;
use phlo_transform_project::Materialization;
use phlo_transform_sql::parse::default_dialect;
use phlo_transform_sql::sqlparser::ast::Query;
use phlo_transform_sql::{parse_query, rewrite_relations, RelationRef, Replacement};
use serde::Serialize;
use std::sync::Arc;

use crate::plan_lineage::ColumnDerivations;
use crate::resolve::Target;
use crate::version::ModelVersion;

/// A relation as written and what it resolved to (`None`: unresolved, already reported).
#[derive(Clone, Debug)]
pub struct ResolvedRelation {
    pub relation: RelationRef,
    pub target: Option<Target>,
}

/// A dependency of a model, for reports.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum Dependency {
    Model(String),
    Source(String),
}

#[derive(Clone, Debug)]
pub struct CompiledModel {
    pub name: ModelName,
    pub id: String,
    pub path: String,
    pub materialization: Materialization,
    /// The SQL after templating; `None` when the file did not parse. The parsed query is not
    /// kept: a sqlparser AST is about a hundred times the size of its text, so at 10,000
    /// models they would not fit the memory budget (issue 17). `query()` parses it again.
    pub sql: Option<Arc<str>>,
    pub relations: Vec<ResolvedRelation>,
    /// Upstream model indices, sorted.
    pub upstream: Vec<usize>,
    /// Source names read directly, sorted.
    pub sources: Vec<String>,
    /// `None` when the model, or anything upstream of it, has errors.
    pub version: Option<ModelVersion>,
    /// True when this model's own file has an error.
    pub has_errors: bool,
    /// Inferred output schema; `None` when the model (or an input) has errors.
    pub schema: Option<ModelSchema>,
    /// Fingerprint of the unoptimized DataFusion plan the schema comes from (`None`: untyped).
    /// The plan itself is dropped once typed: at 10,000 models all plans would not fit the
    /// memory budget (issue 17), and this and `column_lineage` are all that is read from it.
    pub plan_fingerprint: Option<String>,
    /// The lineage of each output column, read off the plan while it was alive; `None` when
    /// the model is untyped.
    pub column_lineage: Option<Vec<ColumnDerivations>>,
}

impl CompiledModel {
    /// The parsed query, `None` when the file did not parse. Parsed again on every call: keep
    /// it only as long as it is needed.
    pub fn query(&self) -> Option<Box<Query>> {
        let sql = self.sql.as_deref()?;
        // It parsed when compiled; parsing is deterministic.
        parse_query(sql, &self.path, &default_dialect())
            .ok()
            .map(|p| p.query)
    }
}

/// One output column of a model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Column {
    pub name: String,
    /// The Arrow type DataFusion infers (`Int64`, `Utf8`, `Decimal128(10, 2)`, …).
    #[serde(rename = "type")]
    pub data_type: String,
    /// False only where the plan proves the column cannot be null.
    pub nullable: bool,
    #[serde(skip)]
    pub arrow_type: datafusion::arrow::datatypes::DataType,
}

/// A model's inferred schema.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ModelSchema {
    Known {
        columns: Vec<Column>,
        #[serde(skip)]
        arrow: SchemaRef,
    },
    Unknown {
        reason: String,
    },
}

impl ModelSchema {
    pub(crate) fn known(arrow: SchemaRef) -> Self {
        let columns = arrow
            .fields()
            .iter()
            .map(|f| Column {
                name: f.name().clone(),
                data_type: f.data_type().to_string(),
                nullable: f.is_nullable(),
                arrow_type: f.data_type().clone(),
            })
            .collect();
        ModelSchema::Known { columns, arrow }
    }

    pub fn columns(&self) -> Option<&[Column]> {
        match self {
            ModelSchema::Known { columns, .. } => Some(columns),
            ModelSchema::Unknown { .. } => None,
        }
    }
}

/// The dependencies of model `index`, sorted: the models it reads, then the sources.
pub(crate) fn dependencies(models: &[Arc<CompiledModel>], index: usize) -> Vec<Dependency> {
    let m = &models[index];
    let mut deps: Vec<Dependency> = m
        .upstream
        .iter()
        .map(|&u| Dependency::Model(models[u].name.to_string()))
        .chain(m.sources.iter().cloned().map(Dependency::Source))
        .collect();
    deps.sort();
    deps
}

pub(crate) fn executable_query(
    models: &[Arc<CompiledModel>],
    index: usize,
    physical: &dyn Fn(&Target) -> Vec<String>,
) -> Option<Query> {
    let m = &models[index];
    rewrite(models, *m.query()?, &m.relations, physical)
}

/// The model's query with every relation, ephemeral models included, replaced by `physical`.
/// Typing plans an ephemeral model once and its readers against its schema, so the lineage
/// graph sees the ephemeral model as the dataset its readers read.
pub(crate) fn typing_query(
    models: &[Arc<CompiledModel>],
    index: usize,
    physical: &dyn Fn(&Target) -> String,
) -> Option<Query> {
    let m = &models[index];
    let mut q = *m.query()?;
    rewrite_relations(&mut q, |parts| {
        let r = m.relations.iter().find(|r| r.relation.parts == parts)?;
        Some(Replacement::Name(physical(r.target.as_ref()?)))
    });
    Some(q)
}

pub(crate) fn rewrite(
    models: &[Arc<CompiledModel>],
    mut q: Query,
    relations: &[ResolvedRelation],
    physical: &dyn Fn(&Target) -> Vec<String>,
) -> Option<Query> {
    let mut failed = false;
    rewrite_relations(&mut q, |parts| {
        let target = relations
            .iter()
            .find(|r| r.relation.parts == parts)?
            .target
            .as_ref()?;
        match target {
            Target::Model(i) if models[*i].materialization == Materialization::Ephemeral => {
                match executable_query(models, *i, physical) {
                    Some(inner) => Some(Replacement::Derived(Box::new(inner))),
                    None => {
                        failed = true;
                        None
                    }
                }
            }
            other => Some(Replacement::Parts(physical(other))),
        }
    });
    (!failed).then_some(q)
}
