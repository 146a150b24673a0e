//! `promote <candidate> --to <target>` (SPEC §46–47): the named gates, then the publish — the
//! target's pointers replaced by the candidate's, with the target environment's records, in
//! one state transaction under compare-and-swap on both hashes, and a PromotionRecord.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{
    CreatedFrom, MaterializedVersion, Pointer, RefEvent, RefRecord, RefSwap, RefWrite, VersionSwap,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{now, stale, state_error, Environments};
use crate::WriterLease;

pub use super::gate::Gate;

/// How `promote` was asked.
#[derive(Clone, Copy, Debug, Default)]
pub struct PromoteOptions {
    /// `--check`: evaluate the gates, publish nothing.
    pub check: bool,
    /// `--require-diff`: the `data_diff` gate needs a current `--full` branch diff.
    pub require_diff: bool,
}

/// What `promote` did (the `--json` document).
#[derive(Clone, Debug, Serialize)]
pub struct Promotion {
    pub promoted: bool,
    pub from: String,
    pub to: String,
    /// The candidate's hash the gates evaluated.
    pub from_hash: String,
    /// The target's hash the gates evaluated.
    pub to_hash: String,
    /// `--check`: evaluated only.
    pub check: bool,
    /// `--require-diff`: a current `--full` branch diff was required.
    pub require_diff: bool,
    pub gates: Vec<Gate>,
    /// The PromotionRecord's id, once published.
    pub promotion_id: Option<String>,
}

impl Promotion {
    pub fn gates_passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }

    /// The error of a promotion a gate refused (nothing published), naming the gates that
    /// failed; `None` when every gate passed.
    pub fn blocked(&self) -> Option<Diagnostic> {
        let failed: Vec<&str> = self
            .gates
            .iter()
            .filter(|g| !g.passed)
            .map(|g| g.name)
            .collect();
        if failed.is_empty() {
            return None;
        }
        Some(
            Diagnostic::error(
                codes::PROMOTION_BLOCKED,
                format!(
                    "promotion of `{}` into `{}` blocked by gate(s): {}",
                    self.from,
                    self.to,
                    failed.join(", ")
                ),
            )
            .with_help("read each failed gate's detail above"),
        )
    }
}

/// How long a promotion waits for a run of the target to finish.
const TARGET_WAIT: Duration = Duration::from_secs(30);

impl Environments {
    /// Evaluates the gates of promoting `from` into `to`; unless `check`, publishes when they
    /// all pass, through the workspace's
    /// [`EnvironmentBackend`](super::backend::EnvironmentBackend). A refusal because a
    /// reference moved after the gates were evaluated is an error (Y012): nothing was written.
    pub async fn promote(
        &self,
        from: &str,
        to: &str,
        options: PromoteOptions,
    ) -> Result<Promotion, Diagnostic> {
        if from == to {
            return Err(Diagnostic::error(
                phlo_transform_core::diagnostic::codes::PROMOTION_BLOCKED,
                format!("cannot promote `{from}` into itself"),
            )
            .with_help("promote a candidate into its base: `promote <candidate> --to main`"));
        }
        let backend = self.backend();
        backend.accepts_promotion_into(to)?;
        let candidate = self.get(from).await?;
        let target = self.get(to).await?;
        let mut gates = self.run_gates(&candidate).await?;
        gates.push(schema_gate(&candidate, &target));
        gates.push(
            self.data_diff_gate(&candidate, &target, options.require_diff)
                .await?,
        );
        gates.push(self.lineage_diff_gate(&candidate).await?);
        gates.extend(backend.base_gates(&candidate, &target).await?);
        let mut promotion = Promotion {
            promoted: false,
            from: from.to_string(),
            to: to.to_string(),
            from_hash: candidate.hash.clone(),
            to_hash: target.hash.clone(),
            check: options.check,
            require_diff: options.require_diff,
            gates,
            promotion_id: None,
        };
        if options.check || !promotion.gates_passed() {
            return Ok(promotion);
        }
        // No run of the target writes while its pointers are swapped.
        let lease =
            WriterLease::acquire(self.store.clone(), &target.environment, TARGET_WAIT).await?;
        let published = backend.publish(&candidate, &target, &promotion).await;
        lease.release().await;
        promotion.promotion_id = Some(published?);
        promotion.promoted = true;
        Ok(promotion)
    }

