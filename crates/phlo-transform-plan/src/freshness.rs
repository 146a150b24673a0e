//! Source freshness in plans (SPEC §34): each source with a requirement gets its age (now
//! minus the latest `timestamp_column` value the engine reads, or without a column the time of
//! the source's last commit), the requirement and a status.
//! Under `freshness_policy = "block"` the models reading a STALE (or unmeasurable) source are
//! BLOCKED, and so is everything planned downstream of them.

use phlo_transform_project::freshness::{format_age, FreshnessPolicy};
use phlo_transform_project::SourceDecl;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum FreshnessStatus {
    Fresh,
    Stale,
    /// The age could not be measured (no data, no rows, unreadable column).
    Unknown,
}

impl FreshnessStatus {
    /// `FRESH`, `STALE`, `UNKNOWN`, as JSON and the plan print it.
    pub fn label(self) -> &'static str {
        match self {
            FreshnessStatus::Fresh => "FRESH",
            FreshnessStatus::Stale => "STALE",
            FreshnessStatus::Unknown => "UNKNOWN",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFreshness {
    pub source: String,
    /// The column measured; `None`: the source's last commit (an Iceberg snapshot's time).
    pub timestamp_column: Option<String>,
    /// As declared (`6h`).
    pub required: String,
    pub required_seconds: u64,
    /// The latest timestamp found (RFC 3339, UTC).
    pub latest: Option<String>,
    pub age_seconds: Option<u64>,
    pub status: FreshnessStatus,
    pub policy: FreshnessPolicy,
    /// Why the status is UNKNOWN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl SourceFreshness {
    /// Does this source block its readers?
    pub fn blocks(&self) -> bool {
        self.policy == FreshnessPolicy::Block && self.status != FreshnessStatus::Fresh
    }

    /// `age 7h 13m, required < 6h: STALE`.
    pub fn describe(&self) -> String {
        let age = match self.age_seconds {
            Some(a) => format!("age {}", format_age(a)),
            None => format!(
                "age unknown ({})",
                self.reason.as_deref().unwrap_or("not measured")
            ),
        };
        format!(
            "{age}, required < {}: {}",
            self.required,
            self.status.label()
        )
    }
}

/// The freshness of `source` given the latest timestamp the engine found (microseconds since
/// the epoch, UTC; `Ok(None)`: no rows) at `now`. `None` when the source has no requirement.
pub fn evaluate(
    source: &SourceDecl,
    latest: Result<Option<i64>, String>,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<SourceFreshness> {
    let f = source.freshness.as_ref()?;
    let (latest, age, status, reason) = match latest {
        Ok(Some(micros)) => {
            let at = chrono::DateTime::from_timestamp_micros(micros);
            let age = at.map(|t| (now - t).num_seconds().max(0) as u64);
            let status = match age {
                Some(a) if a <= f.max_age_seconds => FreshnessStatus::Fresh,
                Some(_) => FreshnessStatus::Stale,
                None => FreshnessStatus::Unknown,
            };
            (
                at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                age,
                status,
                None,
            )
        }
        Ok(None) => (
            None,
            None,
            FreshnessStatus::Unknown,
            Some(match &f.timestamp_column {
                Some(column) => format!("`{column}` has no values"),
                None => "no commit time is known for it (Trino reads an Iceberg table's snapshot time; elsewhere declare timestamp_column)".to_string(),
            }),
        ),
        Err(e) => (None, None, FreshnessStatus::Unknown, Some(e)),
    };
    Some(SourceFreshness {
        source: source.name.clone(),
        timestamp_column: f.timestamp_column.clone(),
        required: f.max_age.clone(),
        required_seconds: f.max_age_seconds,
        latest,
        age_seconds: age,
        status,
        policy: f.policy,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use phlo_transform_project::freshness::Freshness;

    fn source(policy: &str) -> SourceDecl {
        SourceDecl {
            name: "lims.samples".into(),
            location: String::new(),
            path: Default::default(),
            format: phlo_transform_project::SourceFormat::Declared,
            origin: phlo_transform_project::SourceOrigin::Declared,
            owner: None,
            description: None,
            freshness: Freshness::from_section(Some("6h"), Some("loaded_at"), Some(policy))
                .unwrap(),
            columns: vec![],
            rest: None,
        }
    }

    #[test]
    fn statuses() {
        let now = chrono::DateTime::from_timestamp(1_000_000, 0).unwrap();
        let at = |seconds_ago: i64| Ok(Some((1_000_000 - seconds_ago) * 1_000_000));
        let stale = evaluate(&source("warn"), at(7 * 3600 + 13 * 60), now).unwrap();
        assert_eq!(stale.status, FreshnessStatus::Stale);
        assert_eq!(stale.describe(), "age 7h 13m, required < 6h: STALE");
        assert!(!stale.blocks());
        let fresh = evaluate(&source("block"), at(60), now).unwrap();
        assert_eq!(fresh.status, FreshnessStatus::Fresh);
        assert!(!fresh.blocks());
        let empty = evaluate(&source("block"), Ok(None), now).unwrap();
        assert_eq!(empty.status, FreshnessStatus::Unknown);
        assert!(
            empty.blocks(),
            "block never guesses: unmeasurable is not fresh"
        );
        assert!(evaluate(&source("block"), at(7 * 3600), now)
            .unwrap()
            .blocks());
    }
}
