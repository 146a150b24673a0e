//! Model names: the dotted user-facing identity (`assay_ingest.staging.raw_results`) and its
//! `model://` URI form.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The user-facing dotted name of a model, e.g. `assay.results`. Lower-case segments.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelName(String);

impl ModelName {
    pub fn new(name: impl Into<String>) -> Self {
        ModelName(name.into())
    }

    /// Builds a name from its segments (`["assay", "raw"]` → `assay.raw`).
    pub fn from_segments<I, S>(segments: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let parts: Vec<String> = segments
            .into_iter()
            .map(|s| s.as_ref().to_string())
            .collect();
        ModelName(parts.join("."))
    }

    /// Parses `model://a/b/c` or `a.b.c`.
    pub fn parse(text: &str) -> Self {
        match text.strip_prefix("model://") {
            Some(rest) => ModelName(rest.trim_matches('/').replace('/', ".")),
            None => ModelName(text.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('.')
    }

    /// The first segment: the model's namespace.
    pub fn namespace(&self) -> &str {
        self.0.split('.').next().unwrap_or_default()
    }

    /// The last segment (the file stem).
    pub fn last(&self) -> &str {
        self.0.rsplit('.').next().unwrap_or_default()
    }

    /// `model://assay/results`.
    pub fn uri(&self) -> String {
        format!("model://{}", self.0.replace('.', "/"))
    }

    /// True when `suffix` (dotted) equals the last segments of this name.
    pub fn ends_with_segments(&self, suffix: &str) -> bool {
        self.0 == suffix
            || (self.0.len() > suffix.len()
                && self.0.ends_with(suffix)
                && self.0.as_bytes()[self.0.len() - suffix.len() - 1] == b'.')
    }
}

impl fmt::Display for ModelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Longest name segment accepted (bytes).
pub const MAX_SEGMENT_LEN: usize = 128;

/// The one identifier rule every name obeys wherever it enters (namespaces, schemas, model and
/// source names, `@id`, file-derived segments): a segment is 1 to [`MAX_SEGMENT_LEN`] ASCII
/// letters, digits and underscores, not starting with a digit — an unquoted SQL identifier.
/// So a name can never be a path: no `/`, `\`, `.`/`..` segment, drive prefix, NUL or
/// leading `-`. `Err` says what is wrong, for a diagnostic.
pub fn check_segment(segment: &str) -> Result<(), String> {
    if segment.is_empty() {
        return Err("a name segment is empty".to_string());
    }
    if segment.len() > MAX_SEGMENT_LEN {
        return Err(format!(
            "a name segment is longer than {MAX_SEGMENT_LEN} characters"
        ));
    }
    if let Some(bad) = segment
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Err(format!(
            "`{}` is not allowed in a name (only letters, digits and `_`)",
            bad.escape_default()
        ));
    }
    if segment.starts_with(|c: char| c.is_ascii_digit()) {
        return Err("a name segment cannot start with a digit".to_string());
    }
    Ok(())
}

/// [`check_segment`] for every segment of a dotted name (`assay.staging.results`).
pub fn check_name(name: &str) -> Result<(), String> {
    name.split('.').try_for_each(check_segment)
}

/// Up to three candidates close to `wanted`, best first (Jaro-Winkler over the whole name and
/// over its last segment, so `assay.reslts` finds `assay.results`). One edit or swap of two
/// neighbours always counts as close: Jaro-Winkler misses it in short words (`kip` → `kpi`).
pub fn did_you_mean<'a, I>(wanted: &str, candidates: I) -> Vec<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let wanted_last = wanted.rsplit('.').next().unwrap_or(wanted);
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| {
            let last = c.rsplit('.').next().unwrap_or(c);
            let one_edit =
                |a: &str, b: &str| a.chars().count() >= 2 && strsim::osa_distance(a, b) <= 1;
            let similarity =
                strsim::jaro_winkler(wanted, c).max(strsim::jaro_winkler(wanted_last, last));
            // One edit away qualifies, but ranks by similarity like the rest.
            let floor = if one_edit(wanted, c) || one_edit(wanted_last, last) {
                0.8
            } else {
                0.0
            };
            let score = similarity.max(floor);
            (score, c)
        })
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_round_trip() {
        let n = ModelName::new("assay_ingest.staging.raw_results");
        assert_eq!(n.uri(), "model://assay_ingest/staging/raw_results");
        assert_eq!(ModelName::parse(&n.uri()), n);
        assert_eq!(n.namespace(), "assay_ingest");
        assert_eq!(n.last(), "raw_results");
    }

    #[test]
    fn suffix_matches_whole_segments_only() {
        let n = ModelName::new("assay.raw_results");
        assert!(n.ends_with_segments("raw_results"));
        assert!(n.ends_with_segments("assay.raw_results"));
        assert!(!n.ends_with_segments("results"));
    }

    #[test]
    fn a_swapped_pair_in_a_short_word_is_suggested() {
        assert_eq!(did_you_mean("kip", ["kpi", "gold", "qc"]), ["kpi"]);
        assert_eq!(did_you_mean("tag", ["kpi"]), Vec::<String>::new());
    }

    #[test]
    fn names_are_never_paths() {
        for good in ["assay", "_tmp", "a1.b_2.c", "A.b"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "../x", "/abs", "..", ".", "a/b", "a\\b", "", "a..b", "a.", "c:", "-x", "1a", "a b",
            "a\0b", "é",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_segment(&"a".repeat(MAX_SEGMENT_LEN)).is_ok());
        assert!(check_segment(&"a".repeat(MAX_SEGMENT_LEN + 1)).is_err());
    }

    #[test]
    fn suggestions_rank_close_names() {
        let got = did_you_mean("assay.reslts", ["assay.results", "reporting.monthly"]);
        assert_eq!(got, vec!["assay.results".to_string()]);
    }
}