    /// `run`, `tests`, `blocked`: from the candidate's last run, which must be bound to the
    /// candidate's current hash (a candidate that advanced since its run is unaudited).
    pub(super) async fn run_gates(&self, candidate: &RefRecord) -> Result<Vec<Gate>, Diagnostic> {
        let Some(bound) = &candidate.run else {
            let none = format!(
                "`{}` has no run: `run --ref {}` first",
                candidate.name, candidate.name
            );
            return Ok(vec![
                Gate::new("run", false, none),
                Gate::new("tests", false, "no run, so no test results"),
                Gate::new("blocked", false, "no run, so no model results"),
            ]);
        };
        let run = self
            .store
            .runs_with_prefix(&bound.run_id, 1)
            .await
            .map_err(state_error)?
            .into_iter()
            .next();
        let nodes = self
            .store
            .run_nodes(&bound.run_id)
            .await
            .map_err(state_error)?;
        let run_gate = match &run {
            _ if bound.hash != candidate.hash => Gate::new(
                "run",
                false,
                format!(
                    "run {} validated hash {}, but `{}` is at {} now: run it again",
                    bound.run_id, bound.hash, candidate.name, candidate.hash
                ),
            ),
            Some(r) if r.status == "passed" => Gate::new(
                "run",
                true,
                format!("run {} passed at hash {}", r.run_id, bound.hash),
            ),
            Some(r) => Gate::new("run", false, format!("run {} ended {}", r.run_id, r.status)),
            None => Gate::new(
                "run",
                false,
                format!("run {} is not recorded", bound.run_id),
            ),
        };
        let failed: Vec<&str> = nodes
            .iter()
            .filter(|n| n.kind == "test" && matches!(n.status.as_str(), "failed" | "error"))
            .map(|n| n.node.as_str())
            .collect();
        let tests_run = nodes.iter().filter(|n| n.kind == "test").count();
        let tests = if failed.is_empty() {
            Gate::new("tests", true, format!("{tests_run} test(s), none failed"))
        } else {
            Gate::new("tests", false, format!("failed: {}", failed.join(", ")))
        };
        let stuck: Vec<String> = nodes
            .iter()
            .filter(|n| matches!(n.status.as_str(), "blocked" | "cancelled"))
            .map(|n| format!("{} ({})", n.node, n.status))
            .collect();
        let blocked = if stuck.is_empty() {
            Gate::new("blocked", true, "no blocked or cancelled model or test")
        } else {
            Gate::new("blocked", false, stuck.join(", "))
        };
        Ok(vec![run_gate, tests, blocked])
    }

    /// The publish of pinned environments: one transaction that replaces the target's
    /// pointers and records, asserts the candidate is still at the audited hash, and stores
    /// the PromotionRecord.
    pub(super) async fn publish_pins(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
        promotion: &Promotion,
    ) -> Result<String, Diagnostic> {
        let at = now();
        let mut next = target.clone();
        next.set_pointers(candidate.pointers.clone(), &at);
        next.run = None;
        let current = self
            .store
            .materializations(&target.environment)
            .await
            .map_err(state_error)?;
        let put: Vec<MaterializedVersion> = candidate
            .pointers
            .values()
            .map(|p| MaterializedVersion {
                environment: target.environment.clone(),
                ..p.record.clone()
            })
            .collect();
        let remove = current
            .into_keys()
            .filter(|id| !candidate.pointers.contains_key(id))
            .collect();
        let event = promotion_event(candidate, target, promotion, &next.hash, None, at);
        let promotion_id = event.event_id.clone();
        let swap = RefSwap {
            writes: vec![RefWrite {
                name: target.name.clone(),
                expected: Some(target.hash.clone()),
                record: Some(next),
            }],
            unchanged: vec![(candidate.name.clone(), candidate.hash.clone())],
            versions: vec![VersionSwap {
                environment: target.environment.clone(),
                put,
                remove,
            }],
            event: Some(event),
        };
        // `main` unpinned has no row yet: its first record is written here.
        let swap = if self
            .store
            .refs()
            .await
            .map_err(state_error)?
            .iter()
            .any(|r| r.name == target.name)
        {
            swap
        } else {
            let mut swap = swap;
            swap.writes[0].expected = None;
            swap
        };
        if !self.store.swap_refs(&swap).await.map_err(state_error)? {
            return Err(stale(&format!(
                "refused as stale: `{}` or `{}` moved after the gates were evaluated (at {} → {}); nothing was published",
                target.name, candidate.name, candidate.hash, target.hash
            )));
        }
        Ok(promotion_id)
    }
}

/// The PromotionRecord of `promotion` published at `at`: the state event (its id the
/// promotion's) with the hashes, the gates and the target as it was before (what a rollback
/// restores); `place` names where the target lives when there is more to say than its name
/// (`nessie_branch`).
pub(super) fn promotion_event(
    candidate: &RefRecord,
    target: &RefRecord,
    promotion: &Promotion,
    to_hash_after: &str,
    place: Option<(&str, String)>,
    at: String,
) -> RefEvent {
    let promotion_id = uuid::Uuid::now_v7().simple().to_string();
    let mut body = serde_json::json!({
        "promotion_id": promotion_id,
        "from": candidate.name,
        "to": target.name,
        "from_hash": candidate.hash,
        "to_hash_before": target.hash,
        "to_hash_after": to_hash_after,
    });
    let fields = body.as_object_mut().expect("a JSON object");
    if let Some((key, value)) = place {
        fields.insert(key.into(), value.into());
    }
    let run_id = candidate.run.as_ref().map(|r| r.run_id.clone());
    fields.insert("run_id".into(), run_id.into());
    fields.insert("gates".into(), serde_json::json!(promotion.gates));
    fields.insert("before".into(), serde_json::json!(target));
    fields.insert("at".into(), at.clone().into());
    RefEvent {
        event_id: promotion_id,
        kind: "promotion".into(),
        reference: target.name.clone(),
        at,
        body,
    }
}

