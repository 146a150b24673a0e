//! Rollback (SPEC §48): a whole environment back to the pointers a recorded promotion
//! replaced, or one model's table back to an earlier Delta version (time travel: the
//! environment reads that version; nothing is rewritten). Both are one state transaction
//! under compare-and-swap and leave a rollback record.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{
    MaterializedVersion, Pointer, RefEvent, RefRecord, RefSwap, RefWrite, VersionSwap,
};
use serde::Serialize;
use std::time::Duration;

use super::{now, stale, state_error, Environments};
use crate::WriterLease;

/// What a rollback did (the `--json` document).
#[derive(Clone, Debug, Serialize)]
pub struct Rollback {
    pub rollback_id: String,
    #[serde(rename = "ref")]
    pub reference: String,
    /// The model rolled back, for a table rollback.
    pub model: Option<String>,
    /// The promotion undone, or the Delta version now read.
    pub to: String,
    pub hash_before: String,
    pub hash_after: String,
}

const WAIT: Duration = Duration::from_secs(30);

/// The promotion into `reference` that `promotion` names ([`find_promotion`]) and the target's
/// record before it, which a rollback restores.
pub(crate) fn promotion_before<'e>(
    events: &'e [RefEvent],
    reference: &str,
    promotion: &str,
) -> Result<(&'e RefEvent, RefRecord), Diagnostic> {
    let event = find_promotion(events, reference, promotion)?;
    let before = serde_json::from_value(event.body["before"].clone()).map_err(|e| {
        Diagnostic::error(
            codes::STATE_UNAVAILABLE,
            format!("promotion {} has a corrupt `before`: {e}", event.event_id),
        )
    })?;
    Ok((event, before))
}

/// The promotion into `reference` that `promotion` names: an id, a unique prefix of one, or
/// the target hash it started from (Y013 when none or several match).
fn find_promotion<'e>(
    events: &'e [RefEvent],
    reference: &str,
    promotion: &str,
) -> Result<&'e RefEvent, Diagnostic> {
    let matching: Vec<&RefEvent> = events
        .iter()
        .filter(|e| e.kind == "promotion" && e.reference == reference)
        .filter(|e| {
            e.event_id.starts_with(promotion)
                || e.body.get("to_hash_before").and_then(|h| h.as_str()) == Some(promotion)
        })
        .collect();
    match matching.as_slice() {
        [one] => Ok(*one),
        [] => Err(Diagnostic::error(
            codes::UNKNOWN_PROMOTION,
            format!("no promotion into `{reference}` matches `{promotion}`"),
        )
        .with_help("`phlo-transform ref show <ref> --json` lists its promotions")),
        _ => Err(Diagnostic::error(
            codes::UNKNOWN_PROMOTION,
            format!(
                "`{promotion}` matches {} promotions into `{reference}`",
                matching.len()
            ),
        )
        .with_help("pass more of the promotion id")),
    }
}

impl Environments {
    /// `rollback --ref <ref> --to <promotion>`: the pointers (and records) the promotion
    /// replaced, restored. `promotion` is a promotion id, a unique prefix of one, or the
    /// target hash a promotion started from.
    pub async fn rollback_ref(
        &self,
        reference: &str,
        promotion: &str,
    ) -> Result<Rollback, Diagnostic> {
        let backend = self.backend();
        backend.accepts_rollback_of(reference)?;
        let events = self.store.ref_events().await.map_err(state_error)?;
        let (event, before) = promotion_before(&events, reference, promotion)?;
        backend.restore_promoted(reference, event, before).await
    }

