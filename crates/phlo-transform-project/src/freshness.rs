//! Source freshness requirements (SPEC §34): `[source."x"] freshness = "6h"`,
//! `timestamp_column = "loaded_at"` (optional where the engine knows the source's commit time),
//! `freshness_policy = "warn" | "block"`.

use serde::{Deserialize, Serialize};

/// What a stale source does to a plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FreshnessPolicy {
    /// The plan shows the source as STALE and goes ahead.
    #[default]
    Warn,
    /// Models reading the source are BLOCKED until it is fresh again.
    Block,
}

/// A validated freshness requirement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Freshness {
    /// As written (`6h`).
    pub max_age: String,
    pub max_age_seconds: u64,
    /// The column whose latest value is the data's time; without one, the time of the
    /// source's last commit where the engine knows it (an Iceberg table's current snapshot
    /// on Trino).
    pub timestamp_column: Option<String>,
    pub policy: FreshnessPolicy,
}

impl Freshness {
    /// The requirement `[source."x"]` declares, if any; an incomplete or malformed one is an
    /// error message for a C004 diagnostic.
    pub fn from_section(
        freshness: Option<&str>,
        timestamp_column: Option<&str>,
        policy: Option<&str>,
    ) -> Result<Option<Freshness>, String> {
        let policy = match policy {
            None => FreshnessPolicy::Warn,
            Some("warn") => FreshnessPolicy::Warn,
            Some("block") => FreshnessPolicy::Block,
            Some(other) => {
                return Err(format!(
                    "freshness_policy must be \"warn\" or \"block\", not \"{other}\""
                ))
            }
        };
        match (freshness, timestamp_column) {
            (None, None) => Ok(None),
            (None, Some(_)) => {
                Err("timestamp_column is only used with freshness (e.g. freshness = \"6h\")".into())
            }
            (Some(age), column) => Ok(Some(Freshness {
                max_age: age.to_string(),
                max_age_seconds: parse_duration(age)?,
                timestamp_column: column.map(str::to_string),
                policy,
            })),
        }
    }
}

/// `90s`, `15m`, `6h`, `2d`, `1w` and sums of them (`1h30m`) in seconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a duration (use e.g. 30m, 6h, 2d, 1h30m)");
    let mut total: u64 = 0;
    let mut number = String::new();
    let mut any = false;
    for ch in text.trim().chars() {
        if ch.is_ascii_digit() {
            number.push(ch);
            continue;
        }
        let unit = match ch {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return Err(bad()),
        };
        let n: u64 = number.parse().map_err(|_| bad())?;
        total = total.checked_add(n * unit).ok_or_else(bad)?;
        number.clear();
        any = true;
    }
    if !number.is_empty() || !any || total == 0 {
        return Err(bad());
    }
    Ok(total)
}

/// `7h 13m`, `2d 4h`, `45s`: the two largest units.
pub fn format_age(seconds: u64) -> String {
    let units = [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)];
    let parts: Vec<String> = units
        .iter()
        .scan(seconds, |left, &(name, size)| {
            let n = *left / size;
            *left %= size;
            Some((n, name))
        })
        .skip_while(|(n, _)| *n == 0)
        .take(2)
        .filter(|(n, _)| *n > 0)
        .map(|(n, name)| format!("{n}{name}"))
        .collect();
    if parts.is_empty() {
        "0s".into()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("6h"), Ok(21_600));
        assert_eq!(parse_duration("1h30m"), Ok(5_400));
        assert_eq!(parse_duration("2d"), Ok(172_800));
        assert!(parse_duration("6").is_err());
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("6 hours").is_err());
        assert!(parse_duration("0m").is_err());
        assert_eq!(format_age(7 * 3600 + 13 * 60 + 5), "7h 13m");
        assert_eq!(format_age(45), "45s");
        assert_eq!(format_age(2 * 86_400 + 30), "2d");
    }

    #[test]
    fn requirements() {
        let f = Freshness::from_section(Some("6h"), Some("loaded_at"), Some("block"))
            .unwrap()
            .unwrap();
        assert_eq!(f.max_age_seconds, 21_600);
        assert_eq!(f.policy, FreshnessPolicy::Block);
        // Without a column: the source's commit time, where the engine has one.
        let commit = Freshness::from_section(Some("6h"), None, None)
            .unwrap()
            .unwrap();
        assert_eq!(commit.timestamp_column, None);
        assert!(Freshness::from_section(None, Some("t"), None).is_err());
        assert!(Freshness::from_section(None, None, None).unwrap().is_none());
        assert!(Freshness::from_section(Some("6h"), Some("t"), Some("panic")).is_err());
    }
}
