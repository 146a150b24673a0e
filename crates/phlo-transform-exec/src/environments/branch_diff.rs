//! `diff --from <ref> --to <ref>` (SPEC §52): two references compared dataset by dataset.
//! Every model the workspace defines or either reference points at is classified — `added`
//! (only `--to` points at it), `removed` (only `--from`), `changed` (both, at another table,
//! version or identity; on Trino + Nessie, a table whose content Nessie's diff of the two
//! heads lists), `unchanged` (the same table at the same version), `absent` (a workspace
//! model neither holds) — with its row counts on each side and its schema and nullability
//! changes, read as each reference reads it ([`super::branch_sides`]: the Delta tables at the
//! versions the references read, or the Iceberg tables of both branches at their heads). With
//! `--full` each changed model is diffed row by row on its key (`crate::diff`'s keys and
//! `[model."x".diff]` policies, `phlo_transform_diff`'s engine).
//!
//! The report is branch-diff evidence: recorded once in the state store bound to both
//! references' hashes (what the `data_diff` gate reads) and exported as `branch_diff.json`.

use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_diff::{DiffOptions, DiffReport, DiffRequest, SchemaDiff, SideInput, Strategy};
use phlo_transform_state::{EvidenceRecord, Pointer};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

use super::branch_sides::Read;
use super::branches::adapter_error;
use super::{now, state_error, Environments};
use crate::diff::{key_for, policy_for};

/// The kind of the state store's branch-diff evidence records.
pub const BRANCH_DIFF: &str = "branch_diff";

/// A reference at the hash it was read at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefAt {
    #[serde(rename = "ref")]
    pub reference: String,
    pub hash: String,
}

/// How a dataset differs between the two references.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Added,
    Removed,
    Changed,
    Unchanged,
    Absent,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Changed => "changed",
            Status::Unchanged => "unchanged",
            Status::Absent => "absent",
        }
    }
}

/// Where one side reads the dataset.
#[derive(Debug, Serialize)]
pub struct Located {
    /// `table` or `view`.
    pub kind: String,
    /// Relative to the warehouse root.
    pub location: String,
    pub delta_version: Option<i64>,
}

/// Row counts of both sides (`None`: the side has no such dataset, or it is a view).
#[derive(Debug, Serialize)]
pub struct Rows {
    pub from: Option<u64>,
    pub to: Option<u64>,
    pub delta: Option<i64>,
}

/// One dataset of a branch diff.
#[derive(Debug, Serialize)]
pub struct DatasetDiff {
    pub model: String,
    pub status: Status,
    pub from: Option<Located>,
    pub to: Option<Located>,
    pub rows: Rows,
    /// `--to`'s columns against `--from`'s: an added dataset is all added columns, a removed
    /// one all removed columns.
    pub schema: SchemaDiff,
    /// `--full`, on a changed model the workspace defines: the keyed value diff.
    pub data: Option<DiffReport>,
}

/// How many datasets of each status.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
    pub unchanged: usize,
    pub absent: usize,
}

/// A diff policy a changed model violated.
#[derive(Debug, Serialize, Deserialize)]
pub struct Violation {
    pub model: String,
    pub code: String,
    pub message: String,
}

/// The report of `diff --from <ref> --to <ref>`, and the evidence recorded.
#[derive(Debug, Serialize)]
pub struct BranchDiff {
    pub evidence_id: String,
    /// The base side.
    pub from: RefAt,
    /// The candidate side.
    pub to: RefAt,
    /// `--full`: every changed model was diffed row by row.
    pub full: bool,
    pub at: String,
    pub summary: Summary,
    pub datasets: Vec<DatasetDiff>,
    /// No changed model violated its diff policy.
    pub passed: bool,
    pub violations: Vec<Violation>,
    /// Relations that could not be registered, an export that could not be written.
    #[serde(skip)]
    pub warnings: Vec<Diagnostic>,
}

