//! Diff policies (SPEC §54): `[model."x".diff]` thresholds, checked against a report.
//!
//! Row thresholds need keyed, exact coverage. When the report did not measure rows exactly
//! (a keyless model, the aggregate or sampled strategy, rows under duplicated keys) a
//! threshold fails with D013 rather than passing on numbers nobody measured.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use std::collections::BTreeMap;

use crate::keyed::{Duplicates, Records};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiffPolicy {
    pub max_removed_rows: Option<u64>,
    pub max_added_rows: Option<u64>,
    /// Largest allowed `(added + removed + modified) / base rows`.
    pub max_changed_fraction: Option<f64>,
    /// Largest allowed number of changed values, per column.
    pub max_changed_values: BTreeMap<String, u64>,
}

impl DiffPolicy {
    pub fn is_empty(&self) -> bool {
        self == &DiffPolicy::default()
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PolicyResult {
    pub passed: bool,
    pub violations: Vec<Diagnostic>,
}

/// What a policy is checked against.
pub struct Measured<'a> {
    pub base_rows: u64,
    /// `None`: rows not measured exactly, with the reason.
    pub records: Result<&'a Records, &'a str>,
    pub duplicates: Option<&'a Duplicates>,
    pub changed_values: &'a [(String, u64)],
}

pub fn evaluate(policy: &DiffPolicy, m: &Measured<'_>, model: &str) -> PolicyResult {
    let mut violations = Vec::new();
    let setting = |name: &str| format!("[model.\"{model}\".diff] {name}");
    let unmeasured_reason = match (&m.records, m.duplicates) {
        (Err(reason), _) => Some(reason.to_string()),
        (Ok(_), Some(d)) if d.any() => Some(format!(
            "{} base and {} candidate rows share duplicated keys and were not compared",
            d.base.rows, d.candidate.rows
        )),
        _ => None,
    };
    let thresholds = [
        ("max_removed_rows", policy.max_removed_rows.is_some()),
        ("max_added_rows", policy.max_added_rows.is_some()),
        (
            "max_changed_fraction",
            policy.max_changed_fraction.is_some(),
        ),
    ];
    let column_thresholds = policy
        .max_changed_values
        .keys()
        .map(|c| format!("columns.{c}.max_changed_values"));
    if let Some(reason) = &unmeasured_reason {
        let names = thresholds
            .iter()
            .filter(|(_, set)| *set)
            .map(|(n, _)| n.to_string())
            .chain(column_thresholds);
        for name in names {
            violations.push(
                Diagnostic::error(
                    codes::DIFF_UNMEASURED,
                    format!("{} cannot be checked: {reason}", setting(&name)),
                )
                .with_help("diff with a key (--key or @key) and --full so every row is measured"),
            );
        }
    }
    if let (Ok(r), None) = (&m.records, &unmeasured_reason) {
        if let Some(max) = policy.max_removed_rows.filter(|max| r.removed > *max) {
            violations.push(
                Diagnostic::error(
                    codes::DIFF_TOO_MANY_REMOVED,
                    format!(
                        "{} removed rows, more than {} = {max}",
                        r.removed,
                        setting("max_removed_rows")
                    ),
                )
                .with_help(
                    "the samples list removed keys; raise the threshold if the removal is intended",
                ),
            );
        }
        if let Some(max) = policy.max_added_rows.filter(|max| r.added > *max) {
            violations.push(
                Diagnostic::error(
                    codes::DIFF_TOO_MANY_ADDED,
                    format!(
                        "{} added rows, more than {} = {max}",
                        r.added,
                        setting("max_added_rows")
                    ),
                )
                .with_help(
                    "the samples list added keys; raise the threshold if the addition is intended",
                ),
            );
        }
        if let Some(max) = policy.max_changed_fraction {
            let changed = r.added + r.removed + r.modified;
            let fraction = changed as f64 / m.base_rows.max(1) as f64;
            if fraction > max {
                violations.push(
                    Diagnostic::error(
                        codes::DIFF_TOO_MANY_CHANGED,
                        format!(
                            "{changed} of {} base rows changed ({:.4}), more than {} = {max}",
                            m.base_rows,
                            fraction,
                            setting("max_changed_fraction")
                        ),
                    )
                    .with_help("changed = added + removed + modified, over the base side's rows"),
                );
            }
        }
        for (column, max) in &policy.max_changed_values {
            let n = m
                .changed_values
                .iter()
                .find(|(c, _)| c == column)
                .map_or(0, |(_, n)| *n);
            if n > *max {
                violations.push(
                    Diagnostic::error(
                        codes::DIFF_COLUMN_CHANGED,
                        format!(
                            "column `{column}` changed {n} values, more than {} = {max}",
                            setting(&format!("columns.{column}.max_changed_values"))
                        ),
                    )
                    .with_help("the modified samples show the changed values"),
                );
            }
        }
    }
    PolicyResult {
        passed: violations.is_empty(),
        violations,
    }
}