    /// `rollback <model> --ref <ref> --to <version>`: the environment reads Delta version
    /// `version` of the model's table (Y014 when the log does not hold it). The model's record
    /// in the environment goes, so the next plan says it must be built to be current again.
    pub async fn rollback_model(
        &self,
        reference: &str,
        model: &str,
        version: i64,
    ) -> Result<Rollback, Diagnostic> {
        self.backend().accepts_model_rollback(model, version)?;
        let current = self.get(reference).await?;
        let Some((id, p)) = current.pointers.iter().find(|(_, p)| p.model_name == model) else {
            return Err(Diagnostic::error(
                codes::NO_MODEL_STATE,
                format!("`{reference}` has no table of model `{model}`"),
            )
            .with_help("`phlo-transform ref show <ref>` lists the models it points at"));
        };
        if p.kind != "table" {
            return Err(Diagnostic::error(
                codes::ROLLBACK_VERSION_MISSING,
                format!("`{model}` is a view: it has no versions to roll back to"),
            )
            .with_help(
                "roll back the environment instead: `rollback --ref <ref> --to <promotion>`",
            ));
        }
        let path = self.warehouse.join(&p.location);
        let Some(identity) = phlo_transform_adapter::pins::commit_identity(&path, version) else {
            return Err(Diagnostic::error(
                codes::ROLLBACK_VERSION_MISSING,
                format!(
                    "`{model}`'s table `{}` has no version {version} (it reads version {})",
                    p.location,
                    p.delta_version
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| "?".into())
                ),
            )
            .with_help("pick a version its Delta log holds"));
        };
        let mut pointers = current.pointers.clone();
        pointers.insert(
            id.clone(),
            Pointer {
                delta_version: Some(version),
                identity: Some(identity),
                ..p.clone()
            },
        );
        self.restore(
            reference,
            pointers,
            Some((model, id.clone())),
            &version.to_string(),
        )
        .await
    }

    /// Swaps `reference` to `pointers` under its writer lease, with its records following
    /// (a model rollback removes the model's record instead), and records the rollback.
    pub(super) async fn restore(
        &self,
        reference: &str,
        pointers: std::collections::BTreeMap<String, Pointer>,
        model: Option<(&str, String)>,
        to: &str,
    ) -> Result<Rollback, Diagnostic> {
        let current = self.get(reference).await?;
        let lease = WriterLease::acquire(self.store.clone(), &current.environment, WAIT).await?;
        let result = async {
            let at = now();
            let mut next = current.clone();
            // The last run's binding stays: it validated the old hash, so the `run` gate
            // reports the environment as advanced since its run.
            next.set_pointers(pointers, &at);
            let records = self
                .store
                .materializations(&current.environment)
                .await
                .map_err(state_error)?;
            let versions = match &model {
                Some((_, id)) => VersionSwap {
                    environment: current.environment.clone(),
                    put: Vec::new(),
                    remove: vec![id.clone()],
                },
                None => VersionSwap {
                    environment: current.environment.clone(),
                    put: next
                        .pointers
                        .values()
                        .map(|p| MaterializedVersion {
                            environment: current.environment.clone(),
                            ..p.record.clone()
                        })
                        .collect(),
                    remove: records
                        .into_keys()
                        .filter(|id| !next.pointers.contains_key(id))
                        .collect(),
                },
            };
            let rollback = Rollback {
                rollback_id: uuid::Uuid::now_v7().simple().to_string(),
                reference: reference.to_string(),
                model: model.as_ref().map(|(m, _)| m.to_string()),
                to: to.to_string(),
                hash_before: current.hash.clone(),
                hash_after: next.hash.clone(),
            };
            let body = serde_json::json!({ "rollback": rollback, "before": current, "at": at });
            let swap = RefSwap {
                writes: vec![RefWrite {
                    name: reference.to_string(),
                    expected: Some(current.hash.clone()),
                    record: Some(next),
                }],
                versions: vec![versions],
                event: Some(RefEvent {
                    event_id: rollback.rollback_id.clone(),
                    kind: "rollback".into(),
                    reference: reference.to_string(),
                    at,
                    body,
                }),
                ..RefSwap::default()
            };
            if !self.store.swap_refs(&swap).await.map_err(state_error)? {
                return Err(stale(&format!(
                    "`{reference}` moved while it was being rolled back; nothing was changed"
                )));
            }
            Ok(rollback)
        }
        .await;
        lease.release().await;
        result
    }
}
