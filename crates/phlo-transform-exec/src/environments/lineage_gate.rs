//! Lineage-diff evidence and the `lineage_diff` promotion gate (SPEC §55, §85). `lineage
//! --diff <git-ref> --ref <candidate>` records what the work tree changes in column lineage
//! against the Git ref, bound to the candidate's current hash and to the lineage it
//! compared (a fingerprint of the models' versions, which determine their lineage). At
//! promotion only evidence bound to the candidate's current hash counts: it fails the gate
//! when a removal orphans consumers (a reader of a removed model, source or column); without
//! current evidence the gate passes and says that none was recorded.

use phlo_transform_compiler::lineage::Orphaned;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::git_tree::GitBase;
use phlo_transform_state::{EvidenceRecord, RefRecord};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::gate::Gate;
use super::{now, state_error, Environments};

/// The kind of the state store's lineage-diff evidence records.
pub const LINEAGE_DIFF: &str = "lineage_diff";

const NAME: &str = "lineage_diff";

/// A recorded lineage diff: what the gate reads and `lineage --diff --ref` reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineageEvidence {
    pub evidence_id: String,
    #[serde(rename = "ref")]
    pub reference: String,
    /// The candidate's hash the record is bound to.
    pub hash: String,
    /// The Git commit compared against (merge-base of the ref and HEAD) and HEAD.
    pub base_commit: String,
    pub head: String,
    /// sha256 over the compared models' names and versions.
    pub lineage_fingerprint: String,
    /// `removed#column read by consumer, …` for every orphaning removal.
    pub orphaned: Vec<String>,
    pub at: String,
}

/// The fingerprint of `c`'s lineage: its models' versions determine it.
fn lineage_fingerprint(c: &Compilation) -> String {
    let mut versions: Vec<(&str, &str)> = c
        .models
        .iter()
        .map(|m| {
            let version = m.version.as_ref().map_or("", |v| v.version.as_str());
            (m.name.as_str(), version)
        })
        .collect();
    versions.sort_unstable();
    let mut h = Sha256::new();
    for (name, version) in versions {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(version.as_bytes());
        h.update([0]);
    }
    format!("{:x}", h.finalize())
}

fn orphaning(orphaned: &[Orphaned]) -> Vec<String> {
    orphaned
        .iter()
        .filter(|o| !o.consumers.is_empty())
        .map(|o| {
            let readers: Vec<&str> = o.consumers.iter().map(|c| c.id.as_str()).collect();
            format!(
                "{} ({}) read by {}",
                o.removed,
                o.change,
                readers.join(", ")
            )
        })
        .collect()
}

impl Environments {
    /// Records the lineage diff of `c` against `base` as evidence for candidate `name` at its
    /// current hash.
    pub async fn record_lineage_diff(
        &self,
        name: &str,
        c: &Compilation,
        base: &GitBase,
        orphaned: &[Orphaned],
    ) -> Result<LineageEvidence, Diagnostic> {
        let candidate = self.get(name).await?;
        let evidence = LineageEvidence {
            evidence_id: uuid::Uuid::now_v7().simple().to_string(),
            reference: candidate.name.clone(),
            hash: candidate.hash.clone(),
            base_commit: base.commit.clone(),
            head: base.head.clone(),
            lineage_fingerprint: lineage_fingerprint(c),
            orphaned: orphaning(orphaned),
            at: now(),
        };
        self.store
            .record_evidence(&EvidenceRecord {
                evidence_id: evidence.evidence_id.clone(),
                kind: LINEAGE_DIFF.to_string(),
                reference: candidate.name.clone(),
                hash: candidate.hash.clone(),
                at: evidence.at.clone(),
                body: serde_json::to_value(&evidence).expect("evidence serialises"),
            })
            .await
            .map_err(state_error)?;
        Ok(evidence)
    }

    /// The `lineage_diff` gate of promoting `candidate`.
    pub(super) async fn lineage_diff_gate(
        &self,
        candidate: &RefRecord,
    ) -> Result<Gate, Diagnostic> {
        let recorded: Vec<LineageEvidence> = self
            .store
            .evidence(LINEAGE_DIFF, &candidate.name)
            .await
            .map_err(state_error)?
            .into_iter()
            .filter_map(|e| serde_json::from_value(e.body).ok())
            .collect();
        Ok(verdict(candidate, &recorded))
    }
}

/// The gate from the newest evidence bound to the candidate's hash; `recorded` newest first.
fn verdict(candidate: &RefRecord, recorded: &[LineageEvidence]) -> Gate {
    let at = format!("`{}`@{}", candidate.name, candidate.hash);
    match recorded.iter().find(|e| e.hash == candidate.hash) {
        Some(e) if !e.orphaned.is_empty() => Gate::new(
            NAME,
            false,
            format!(
                "lineage diff {} of {at} against {} orphans consumers: {}",
                e.evidence_id,
                short(&e.base_commit),
                e.orphaned.join("; ")
            ),
        ),
        Some(e) => Gate::new(
            NAME,
            true,
            format!(
                "lineage diff {} of {at} against {}: no consumer orphaned",
                e.evidence_id,
                short(&e.base_commit)
            ),
        ),
        None => {
            let why = match recorded.first() {
                Some(e) => format!(
                    "lineage diff {} is stale: it was of {}",
                    e.evidence_id, e.hash
                ),
                None => format!("no lineage diff of {at} recorded"),
            };
            Gate::new(
                NAME,
                true,
                format!(
                    "not recorded; {why} (`lineage --diff <git-ref> --ref {}`)",
                    candidate.name
                ),
            )
        }
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(hash: &str) -> RefRecord {
        RefRecord {
            name: "dev".into(),
            hash: hash.into(),
            environment: "dev".into(),
            pointers: Default::default(),
            created_from: None,
            created_at: String::new(),
            updated_at: String::new(),
            run: None,
        }
    }

    fn evidence(id: &str, hash: &str, orphaned: &[&str]) -> LineageEvidence {
        LineageEvidence {
            evidence_id: id.into(),
            reference: "dev".into(),
            hash: hash.into(),
            base_commit: "0123456789abcdef".into(),
            head: "fedcba9876543210".into(),
            lineage_fingerprint: "f".into(),
            orphaned: orphaned.iter().map(|s| s.to_string()).collect(),
            at: "2026-12-07T00:00:00Z".into(),
        }
    }

    #[test]
    fn only_evidence_of_the_current_hash_decides() {
        let orphaning = evidence(
            "e2",
            "h2",
            &["dataset://shop.orders#amount (removed) read by dataset://shop.report#total"],
        );
        let clean = evidence("e1", "h1", &[]);
        let gate = verdict(&candidate("h2"), &[orphaning.clone(), clean.clone()]);
        assert!(!gate.passed, "{}", gate.detail);
        assert!(gate.detail.contains("shop.report"), "{}", gate.detail);
        let gate = verdict(&candidate("h1"), &[orphaning.clone(), clean]);
        assert!(
            gate.passed && gate.detail.contains("no consumer orphaned"),
            "{}",
            gate.detail
        );
        let gate = verdict(&candidate("h3"), &[orphaning]);
        assert!(
            gate.passed && gate.detail.contains("stale"),
            "{}",
            gate.detail
        );
        let gate = verdict(&candidate("h3"), &[]);
        assert!(
            gate.passed && gate.detail.contains("no lineage diff"),
            "{}",
            gate.detail
        );
    }
}
