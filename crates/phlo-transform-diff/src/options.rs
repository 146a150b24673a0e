//! What a diff compares and how: key, column mapping, tolerances, strategy.

use serde::Serialize;
use std::collections::BTreeMap;

/// How the two sides are compared (SPEC §53).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Every row matched on the key and every value compared.
    Full,
    /// Per-partition (key-hash bucket) row counts and checksums on both sides; only the
    /// buckets that differ are compared row by row. Exact, and cheap when little changed.
    Partition,
    /// Per-column count, nulls, min, max, sum and approximate distinct on both sides.
    Aggregate,
    /// The full comparison over a deterministic key-hash sample, identical on both sides.
    Sampled,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Full => "full",
            Strategy::Partition => "partition",
            Strategy::Aggregate => "aggregate",
            Strategy::Sampled => "sampled",
        }
    }

    pub fn parse(text: &str) -> Option<Strategy> {
        Some(match text {
            "full" => Strategy::Full,
            "partition" => Strategy::Partition,
            "aggregate" => Strategy::Aggregate,
            "sampled" | "sample" => Strategy::Sampled,
            _ => return None,
        })
    }

    /// Does the strategy count added/removed/modified records exactly?
    pub fn measures_rows(self) -> bool {
        matches!(self, Strategy::Full | Strategy::Partition)
    }
}

/// Options of one diff. Column names are the base side's unless said otherwise.
#[derive(Clone, Debug)]
pub struct DiffOptions {
    /// Key columns (base names); empty: keyless (counts and aggregates only).
    pub key: Vec<String>,
    /// Candidate column name → base column name, for renamed columns.
    pub column_map: BTreeMap<String, String>,
    /// Base columns left out of the value comparison.
    pub exclude: Vec<String>,
    /// Floats equal when they differ by at most `10^-decimals`; `None`: exact.
    pub decimals: Option<u32>,
    /// Absolute tolerance per numeric column (base name); overrides `decimals`.
    pub tolerances: BTreeMap<String, f64>,
    /// Sample rows kept of each kind (added, removed, modified, duplicate keys).
    pub sample_limit: usize,
    /// Fraction of keys the sampled strategy keeps (0 < f ≤ 1).
    pub sample_fraction: f64,
    /// Key-hash buckets of the partition strategy.
    pub partitions: usize,
    /// Keep every differing row (for `--output`), not only the samples.
    pub keep_differing_rows: bool,
    /// Above this many base rows, the automatic strategy samples instead of comparing in full,
    /// and a keyed full diff of a warehouse table runs in the warehouse (not fetched).
    pub large_table_rows: u64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            key: Vec::new(),
            column_map: BTreeMap::new(),
            exclude: Vec::new(),
            decimals: None,
            tolerances: BTreeMap::new(),
            sample_limit: 10,
            sample_fraction: 0.01,
            partitions: 256,
            keep_differing_rows: false,
            large_table_rows: 1_000_000,
        }
    }
}

impl DiffOptions {
    /// The absolute tolerance of a floating-point column, if any.
    pub fn float_tolerance(&self, column: &str) -> Option<f64> {
        self.tolerances
            .get(column)
            .copied()
            .or_else(|| self.decimals.map(|d| 10f64.powi(-(d as i32))))
    }
}
