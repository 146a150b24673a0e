//! The reports of `ref list | show | create | delete`: a reference's summary, and with its
//! pointers, last run and events its detail; and what a reference reads, which `lineage
//! --ref` adds to the lineage it reports.

use phlo_transform_core::Diagnostic;
use phlo_transform_state::{Pointer, RefEvent, RefRecord, RunBinding};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::Environments;

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

impl PointerRow {
    /// `warehouse`: the embedded engine's root (`None` on Trino + Nessie: no path).
    fn new(p: &Pointer, warehouse: Option<&Path>) -> Self {
        PointerRow {
            model: p.model_name.clone(),
            kind: p.kind.clone(),
            location: p.location.clone(),
            path: warehouse.map(|w| w.join(&p.location)),
            delta_version: p.delta_version,
            identity: p.identity.clone(),
            built_in: p.built_in.clone(),
            version: p.record.version.clone(),
            run_id: p.record.run_id.clone(),
        }
    }
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
                .map(|p| PointerRow::new(p, (!on_branch).then_some(warehouse)))
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

/// What reference `ref` reads: the physical table (at a version) of each model in scope.
#[derive(Debug, Serialize)]
pub struct EnvironmentReads {
    #[serde(rename = "ref")]
    pub reference: String,
    pub hash: String,
    /// Sorted by model name; a model it has no pointer to is not listed (nothing is read).
    pub reads: Vec<PointerRow>,
}

/// A report as seen from an environment (`lineage --ref`): its own fields, and what the
/// environment reads.
#[derive(Debug, Serialize)]
pub struct InEnvironment<R> {
    #[serde(flatten)]
    pub report: R,
    pub environment: EnvironmentReads,
}

impl Environments {
    /// What reference `name` reads of the models in `scope` (every model: `None`).
    pub async fn reads(
        &self,
        name: &str,
        scope: Option<&BTreeSet<&str>>,
    ) -> Result<EnvironmentReads, Diagnostic> {
        let r = self.get(name).await?;
        let warehouse = self.branches.is_none().then_some(self.warehouse.as_path());
        let mut reads: Vec<PointerRow> = r
            .pointers
            .values()
            .filter(|p| scope.is_none_or(|s| s.contains(p.model_name.as_str())))
            .map(|p| PointerRow::new(p, warehouse))
            .collect();
        reads.sort_by(|a, b| a.model.cmp(&b.model));
        Ok(EnvironmentReads {
            reference: r.name,
            hash: r.hash,
            reads,
        })
    }
}

impl super::Environments {
    /// `ref list`'s report.
    pub async fn list_report(&self) -> Result<RefList, phlo_transform_core::Diagnostic> {
        let refs = self.list().await?;
        Ok(RefList {
            refs: refs.iter().map(RefSummary::new).collect(),
        })
    }

    /// `ref show <name>`'s report: its pointers (paths under `warehouse` on the embedded
    /// engine), its run, and its promotions and rollbacks.
    pub async fn detail_report(
        &self,
        name: &str,
        warehouse: &Path,
    ) -> Result<RefDetail, phlo_transform_core::Diagnostic> {
        let r = self.get(name).await?;
        let events = self.events(name).await?;
        let branch = self.branch_and_catalog(&r.name);
        Ok(RefDetail::new(&r, warehouse, events, branch))
    }
}
