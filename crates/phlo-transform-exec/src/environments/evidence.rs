//! Environment evidence (SPEC §45): each state a candidate reaches — created by `ref create`,
//! moved by a run — is recorded once in the state store, bound to the candidate's hash, with
//! its provenance (`created_from`), its physical place and its pointers; and exported as
//! `environment_<slug>.json` (one file per reference, [`slug`]) plus the single-slot
//! `environment.json`. `main` is no candidate: it has none. Deleting a reference deletes its
//! evidence and its export.

use phlo_transform_compiler::ArtifactDir;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{EvidenceRecord, RefRecord, RunBinding};
use serde::Serialize;

use super::report::Base;
use super::{now, own_dir, slug, state_error, Environments};

/// The kind of the state store's evidence records of environments.
pub const ENVIRONMENT: &str = "environment";

/// One environment evidence record (its body in the state store, and the export).
#[derive(Debug, Serialize)]
pub struct EnvironmentEvidence {
    pub evidence_id: String,
    #[serde(rename = "ref")]
    pub reference: String,
    /// The candidate's hash this record is bound to.
    pub hash: String,
    /// The reference and hash it was provably created from (kept as it moves).
    pub created_from: Base,
    /// Where it writes: its own root relative to the warehouse (`.refs/<slug>`) on the
    /// embedded engine; its Trino catalog on Trino + Nessie.
    pub catalog: String,
    /// `created`: Phlo created the place at `ref create`, nothing was adopted on its name.
    pub catalog_status: &'static str,
    /// On Trino + Nessie: the candidate's branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    pub pointers: Vec<EvidencePointer>,
    /// The run its hash is bound to, if any.
    pub run: Option<RunBinding>,
    pub at: String,
}

/// One pointer as the evidence records it.
#[derive(Debug, Serialize)]
pub struct EvidencePointer {
    pub model: String,
    pub location: String,
    pub delta_version: Option<i64>,
    pub identity: Option<String>,
    pub built_in: String,
}

/// The export of reference `name`'s latest environment evidence.
fn export_name(name: &str) -> String {
    format!("{}{}.json", ArtifactDir::EVIDENCE_PREFIX, slug(name))
}

impl Environments {
    /// Records (once per hash) and exports the evidence of candidate `r`; nothing for `main`.
    pub(crate) async fn record_environment(&self, r: &RefRecord) -> Result<(), Diagnostic> {
        let Some(from) = &r.created_from else {
            return Ok(());
        };
        let (branch, catalog) = match self.branch_and_catalog(&r.name) {
            Some((branch, catalog)) => (Some(branch), catalog),
            None => (None, own_dir(&r.name).to_string_lossy().into_owned()),
        };
        let evidence = EnvironmentEvidence {
            evidence_id: format!("{ENVIRONMENT}:{}:{}", r.name, r.hash),
            reference: r.name.clone(),
            hash: r.hash.clone(),
            created_from: Base {
                reference: from.reference.clone(),
                hash: from.hash.clone(),
            },
            catalog,
            catalog_status: "created",
            branch,
            pointers: r
                .pointers
                .values()
                .map(|p| EvidencePointer {
                    model: p.model_name.clone(),
                    location: p.location.clone(),
                    delta_version: p.delta_version,
                    identity: p.identity.clone(),
                    built_in: p.built_in.clone(),
                })
                .collect(),
            run: r.run.clone(),
            at: now(),
        };
        let body = serde_json::to_value(&evidence).expect("evidence serialises");
        self.store
            .record_evidence(&EvidenceRecord {
                evidence_id: evidence.evidence_id.clone(),
                kind: ENVIRONMENT.to_string(),
                reference: r.name.clone(),
                hash: r.hash.clone(),
                at: evidence.at.clone(),
                body,
            })
            .await
            .map_err(state_error)?;
        // The export is the record as stored: the first one of this hash.
        let stored = self
            .store
            .evidence(ENVIRONMENT, &r.name)
            .await
            .map_err(state_error)?
            .into_iter()
            .find(|e| e.evidence_id == evidence.evidence_id)
            .map(|e| e.body)
            .unwrap_or_default();
        self.export(&export_name(&r.name), &stored)?;
        self.export("environment.json", &stored)
    }

    /// Writes `value` as `file` into the artifact directory, when there is one.
    pub(crate) fn export(&self, file: &str, value: &impl Serialize) -> Result<(), Diagnostic> {
        match &self.artifacts {
            Some(dir) => ArtifactDir::new(dir).write(file, value),
            None => Ok(()),
        }
    }

    /// Removes the exports of deleted reference `name` (the single slot when it is its).
    pub(crate) fn remove_exports(&self, name: &str) {
        let Some(dir) = &self.artifacts else {
            return;
        };
        let _ = std::fs::remove_file(dir.join(export_name(name)));
        let single = dir.join("environment.json");
        let is_its = std::fs::read_to_string(&single)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|v| v["ref"] == name);
        if is_its {
            let _ = std::fs::remove_file(single);
        }
    }
}