/// A dataset's status from the two pointers; on branches (`changed`: the keys whose content
/// differs between the two heads, from Nessie) a table both point at is changed exactly when
/// Nessie says its content differs.
fn status(
    from: Option<&Pointer>,
    to: Option<&Pointer>,
    changed: Option<&BTreeSet<String>>,
) -> Status {
    match (from, to) {
        (None, None) => Status::Absent,
        (None, Some(_)) => Status::Added,
        (Some(_), None) => Status::Removed,
        (Some(a), Some(b)) => match changed {
            Some(keys) if a.location == b.location => {
                if keys.contains(&a.location) {
                    Status::Changed
                } else {
                    Status::Unchanged
                }
            }
            _ if a.location == b.location
                && a.delta_version == b.delta_version
                && a.identity == b.identity =>
            {
                Status::Unchanged
            }
            _ => Status::Changed,
        },
    }
}

fn located(p: &Pointer) -> Located {
    Located {
        kind: p.kind.clone(),
        location: p.location.clone(),
        delta_version: p.delta_version,
    }
}

impl Environments {
    /// `diff --from <from> --to <to> [--full]`: the report, recorded as branch-diff evidence
    /// and exported. D007 for a reference compared with itself.
    pub async fn branch_diff(
        &self,
        c: &Compilation,
        from: &str,
        to: &str,
        full: bool,
    ) -> Result<BranchDiff, Diagnostic> {
        if from == to {
            return Err(Diagnostic::error(
                codes::BRANCH_DIFF_SELF,
                format!("diff --from {from} --to {to} compares `{from}` with itself"),
            )
            .with_help("compare a candidate with its base: `diff --from main --to <candidate>`"));
        }
        let base = self.get(from).await?;
        let candidate = self.get(to).await?;
        let (base_side, mut warnings) = self.open_side(c, &base).await?;
        let (cand_side, problems) = self.open_side(c, &candidate).await?;
        warnings.extend(problems);
        // On branches Nessie says which tables differ between the two heads.
        let changed = match &self.branches {
            Some(b) => Some(
                b.changed_between((from, &base.hash), (to, &candidate.hash))
                    .await
                    .map_err(adapter_error)?,
            ),
            None => None,
        };

        // Every dataset: the workspace's models and what either side points at, by name.
        let mut models: BTreeMap<String, String> = c
            .models
            .iter()
            .map(|m| (m.name.as_str().to_string(), m.id.clone()))
            .collect();
        for p in [&base, &candidate] {
            for (id, pointer) in &p.pointers {
                models.insert(pointer.model_name.clone(), id.clone());
            }
        }
        let mut datasets = Vec::new();
        let mut summary = Summary::default();
        let mut violations = Vec::new();
        for (name, id) in &models {
            let (b, t) = (base.pointers.get(id), candidate.pointers.get(id));
            let status = status(b, t, changed.as_ref());
            let from_side = match b {
                Some(p) => Some(base_side.read(from, p, None).await?),
                None => None,
            };
            let to_side = match (t, status, &from_side) {
                // The same table at the same version: read once.
                (Some(_), Status::Unchanged, Some(same)) => Some(Read {
                    frame: same.frame.clone(),
                    rows: same.rows,
                    schema: same.schema.clone(),
                    description: same.description.clone(),
                }),
                (Some(p), _, _) => Some(cand_side.read(to, p, None).await?),
                (None, _, _) => None,
            };
            let empty = datafusion::arrow::datatypes::Schema::empty();
            let schema = SchemaDiff::between(
                from_side.as_ref().map_or(&empty, |r| &r.schema),
                to_side.as_ref().map_or(&empty, |r| &r.schema),
            );
            let rows_of = |r: &Option<Read>| r.as_ref().and_then(|r| r.rows);
            let rows = Rows {
                from: rows_of(&from_side),
                to: rows_of(&to_side),
                delta: match (rows_of(&from_side), rows_of(&to_side)) {
                    (Some(a), Some(b)) => Some(b as i64 - a as i64),
                    (None, Some(b)) => Some(b as i64),
                    (Some(a), None) => Some(-(a as i64)),
                    (None, None) => None,
                },
            };
            let data = match (full, status, from_side, to_side, c.model_index(name)) {
                (true, Status::Changed, Some(base_read), Some(cand_read), Some(index)) => {
                    let report = keyed_diff(c, index, name, base_read, cand_read).await?;
                    violations.extend(report.policy.violations.iter().map(|d| Violation {
                        model: name.clone(),
                        code: d.code.to_string(),
                        message: d.message.clone(),
                    }));
                    Some(report)
                }
                _ => None,
            };
            match status {
                Status::Added => summary.added += 1,
                Status::Removed => summary.removed += 1,
                Status::Changed => summary.changed += 1,
                Status::Unchanged => summary.unchanged += 1,
                Status::Absent => summary.absent += 1,
            }
            datasets.push(DatasetDiff {
                model: name.clone(),
                status,
                from: b.map(located),
                to: t.map(located),
                rows,
                schema,
                data,
            });
        }
        let passed = datasets
            .iter()
            .filter_map(|d| d.data.as_ref())
            .all(|r| r.policy.passed);
        let mut report = BranchDiff {
            evidence_id: uuid::Uuid::now_v7().simple().to_string(),
            from: RefAt {
                reference: base.name.clone(),
                hash: base.hash.clone(),
            },
            to: RefAt {
                reference: candidate.name.clone(),
                hash: candidate.hash.clone(),
            },
            full,
            at: now(),
            summary,
            datasets,
            passed,
            violations,
            warnings,
        };
        self.store
            .record_evidence(&EvidenceRecord {
                evidence_id: report.evidence_id.clone(),
                kind: BRANCH_DIFF.to_string(),
                reference: candidate.name.clone(),
                hash: candidate.hash.clone(),
                at: report.at.clone(),
                body: serde_json::to_value(&report).expect("reports serialise"),
            })
            .await
            .map_err(state_error)?;
        if let Err(d) = self.export("branch_diff.json", &report) {
            report.warnings.push(d);
        }
        Ok(report)
    }
}

