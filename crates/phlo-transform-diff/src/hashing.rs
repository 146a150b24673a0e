//! Key hashes, and the deterministic row filters built on them (samples, partitions).
//!
//! Keys are hashed with DataFusion's vectorised `create_hashes` under fixed seeds, so a key
//! hashes the same on both sides and in every run of the same build: the sampled strategy
//! keeps the same keys on both sides, and partitions are the same on both sides.

use ahash::RandomState;
use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::common::hash_utils::create_hashes;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;

fn state() -> RandomState {
    RandomState::with_seeds(
        0x7068_6c6f_2d64_6966,
        0x6620_6b65_7920_6861,
        0x7368_2073_6565_6473,
        0x0000_0000_0000_0015,
    )
}

/// One hash per row over `columns` (the key columns, or every column for checksums).
pub fn hash_columns(columns: &[ArrayRef], rows: usize) -> Result<Vec<u64>, Diagnostic> {
    let mut hashes = vec![0u64; rows];
    create_hashes(columns, &state(), &mut hashes).map_err(|e| {
        Diagnostic::error(
            codes::DIFF_INCOMPATIBLE_TYPES,
            format!("cannot hash these columns: {e}"),
        )
        .with_help("diff on key columns of a scalar type, or --exclude the column")
    })?;
    Ok(hashes)
}

/// MurmurHash3's finaliser: bits of the key hash decorrelated from the ones the hash
/// tables use, so filtering on it leaves the tables' buckets evenly filled.
pub fn remix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The partition (key-hash bucket) of a key hash, out of `buckets`.
pub fn bucket(hash: u64, buckets: usize) -> usize {
    (remix(hash ^ 0x5bd1_e995) % buckets as u64) as usize
}

/// Which rows (by key hash) a side keeps.
#[derive(Clone, Debug)]
pub enum RowFilter {
    /// A deterministic fraction of the keys.
    Sample(f64),
    /// The keys whose bucket (out of `wanted.len()`) is marked.
    Buckets(Vec<bool>),
}

impl RowFilter {
    pub fn keeps(&self, hash: u64) -> bool {
        match self {
            RowFilter::Sample(fraction) => {
                ((remix(hash) >> 11) as f64 / (1u64 << 53) as f64) < *fraction
            }
            RowFilter::Buckets(wanted) => wanted[bucket(hash, wanted.len())],
        }
    }

    /// The rows of `batch` whose key (its first `nkeys` columns) the filter keeps.
    pub fn apply(&self, batch: RecordBatch, nkeys: usize) -> Result<RecordBatch, Diagnostic> {
        let hashes = hash_columns(&batch.columns()[..nkeys], batch.num_rows())?;
        let mask: BooleanArray = hashes.iter().map(|h| Some(self.keeps(*h))).collect();
        filter_record_batch(&batch, &mask).map_err(|e| {
            Diagnostic::error(codes::DIFF_UNREADABLE_SIDE, format!("filtering rows: {e}"))
        })
    }
}
