//! The `data_diff` promotion gate (SPEC §47, §52–54): it reads the branch-diff evidence
//! recorded for this target → candidate pair (`diff --from <target> --to <candidate>`). Only
//! evidence bound to both references' current hashes counts; a diff of other hashes is
//! stale, and a diff of the pair the other way round, of another pair or of a reference with
//! itself is no evidence for it. A current diff whose changed models violate their
//! `[model."x".diff]` policies fails the gate. With `--require-diff` a current `--full` diff
//! must exist; without it, no diff (or a stale or partial one) passes with a detail saying
//! so.

use phlo_transform_core::Diagnostic;
use phlo_transform_state::RefRecord;
use serde::Deserialize;

use super::branch_diff::{RefAt, Violation, BRANCH_DIFF};
use super::gate::Gate;
use super::{state_error, Environments};

/// What the gate reads of a recorded branch diff.
#[derive(Deserialize)]
struct Recorded {
    evidence_id: String,
    from: RefAt,
    to: RefAt,
    full: bool,
    passed: bool,
    violations: Vec<Violation>,
}

const NAME: &str = "data_diff";

impl Environments {
    /// The `data_diff` gate of promoting `candidate` into `target`.
    pub(super) async fn data_diff_gate(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
        require: bool,
    ) -> Result<Gate, Diagnostic> {
        let recorded: Vec<Recorded> = self
            .store
            .evidence(BRANCH_DIFF, &candidate.name)
            .await
            .map_err(state_error)?
            .into_iter()
            .filter_map(|e| serde_json::from_value::<Recorded>(e.body).ok())
            .filter(|r| r.from.reference == target.name && r.to.reference == candidate.name)
            .collect();
        let current = recorded
            .iter()
            .find(|r| r.from.hash == target.hash && r.to.hash == candidate.hash);
        Ok(verdict(
            candidate,
            target,
            current,
            recorded.first(),
            require,
        ))
    }
}

/// The gate from the most recent diff bound to both hashes (`current`) and the most recent
/// diff of the pair at all (`latest`).
fn verdict(
    candidate: &RefRecord,
    target: &RefRecord,
    current: Option<&Recorded>,
    latest: Option<&Recorded>,
    require: bool,
) -> Gate {
    let command = format!(
        "`diff --from {} --to {} --full`",
        target.name, candidate.name
    );
    let pair = format!(
        "`{}`@{} → `{}`@{}",
        target.name, target.hash, candidate.name, candidate.hash
    );
    let unmet = |why: String| {
        if require {
            Gate::new(
                NAME,
                false,
                format!("{why}: run {command} (--require-diff)"),
            )
        } else {
            Gate::new(
                NAME,
                true,
                format!("not required (no --require-diff); {why}"),
            )
        }
    };
    match current {
        Some(r) if !r.passed => {
            let broken: Vec<String> = r
                .violations
                .iter()
                .map(|v| format!("{} {}: {}", v.model, v.code, v.message))
                .collect();
            Gate::new(
                NAME,
                false,
                format!(
                    "branch diff {} of {pair} violates diff policies: {}",
                    r.evidence_id,
                    broken.join("; ")
                ),
            )
        }
        Some(r) if r.full => Gate::new(
            NAME,
            true,
            format!(
                "branch diff {} (--full) of {pair}: no diff policy violated",
                r.evidence_id
            ),
        ),
        Some(r) => unmet(format!(
            "branch diff {} of {pair} compared no rows (not --full)",
            r.evidence_id
        )),
        None => match latest {
            Some(r) => unmet(format!(
                "branch diff {} is stale: it compared `{}`@{} → `{}`@{}, now {pair}",
                r.evidence_id, r.from.reference, r.from.hash, r.to.reference, r.to.hash
            )),
            None => unmet(format!("no branch diff of {pair} recorded")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn reference(name: &str, hash: &str) -> RefRecord {
        RefRecord {
            name: name.into(),
            hash: hash.into(),
            environment: name.into(),
            pointers: BTreeMap::new(),
            created_from: None,
            created_at: String::new(),
            updated_at: String::new(),
            run: None,
        }
    }

    fn diff(from: &str, to: &str, full: bool, passed: bool) -> Recorded {
        Recorded {
            evidence_id: "e1".into(),
            from: RefAt {
                reference: "main".into(),
                hash: from.into(),
            },
            to: RefAt {
                reference: "dev".into(),
                hash: to.into(),
            },
            full,
            passed,
            violations: if passed {
                Vec::new()
            } else {
                vec![Violation {
                    model: "assay.results".into(),
                    code: "D010".into(),
                    message: "2 rows removed".into(),
                }]
            },
        }
    }

    #[test]
    fn only_a_current_full_passing_diff_satisfies_require_diff() {
        let (dev, main) = (reference("dev", "c1"), reference("main", "m1"));
        let gate = |current: Option<&Recorded>, latest: Option<&Recorded>, require| {
            let g = verdict(&dev, &main, current, latest, require);
            (g.passed, g.detail)
        };
        let good = diff("m1", "c1", true, true);
        let stale = diff("m1", "c0", true, true);
        let partial = diff("m1", "c1", false, true);
        let violated = diff("m1", "c1", true, false);
        assert!(gate(Some(&good), Some(&good), true).0);
        let (passed, detail) = gate(None, None, true);
        assert!(!passed && detail.contains("no branch diff"), "{detail}");
        let (passed, detail) = gate(None, Some(&stale), true);
        assert!(!passed && detail.contains("stale"), "{detail}");
        assert!(!gate(Some(&partial), Some(&partial), true).0);
        let (passed, detail) = gate(Some(&violated), Some(&violated), false);
        assert!(!passed && detail.contains("D010"), "{detail}");
        // Not required: no diff, a stale or a partial one pass, and say so.
        for (current, latest) in [(None, None), (None, Some(&stale)), (Some(&partial), None)] {
            let (passed, detail) = gate(current, latest, false);
            assert!(passed && detail.starts_with("not required"), "{detail}");
        }
    }
}