/// The keyed value diff of changed model `index` between the two sides read: its key and
/// policy as `diff <model>` resolves them, every row compared (the aggregate comparison
/// when it has no key, where row thresholds fail rather than pass unmeasured).
async fn keyed_diff(
    c: &Compilation,
    index: usize,
    model: &str,
    base: Read,
    candidate: Read,
) -> Result<DiffReport, Diagnostic> {
    let key = key_for(c, index, &[]);
    let (options, policy) = policy_for(c, model, DiffOptions::default())?;
    let strategy = (!key.columns.is_empty()).then_some(Strategy::Full);
    phlo_transform_diff::diff(DiffRequest {
        model: model.to_string(),
        base: SideInput {
            description: base.description,
            frame: base.frame,
            not_null: Vec::new(),
        },
        candidate: SideInput {
            description: candidate.description,
            frame: candidate.frame,
            not_null: Vec::new(),
        },
        key,
        strategy,
        options,
        policy,
        output: None,
        pushdown: None,
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pointer(location: &str, version: i64) -> Pointer {
        Pointer {
            model_name: "m".into(),
            kind: "table".into(),
            location: location.into(),
            delta_version: Some(version),
            identity: Some(format!("delta-commit:{location}{version}")),
            built_in: "local".into(),
            record: serde_json::from_value(serde_json::json!({
                "environment": "local", "model_id": "m", "model_name": "m", "version": "v",
                "sql_hash": "", "config_hash": "", "upstream": {}, "sources": {},
                "materialization": "table", "relation": "m", "run_id": "r", "generation": 0,
                "materialized_at": ""
            }))
            .unwrap(),
        }
    }

    #[test]
    fn datasets_are_classified_by_their_pointers() {
        let (a, b) = (pointer("m", 1), pointer(".refs/dev_1/m", 0));
        assert_eq!(status(None, None, None), Status::Absent);
        assert_eq!(status(None, Some(&a), None), Status::Added);
        assert_eq!(status(Some(&a), None, None), Status::Removed);
        assert_eq!(status(Some(&a), Some(&a.clone()), None), Status::Unchanged);
        assert_eq!(status(Some(&a), Some(&b), None), Status::Changed);
        assert_eq!(
            status(Some(&a), Some(&pointer("m", 2)), None),
            Status::Changed
        );
    }

    /// On branches a table both point at is changed exactly when Nessie lists its key.
    #[test]
    fn on_branches_nessie_decides_changed() {
        let (a, b) = (pointer("s.m", 1), pointer("s.m", 2));
        let listed: BTreeSet<String> = ["s.m".to_string()].into();
        let none = BTreeSet::new();
        assert_eq!(status(Some(&a), Some(&a), Some(&listed)), Status::Changed);
        assert_eq!(status(Some(&a), Some(&b), Some(&none)), Status::Unchanged);
        assert_eq!(status(None, Some(&a), Some(&none)), Status::Added);
    }
}
