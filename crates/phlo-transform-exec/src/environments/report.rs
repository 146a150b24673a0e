//! The reports of `ref list | show | create | delete`: a reference's summary, and with its
//! pointers, last run and events its detail.

use phlo_transform_state::{RefEvent, RefRecord, RunBinding};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// `created_from` of a summary: the base and its hash when the reference was created.
#[derive(Debug, Serialize)]
pub struct Base {
    #[serde(rename = "ref")]
    pub reference: String,
    pub hash: String,
}

/// One reference in `ref list`.
#[derive(Debug, Serialize)]
pub struct RefSummary {
    pub name: String,
    pub hash: String,
    pub created_from: Option<Base>,
    pub environment: String,
    /// How many models it points at.
    pub models: usize,
    pub updated_at: String,
}

impl RefSummary {
    pub fn new(r: &RefRecord) -> Self {
        RefSummary {
            name: r.name.clone(),
            hash: r.hash.clone(),
            created_from: r.created_from.as_ref().map(|f| Base {
                reference: f.reference.clone(),
                hash: f.hash.clone(),
            }),
            environment: r.environment.clone(),
            models: r.pointers.len(),
            updated_at: r.updated_at.clone(),
        }
    }
}

/// `ref list`.
#[derive(Debug, Serialize)]
pub struct RefList {
    pub refs: Vec<RefSummary>,
}

/// One model's pointer: the table (at a Delta version) the reference reads it from.
#[derive(Debug, Serialize)]
pub struct PointerRow {
    pub model: String,
    pub kind: String,
    /// Relative to the warehouse root; on Trino + Nessie the table's key (`schema.table`).
    pub location: String,
    /// The Delta table folder (the embedded engine; `None` on Trino + Nessie).
    pub path: Option<PathBuf>,
    pub delta_version: Option<i64>,
    pub identity: Option<String>,
    /// The reference whose run wrote the table.
    pub built_in: String,
    pub version: String,
    pub run_id: String,
}

/// `ref show` and `ref create`.
#[derive(Debug, Serialize)]
pub struct RefDetail {
    #[serde(flatten)]
    pub summary: RefSummary,
    /// On Trino + Nessie: the Nessie branch and the Trino catalog it is read through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    pub pointers: Vec<PointerRow>,
    pub run: Option<RunBinding>,
    /// Promotions into and rollbacks of it, most recent first.
    pub events: Vec<RefEvent>,
}

impl RefDetail {
    /// `warehouse`: the embedded engine's root; `branch`: on Trino + Nessie, the branch and
    /// catalog instead.
    pub fn new(
        r: &RefRecord,
        warehouse: &Path,
        events: Vec<RefEvent>,
        branch: Option<(String, String)>,
    ) -> Self {
        let on_branch = branch.is_some();
        let (branch, catalog) = branch.unzip();
        RefDetail {
            summary: RefSummary::new(r),
            branch,
            catalog,
            pointers: r
                .pointers
                .values()
                .map(|p| PointerRow {
                    model: p.model_name.clone(),
                    kind: p.kind.clone(),
                    location: p.location.clone(),
                    path: (!on_branch).then(|| warehouse.join(&p.location)),
                    delta_version: p.delta_version,
                    identity: p.identity.clone(),
                    built_in: p.built_in.clone(),
                    version: p.record.version.clone(),
                    run_id: p.record.run_id.clone(),
                })
                .collect(),
            run: r.run.clone(),
            events,
        }
    }
}

/// `ref create`: the new reference's detail, and the base it was created from.
#[derive(Debug, Serialize)]
pub struct RefCreated {
    #[serde(flatten)]
    pub detail: RefDetail,
    /// The `--from` reference.
    #[serde(skip)]
    pub from: String,
}

/// `ref delete`.
#[derive(Debug, Serialize)]
pub struct RefDeleted {
    pub deleted: String,
    pub hash: String,
}