/// `schema`: every model whose pointer differs keeps the target's columns and types (an added
/// column is fine); unknown columns fail closed.
pub(super) fn schema_gate(candidate: &RefRecord, target: &RefRecord) -> Gate {
    let mut breaks = Vec::new();
    for (id, p) in &candidate.pointers {
        let Some(old) = target.pointers.get(id) else {
            continue;
        };
        if same_place(p, old) {
            continue;
        }
        let (Some(new_cols), Some(old_cols)) =
            (&p.record.output_columns, &old.record.output_columns)
        else {
            breaks.push(format!("{}: columns not recorded", p.model_name));
            continue;
        };
        for c in old_cols {
            match new_cols.iter().find(|n| n.name == c.name) {
                None => breaks.push(format!("{}: column {} removed", p.model_name, c.name)),
                Some(n) if n.data_type != c.data_type => breaks.push(format!(
                    "{}: column {} {} → {}",
                    p.model_name, c.name, c.data_type, n.data_type
                )),
                Some(_) => {}
            }
        }
    }
    for (id, old) in &target.pointers {
        if !candidate.pointers.contains_key(id) {
            breaks.push(format!("{}: removed", old.model_name));
        }
    }
    if breaks.is_empty() {
        Gate::new("schema", true, "no column removed or retyped")
    } else {
        Gate::new("schema", false, format!("breaking: {}", breaks.join("; ")))
    }
}

fn same_place(a: &Pointer, b: &Pointer) -> bool {
    a.location == b.location && a.delta_version == b.delta_version && a.identity == b.identity
}

/// The candidate's provenance, which the `base` and `conflicts` gates start from: `Err` holds
/// both gates failed when the candidate has none or was created from another reference.
pub(super) fn provenance<'a>(
    candidate: &'a RefRecord,
    target: &RefRecord,
) -> Result<&'a CreatedFrom, (Gate, Gate)> {
    let Some(from) = &candidate.created_from else {
        return Err((
            Gate::new(
                "base",
                false,
                format!("`{}` has no recorded provenance", candidate.name),
            ),
            Gate::new("conflicts", false, "no recorded base to compare against"),
        ));
    };
    if from.reference != target.name {
        let why = format!(
            "`{}` was created from `{}`, not `{}`",
            candidate.name, from.reference, target.name
        );
        return Err((
            Gate::new("base", false, why.clone()),
            Gate::new("conflicts", false, why),
        ));
    }
    Ok(from)
}

/// `base`: the target is still at the hash the candidate was created from; `place` says what
/// the target is, when there is more to say than its name (a Nessie branch).
pub(super) fn base_gate(
    candidate: &RefRecord,
    target: &RefRecord,
    from: &CreatedFrom,
    place: &str,
) -> Gate {
    if from.hash == target.hash {
        Gate::new(
            "base",
            true,
            format!("`{}`{place} is still at {}", target.name, target.hash),
        )
    } else {
        Gate::new(
            "base",
            false,
            format!(
                "`{}` moved from {} to {} since `{}` was created",
                target.name, from.hash, target.hash, candidate.name
            ),
        )
    }
}

/// `base` (the target is still where the candidate was created from) and `conflicts` (no
/// model changed on both sides since then), from the pointers alone.
pub(super) fn base_gates(candidate: &RefRecord, target: &RefRecord) -> (Gate, Gate) {
    let from = match provenance(candidate, target) {
        Ok(from) => from,
        Err(failed) => return failed,
    };
    let base = base_gate(candidate, target, from, "");
    let changed = |side: &BTreeMap<String, Pointer>| -> BTreeSet<String> {
        let ids: BTreeSet<&String> = side.keys().chain(from.pointers.keys()).collect();
        ids.into_iter()
            .filter(|id| match (side.get(*id), from.pointers.get(*id)) {
                (Some(a), Some(b)) => !same_place(a, b),
                (None, None) => false,
                _ => true,
            })
            .map(|id| {
                side.get(id)
                    .or(from.pointers.get(id))
                    .map(|p| p.model_name.clone())
                    .unwrap_or_else(|| id.clone())
            })
            .collect()
    };
    let both: Vec<String> = changed(&candidate.pointers)
        .intersection(&changed(&target.pointers))
        .cloned()
        .collect();
    let conflicts = if both.is_empty() {
        Gate::new("conflicts", true, "no model changed on both sides")
    } else {
        Gate::new(
            "conflicts",
            false,
            format!("changed on both sides: {}", both.join(", ")),
        )
    };
    (base, conflicts)
}
