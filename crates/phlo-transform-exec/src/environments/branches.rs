//! Environments on Trino + Nessie (SPEC §44–48): the same references, gates, records and
//! reports as the embedded engine's, with a Nessie branch as the reference. The branch's
//! head is the reference's hash; the state store keeps each candidate's provenance
//! (`created_from`: the base and its head), its pointers (model → Iceberg table key with its
//! snapshot identity, and the materialisation record of what is there) and its last run's
//! binding. `main` is never recorded: it is read live, its head from Nessie and its pointers
//! from the main environment's records with the identities of its tables now.
//!
//! A candidate shares every table of its base natively (a Nessie branch), so a model whose
//! version matches and whose table on the branch still has the recorded identity is reused;
//! the rest is written on the branch through its catalog ([`BranchCatalog`]). Publishing is one
//! compare-and-swap in Nessie — the target branch reassigned to the audited candidate head,
//! expected at the head the gates saw — then the main environment's records follow the
//! candidate's, with a PromotionRecord. Rollback reassigns the branch back the same way.

use phlo_transform_adapter::branching::{BranchCatalog, MoveError};
use phlo_transform_adapter::AdapterError;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::AdapterKind;
use phlo_transform_state::{
    MaterializedVersion, Pointer, RefEvent, RefRecord, RefSwap, RefWrite, RunBinding, StateStore,
    VersionSwap,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use super::binding::BranchBinding;
use super::promote::{base_gate, promotion_event, provenance, Gate, Promotion};
use super::rollback::Rollback;
use super::{
    candidate_record, check_ref_name, exists, main_protected, now, stale, state_error, unknown_ref,
    Binding, Environments, MAIN, MAIN_ENVIRONMENT,
};
use crate::{RunReport, WriterLease};

const WAIT: Duration = Duration::from_secs(30);

/// A reference as it is now: the record (its hash the branch's head) and the hash its state
/// row has (`None` for `main`, which has no row).
pub(crate) struct Live {
    pub record: RefRecord,
    pub stored: Option<String>,
}

pub(crate) fn adapter_error(e: AdapterError) -> Diagnostic {
    let help = if e.code == codes::ADAPTER_UNAVAILABLE {
        "check that Trino and Nessie answer (`scripts/services.sh status`)"
    } else if e.code == codes::REF_EXISTS {
        "delete the branch in Nessie, or pick another reference name"
    } else {
        "check [adapter.nessie] in phlo.toml and that Trino runs with catalog.management=dynamic"
    };
    Diagnostic::error(e.code, e.message).with_help(help)
}

fn move_error(e: MoveError, what: &str) -> Diagnostic {
    match e {
        MoveError::Moved(m) => stale(&format!("{what}: {m}; nothing was changed")),
        MoveError::Failed(e) => adapter_error(e),
    }
}

/// A table pointer of a branch: the model's Iceberg key with its snapshot identity.
fn pointer(key: String, identity: String, built_in: &str, record: MaterializedVersion) -> Pointer {
    Pointer {
        model_name: record.model_name.clone(),
        kind: "table".into(),
        location: key,
        delta_version: None,
        identity: Some(identity),
        built_in: built_in.to_string(),
        record,
    }
}

impl Environments {
    fn branches(&self) -> &Arc<dyn BranchCatalog> {
        self.branches.as_ref().expect("a branch environment")
    }

    /// Reference `name` now (Y007 when there is none; Y016 when its branch is gone).
    pub(crate) async fn live(&self, name: &str) -> Result<Live, Diagnostic> {
        let b = self.branches();
        let head = b.head(name).await.map_err(adapter_error)?;
        let gone = || {
            Diagnostic::error(
                codes::BRANCH_UNAVAILABLE,
                format!(
                    "Nessie has no branch `{}` (reference `{name}`)",
                    b.branch_of(name)
                ),
            )
            .with_help("the branch was deleted outside phlo-transform: `ref delete` the reference")
        };
        if name == MAIN {
            let head = head.ok_or_else(gone)?;
            let records = self
                .store
                .materializations(MAIN_ENVIRONMENT)
                .await
                .map_err(state_error)?;
            let tables: Vec<MaterializedVersion> = records
                .into_values()
                .filter(|r| {
                    r.adapter.as_deref().and_then(AdapterKind::parse) == Some(AdapterKind::Trino)
                        && !matches!(r.materialization.as_str(), "view" | "ephemeral")
                })
                .collect();
            let names: Vec<&str> = tables.iter().map(|r| r.model_name.as_str()).collect();
            let identities = b.identities(MAIN, &names).await.map_err(adapter_error)?;
            let mut pointers = BTreeMap::new();
            for r in tables {
                if let Some(Some(identity)) = identities.get(&r.model_name) {
                    let key = b.key_of(&r.model_name);
                    pointers.insert(
                        r.model_id.clone(),
                        pointer(key, identity.clone(), MAIN_ENVIRONMENT, r),
                    );
                }
            }
            let at = now();
            let record = RefRecord {
                name: MAIN.into(),
                hash: head,
                environment: MAIN_ENVIRONMENT.into(),
                pointers,
                created_from: None,
                created_at: at.clone(),
                updated_at: at,
                run: None,
            };
            return Ok(Live {
                record,
                stored: None,
            });
        }
        let stored = self
            .store
            .refs()
            .await
            .map_err(state_error)?
            .into_iter()
            .find(|r| r.name == name)
            .ok_or_else(|| unknown_ref(name))?;
        let head = head.ok_or_else(gone)?;
        let stored_hash = stored.hash.clone();
        let mut record = stored;
        record.hash = head;
        Ok(Live {
            record,
            stored: Some(stored_hash),
        })
    }

    pub(crate) async fn branch_list(&self) -> Result<Vec<RefRecord>, Diagnostic> {
        let mut out = vec![self.live(MAIN).await?.record];
        for r in self.store.refs().await.map_err(state_error)? {
            out.push(self.live(&r.name).await?.record);
        }
        Ok(out)
    }

    /// `ref create`: the Nessie branch at the base's head, its catalog, and the record of its
    /// provenance. A branch of that name that phlo-transform did not create is refused.
    pub(crate) async fn branch_create(
        &self,
        name: &str,
        from: &str,
    ) -> Result<RefRecord, Diagnostic> {
        check_ref_name(name)?;
        if name == MAIN
            || self
                .store
                .refs()
                .await
                .map_err(state_error)?
                .iter()
                .any(|r| r.name == name)
        {
            return Err(exists(name));
        }
        let base = self.live(from).await?.record;
        let b = self.branches();
        b.create(name, from, &base.hash)
            .await
            .map_err(adapter_error)?;
        let candidate = candidate_record(name, &base);
        let swap = RefSwap {
            writes: vec![RefWrite {
                name: name.to_string(),
                expected: None,
                record: Some(candidate.clone()),
            }],
            ..RefSwap::default()
        };
        if !self.store.swap_refs(&swap).await.map_err(state_error)? {
            let _ = b.delete(name, &candidate.hash).await;
            return Err(exists(name));
        }
        Ok(candidate)
    }

    /// `ref delete`: the branch (at the head read), its catalog, its record and records.
    pub(crate) async fn branch_delete(&self, name: &str) -> Result<RefRecord, Diagnostic> {
        if name == MAIN {
            return Err(main_protected());
        }
        let live = self.live(name).await?;
        self.branches()
            .delete(name, &live.record.hash)
            .await
            .map_err(|e| move_error(e, &format!("`{name}` moved while it was being deleted")))?;
        let records = self
            .store
            .materializations(&live.record.environment)
            .await
            .map_err(state_error)?;
        let swap = RefSwap {
            writes: vec![RefWrite {
                name: name.to_string(),
                expected: live.stored.clone(),
                record: None,
            }],
            versions: vec![VersionSwap {
                environment: live.record.environment.clone(),
                put: Vec::new(),
                remove: records.into_keys().collect(),
            }],
            ..RefSwap::default()
        };
        if !self.store.swap_refs(&swap).await.map_err(state_error)? {
            return Err(stale(&format!(
                "the record of `{name}` changed while it was being deleted (its branch is gone)"
            )));
        }
        Ok(live.record)
    }

    /// Binds a command to candidate `name`: its catalog (created again when Trino lost it)
    /// and the live identities of the tables it inherits.
    pub(crate) async fn branch_bind(&self, name: &str) -> Result<Binding, Diagnostic> {
        let live = self.live(name).await.map_err(|d| {
            if d.code == codes::UNKNOWN_REF {
                d.with_help("create it first: `phlo-transform ref create <name> --from main` (no command creates a reference as a side effect)")
            } else {
                d
            }
        })?;
        let b = self.branches().clone();
        b.ensure_catalog(name).await.map_err(adapter_error)?;
        let inherited: Vec<&str> = live
            .record
            .pointers
            .values()
            .filter(|p| p.built_in != live.record.environment)
            .map(|p| p.model_name.as_str())
            .collect();
        let identities = b
            .identities(name, &inherited)
            .await
            .map_err(adapter_error)?;
        Ok(Binding {
            reference: name.to_string(),
            environment: live.record.environment.clone(),
            warehouse: self.warehouse.clone(),
            own_root: self.warehouse.clone(),
            default_schema: None,
            branch: Some(BranchBinding {
                target: b.target_for(name),
                branches: b,
                identities,
            }),
            record: Some(live.record),
        })
    }

    /// After a run on a candidate branch: the models it wrote point at their tables on the
    /// branch now, and the run is bound to the branch's head after its writes.
    pub(crate) async fn branch_commit_run(
        &self,
        name: &str,
        report: &RunReport,
    ) -> Result<RefRecord, Diagnostic> {
        let live = self.live(name).await?;
        let b = self.branches();
        let records = self
            .store
            .materializations(&live.record.environment)
            .await
            .map_err(state_error)?;
        let by_name: HashMap<&str, &MaterializedVersion> = records
            .values()
            .map(|r| (r.model_name.as_str(), r))
            .collect();
        let written: Vec<&str> = report
            .models
            .iter()
            .filter(|m| m.status == "passed" && by_name.contains_key(m.name.as_str()))
            .map(|m| m.name.as_str())
            .collect();
        let identities = b.identities(name, &written).await.map_err(adapter_error)?;
        let mut next = live.record.clone();
        for model in written {
            let record = by_name[model];
            if let Some(Some(identity)) = identities.get(model) {
                next.pointers.insert(
                    record.model_id.clone(),
                    pointer(
                        b.key_of(model),
                        identity.clone(),
                        &live.record.environment,
                        record.clone(),
                    ),
                );
            }
        }
        next.updated_at = now();
        next.run = Some(RunBinding {
            run_id: report.run_id.clone(),
            hash: next.hash.clone(),
        });
        let swap = RefSwap {
            writes: vec![RefWrite {
                name: name.to_string(),
                expected: live.stored.clone(),
                record: Some(next.clone()),
            }],
            ..RefSwap::default()
        };
        if !self.store.swap_refs(&swap).await.map_err(state_error)? {
            return Err(stale(&format!(
                "`{name}` moved while run {} was writing it: its writes are recorded but not in its pointers",
                report.run_id
            )));
        }
        Ok(next)
    }

    /// `base`: the target is still at the head the candidate was created from; `conflicts`:
    /// no table changed in Nessie on both branches since then.
    pub(super) async fn branch_base_gates(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
    ) -> Result<Vec<Gate>, Diagnostic> {
        let from = match provenance(candidate, target) {
            Ok(from) => from,
            Err((base, conflicts)) => return Ok(vec![base, conflicts]),
        };
        let b = self.branches();
        let place = format!(" ({})", b.describe(&target.name));
        let base = base_gate(candidate, target, from, &place);
        let ours = b
            .changed_since(&candidate.name, &from.hash, &candidate.hash)
            .await
            .map_err(adapter_error)?;
        let theirs = b
            .changed_since(&target.name, &from.hash, &target.hash)
            .await
            .map_err(adapter_error)?;
        let both: Vec<&String> = ours.intersection(&theirs).collect();
        let conflicts = if both.is_empty() {
            Gate::new(
                "conflicts",
                true,
                format!(
                    "no table changed on both branches ({} changed on `{}`)",
                    ours.len(),
                    candidate.name
                ),
            )
        } else {
            Gate::new(
                "conflicts",
                false,
                format!(
                    "changed on both branches: {}",
                    both.into_iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        };
        Ok(vec![base, conflicts])
    }

    /// The publish: the candidate must still be at the audited head; the target branch is
    /// reassigned to it only if still at the head the gates saw (Nessie's compare-and-swap);
    /// then the main environment's records become the candidate's, with the PromotionRecord.
    pub(super) async fn branch_publish(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
        promotion: &Promotion,
    ) -> Result<String, Diagnostic> {
        let b = self.branches();
        if b.head(&candidate.name)
            .await
            .map_err(adapter_error)?
            .as_deref()
            != Some(candidate.hash.as_str())
        {
            return Err(stale(&format!(
                "refused as stale: `{}` advanced after its audit at {}; nothing was published",
                candidate.name, candidate.hash
            )));
        }
        b.reassign(&target.name, &target.hash, &candidate.hash)
            .await
            .map_err(|e| {
                move_error(
                    e,
                    &format!(
                        "refused as stale: `{}` moved after the gates were evaluated at {}",
                        target.name, target.hash
                    ),
                )
            })?;
        let (from_catalog, to_catalog) =
            (b.catalog_of(&candidate.name), b.catalog_of(&target.name));
        let put = candidate
            .pointers
            .values()
            .map(|p| {
                let mut r = p.record.clone();
                r.environment = target.environment.clone();
                if let Some(rest) = r.relation.strip_prefix(&format!("{from_catalog}.")) {
                    r.relation = format!("{to_catalog}.{rest}");
                }
                r
            })
            .collect();
        let remove = target
            .pointers
            .keys()
            .filter(|id| !candidate.pointers.contains_key(*id))
            .cloned()
            .collect();
        let at = now();
        let place = Some(("nessie_branch", b.branch_of(&target.name)));
        let event = promotion_event(candidate, target, promotion, &candidate.hash, place, at);
        let promotion_id = event.event_id.clone();
        let swap = RefSwap {
            versions: vec![VersionSwap {
                environment: target.environment.clone(),
                put,
                remove,
            }],
            event: Some(event),
            ..RefSwap::default()
        };
        // Nessie's compare-and-swap decided; this transaction has no condition to fail on.
        self.store.swap_refs(&swap).await.map_err(state_error)?;
        Ok(promotion_id)
    }

    /// `rollback --ref main --to <promotion>` on branches: `main` reassigned to the head the
    /// promotion (`event`) replaced (`before`; expected at its head now), its records restored.
    pub(super) async fn branch_rollback(
        &self,
        reference: &str,
        event: &RefEvent,
        before: RefRecord,
    ) -> Result<Rollback, Diagnostic> {
        let lease = WriterLease::acquire(self.store.clone(), MAIN_ENVIRONMENT, WAIT).await?;
        let result = async {
            let current = self.live(MAIN).await?.record;
            self.branches()
                .reassign(MAIN, &current.hash, &before.hash)
                .await
                .map_err(|e| {
                    move_error(
                        e,
                        &format!("`{reference}` moved while it was being rolled back"),
                    )
                })?;
            let rollback = Rollback {
                rollback_id: uuid::Uuid::now_v7().simple().to_string(),
                reference: reference.to_string(),
                model: None,
                to: event.event_id.clone(),
                hash_before: current.hash.clone(),
                hash_after: before.hash.clone(),
            };
            let at = now();
            let swap = RefSwap {
                versions: vec![VersionSwap {
                    environment: MAIN_ENVIRONMENT.into(),
                    put: before.pointers.values().map(|p| p.record.clone()).collect(),
                    remove: current
                        .pointers
                        .keys()
                        .filter(|id| !before.pointers.contains_key(*id))
                        .cloned()
                        .collect(),
                }],
                event: Some(RefEvent {
                    event_id: rollback.rollback_id.clone(),
                    kind: "rollback".into(),
                    reference: reference.to_string(),
                    at: at.clone(),
                    body: serde_json::json!({ "rollback": rollback, "before": current, "at": at }),
                }),
                ..RefSwap::default()
            };
            self.store.swap_refs(&swap).await.map_err(state_error)?;
            Ok(rollback)
        }
        .await;
        lease.release().await;
        result
    }

    /// The Nessie branch and Trino catalog reference `name` is read through, on branches.
    pub fn branch_and_catalog(&self, name: &str) -> Option<(String, String)> {
        let b = self.branches.as_ref()?;
        Some((b.branch_of(name), b.catalog_of(name)))
    }
}

impl Binding {
    /// The proof that an inherited table is what its pointer says: its identity on the branch
    /// now equals the one recorded.
    pub(crate) fn branch_proof(&self, b: &BranchBinding, p: &Pointer) -> Result<String, String> {
        let live = b.identities.get(&p.model_name).cloned().flatten();
        match (&live, &p.identity) {
            (Some(live), Some(recorded)) if live == recorded => Ok(format!(
                "table `{}` on branch `{}` still has identity {live}",
                p.location,
                b.branches.branch_of(&self.reference)
            )),
            (Some(live), recorded) => Err(format!(
                "table `{}` on branch `{}` has identity {live}, recorded {}",
                p.location,
                b.branches.branch_of(&self.reference),
                recorded.as_deref().unwrap_or("none")
            )),
            (None, _) => Err(format!(
                "table `{}` is not on branch `{}`",
                p.location,
                b.branches.branch_of(&self.reference)
            )),
        }
    }
}

/// The environments of a workspace whose target is `target`: branches on Trino with
/// `[adapter.nessie]` (Y015 without it), else the embedded engine's.
pub fn for_target(
    store: Arc<dyn StateStore>,
    warehouse: &std::path::Path,
    target: &phlo_transform_project::AdapterTarget,
    root: &std::path::Path,
) -> Result<Environments, Diagnostic> {
    let mut envs = Environments::new(store, warehouse);
    let support = phlo_transform_adapter::driver(target.kind()).environments();
    if support == phlo_transform_adapter::EnvironmentSupport::Branches {
        let driver = phlo_transform_adapter::driver(target.kind());
        let b = driver.branches(target, root).map_err(|e| {
            Diagnostic::error(e.code, e.message).with_help(
                "add [adapter.nessie] (url, warehouse) to the Trino target, or use `--adapter local`",
            )
        })?;
        envs.branches = Some(b);
    }
    Ok(envs)
}
