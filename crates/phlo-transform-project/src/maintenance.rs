//! `[transform.maintenance]`: how the local engine keeps its Delta tables readable as
//! incremental writes pile up commits and small files. Workspace-wide, one setting per table
//! property, all optional:
//!
//! ```toml
//! [transform.maintenance]
//! compact_every = 10          # OPTIMIZE (compact) a table after every 10 writes
//! vacuum_retention = "7d"     # then VACUUM the files no version younger than 7 days needs
//! checkpoint_interval = 20    # delta.checkpointInterval
//! log_retention = "30d"       # delta.logRetentionDuration
//! ```

use serde::{Deserialize, Deserializer};
use std::time::Duration;

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceSection {
    /// Compact a table after every this many writes of phlo-transform. None: never.
    pub compact_every: Option<u64>,
    /// With `compact_every`, vacuum after compacting, keeping the files versions younger
    /// than this need. None: no vacuum.
    #[serde(default, deserialize_with = "duration")]
    pub vacuum_retention: Option<Duration>,
    /// Commits between checkpoints (`delta.checkpointInterval`). None: delta-rs's 100.
    pub checkpoint_interval: Option<u64>,
    /// How long the log keeps a commit (`delta.logRetentionDuration`). None: 30 days.
    #[serde(default, deserialize_with = "duration")]
    pub log_retention: Option<Duration>,
}

/// `"7d"`, `"12h"`, `"30m"`, `"45s"` (a whole number and one unit).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{text}` has no unit (use d, h, m or s, e.g. \"7d\")"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` does not start with a whole number"))?;
    let seconds = match unit.trim() {
        "d" => n * 86_400,
        "h" => n * 3_600,
        "m" => n * 60,
        "s" => n,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}` (use d, h, m or s)"
            ))
        }
    };
    Ok(Duration::from_secs(seconds))
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(parse_duration("7").is_err());
        assert!(parse_duration("7w").is_err());
        let m: MaintenanceSection =
            toml::from_str("compact_every = 3\nvacuum_retention = \"1h\"").unwrap();
        assert_eq!(m.compact_every, Some(3));
        assert_eq!(m.vacuum_retention, Some(Duration::from_secs(3600)));
    }
}
