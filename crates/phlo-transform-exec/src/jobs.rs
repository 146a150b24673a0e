//! What a planned model becomes for the adapter (its job: executable SQL over physical names,
//! how its table is written) and, once built, for the state store (its materialisation record).
//! Used by the scheduler, the data tests and `inspect --sql`; a leaf below all of them.

use phlo_transform_adapter::{Adapter, MaterializeJob, MaterializeOutcome, TableSpec};
use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::Compilation;
use phlo_transform_plan::{PlannedModel, ReasonKind};
use phlo_transform_project::{IncrementalStrategy, Materialization};
use phlo_transform_state::{MaterializedVersion, RecordedColumn, StateError, StateStore};

use crate::failure::now;

/// The physical identifier parts of a model or source, as `adapter` names them.
pub(crate) fn physical_parts(c: &Compilation, adapter: &dyn Adapter, t: &Target) -> Vec<String> {
    match t {
        Target::Model(i) => adapter.model_relation(c.models[*i].name.as_str()).parts,
        Target::Source(s) => adapter.source_relation(s).parts,
    }
}

/// The adapter's job for planned model `m`; `None` when its executable SQL cannot be built.
pub(crate) fn materialize_job(
    c: &Compilation,
    m: &PlannedModel,
    adapter: &dyn Adapter,
    run_id: &str,
    generation: i64,
) -> Option<MaterializeJob> {
    let index = c.model_index(&m.name).expect("planned models exist");
    let full_rebuild = m.full_rebuild || m.reasons.iter().any(|r| r.kind == ReasonKind::Forced);
    let mut job = model_job(c, index, adapter, full_rebuild)?;
    job.model_id = m.id.clone();
    job.version = m.version.clone().unwrap_or_default();
    job.run_id = run_id.to_string();
    job.generation = generation;
    Some(job)
}

/// The job that materialises model `index` through `adapter` (outside a run: no run id, the
/// desired version): what `inspect --sql` prints the statements of.
pub fn model_job(
    c: &Compilation,
    index: usize,
    adapter: &dyn Adapter,
    full_rebuild: bool,
) -> Option<MaterializeJob> {
    let m = &c.models[index];
    let query = c.executable_query(index, &|t| physical_parts(c, adapter, t))?;
    let file = &c.workspace.models[index];
    Some(MaterializeJob {
        model_id: m.id.clone(),
        model_name: m.name.to_string(),
        relation: adapter.model_relation(m.name.as_str()),
        materialization: m.materialization,
        version: m
            .version
            .as_ref()
            .map(|v| v.version.clone())
            .unwrap_or_default(),
        run_id: String::new(),
        generation: 0,
        query,
        table: table_spec(c, index, m.materialization, full_rebuild),
        columns: m
            .schema
            .as_ref()
            .and_then(|s| s.columns())
            .map(|cols| cols.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default(),
        path: file.path.clone(),
        text: file.text.as_str().into(),
    })
}

/// How the adapter writes a table model: its incremental strategy, whether the plan rebuilds
/// it in full, and the columns it guarantees non-null.
fn table_spec(
    c: &Compilation,
    index: usize,
    materialization: Materialization,
    full_rebuild: bool,
) -> TableSpec {
    let config = c.config(index);
    let mut not_null = config.not_null.value.clone();
    if let Some(IncrementalStrategy::Key { columns }) = &config.incremental.value {
        not_null.extend(columns.iter().cloned());
    }
    if let Some(contract) = c.contracts.get(&index).filter(|k| k.enforced) {
        not_null.extend(
            contract
                .columns
                .iter()
                .filter(|col| col.nullable == Some(false))
                .map(|col| col.name.to_lowercase()),
        );
    }
    TableSpec {
        incremental: config
            .incremental
            .value
            .clone()
            .filter(|_| materialization == Materialization::Incremental),
        full_rebuild,
        key: config.key.value.clone(),
        not_null,
        maintenance: c.workspace.config.transform.maintenance.clone(),
    }
}

/// What a run records of one materialisation besides the model's version.
pub(crate) struct Written<'a> {
    pub run_id: &'a str,
    pub generation: i64,
    pub environment: &'a str,
    pub adapter: &'a str,
    /// The adapter's output identity and physical state after the write.
    pub outcome: &'a MaterializeOutcome,
    /// What the written data is current as of (`phlo_transform_plan::as_of::Clocks::built`).
    pub current_as_of: Option<phlo_transform_state::AsOf>,
}

/// Records that `m` is materialised at its compiled version, as `written` says.
pub(crate) async fn record_materialization(
    c: &Compilation,
    m: &PlannedModel,
    state: &dyn StateStore,
    written: Written<'_>,
) -> Result<(), StateError> {
    let Written {
        run_id,
        generation,
        environment,
        adapter,
        outcome,
        current_as_of,
    } = written;
    let index = c.model_index(&m.name).expect("planned models exist");
    let Some(v) = &c.models[index].version else {
        return Ok(());
    };
    state
        .record_materialization(&MaterializedVersion {
            environment: environment.to_string(),
            model_id: m.id.clone(),
            model_name: m.name.clone(),
            version: v.version.clone(),
            sql_hash: v.sql_hash.clone(),
            text_hash: Some(v.fingerprints.text.clone()),
            plan_hash: v.fingerprints.plan.clone(),
            config_hash: v.config_hash.clone(),
            upstream: v.upstream.clone(),
            sources: v.sources.clone(),
            materialization: m.materialization.as_str().to_string(),
            relation: m.relation.clone(),
            run_id: run_id.to_string(),
            generation,
            materialized_at: now(),
            adapter: Some(adapter.to_string()),
            output_identity: outcome.output_identity.clone(),
            physical_state: outcome.physical_state.clone(),
            current_as_of,
            output_columns: c.models[index]
                .schema
                .as_ref()
                .and_then(|s| s.columns())
                .map(|cols| {
                    cols.iter()
                        .map(|col| RecordedColumn {
                            name: col.name.clone(),
                            data_type: col.data_type.clone(),
                            nullable: col.nullable,
                        })
                        .collect()
                }),
        })
        .await
}
